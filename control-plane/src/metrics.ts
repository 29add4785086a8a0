// Prometheus metrics of the control plane, served on their own port (METRICS_PORT) so they never sit
// on the public API listener.
import http from 'node:http';
import client from 'prom-client';
import type { Sql } from 'postgres';
import type { Logger } from '../../shared/logger.ts';

export class Metrics {
  readonly registry = new client.Registry();
  readonly httpDuration: client.Histogram<'route' | 'method' | 'status'>;
  private collectors: (() => Promise<void>)[] = [];

  constructor() {
    client.collectDefaultMetrics({ register: this.registry, prefix: 'vap_cp_' });
    this.httpDuration = new client.Histogram({
      name: 'vap_http_request_duration_seconds',
      help: 'HTTP request duration by route template, method and status',
      labelNames: ['route', 'method', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
  }

  /** Database figures, read at scrape time. postgres.js keeps no pool statistics, so ask the server. */
  watchDatabase(sql: Sql, poolMax: number): void {
    new client.Gauge({ name: 'vap_db_pool_max', help: 'Configured maximum connections of this process', registers: [this.registry] }).set(poolMax);
    const conns = new client.Gauge({
      name: 'vap_db_connections',
      help: 'Connections of all control-plane processes by state (pg_stat_activity)',
      labelNames: ['state'],
      registers: [this.registry],
    });
    this.collectors.push(async () => {
      const rows = await sql<{ state: string | null; n: number }[]>`
        select coalesce(state, 'unknown') as state, count(*)::int as n
        from pg_stat_activity where application_name = 'vap-control-plane' group by 1`;
      conns.reset();
      for (const r of rows) conns.set({ state: r.state ?? 'unknown' }, r.n);
    });
  }

  /** Extra gauges that need I/O at scrape time (queue depths, for one). */
  addCollector(fn: () => Promise<void>): void {
    this.collectors.push(fn);
  }

  async render(): Promise<string> {
    await Promise.allSettled(this.collectors.map((fn) => fn()));
    return this.registry.metrics();
  }

  listen(host: string, port: number, log: Logger): Promise<http.Server> {
    const server = http.createServer((req, res) => {
      if (req.url !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      this.render().then(
        (body) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(body),
        (err: unknown) => {
          log.error({ err }, 'metrics render failed');
          res.writeHead(500).end();
        },
      );
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve(server));
    });
  }
}
