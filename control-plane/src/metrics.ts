// Prometheus metrics of the control plane, served on their own port (METRICS_PORT) so they never sit
// on the public API listener.
import http from 'node:http';
import client from 'prom-client';
import type { Sql } from 'postgres';
import type { Logger } from '../../shared/logger.ts';

// --- Operations metrics (calls, SIP, job and webhook backlogs) ---------------------------------------------
// Counters the call lifecycle increments wherever a call ends (lifecycle.ts has only a database handle, so
// they live at module level and every Metrics registry exposes them).
export const callCounters = {
  ended: new client.Counter({
    name: 'vap_calls_ended_total',
    help: 'Calls that reached a final status, by type (web, inbound, outbound), status (completed, failed) and end reason',
    labelNames: ['type', 'status', 'end_reason'],
    registers: [],
  }),
  sip: new client.Counter({
    name: 'vap_sip_calls_total',
    help: 'Phone (SIP) calls that ended, by direction (inbound, outbound) and result (completed, failed)',
    labelNames: ['direction', 'result'],
    registers: [],
  }),
  sipFailures: new client.Counter({
    name: 'vap_sip_call_failures_total',
    help: 'Phone (SIP) calls that failed before connecting, by direction and reason (the call end_reason)',
    labelNames: ['direction', 'reason'],
    registers: [],
  }),
};

/** Called by the call lifecycle when a call reaches `completed` or `failed`. */
export function recordCallEnded(call: { type: string; status: string; end_reason: string | null }): void {
  const reason = call.end_reason ?? 'unknown';
  callCounters.ended.inc({ type: call.type, status: call.status, end_reason: reason });
  if (call.type === 'inbound' || call.type === 'outbound') {
    callCounters.sip.inc({ direction: call.type, result: call.status });
    if (call.status === 'failed') callCounters.sipFailures.inc({ direction: call.type, reason });
  }
}

/** Grace past an agent's max_duration_seconds before an in-progress call counts as stuck. */
export const STUCK_CALL_GRACE_SECONDS = 300;

export class Metrics {
  readonly registry = new client.Registry();
  readonly httpDuration: client.Histogram<'route' | 'method' | 'status'>;
  /** 429 answers by `reason` (auth_failures, org_rate_limit, web_calls_per_ip, publishable_concurrency, ...). */
  readonly refusals: client.Counter<'reason'>;
  /** Listen streams open on this process (modules/calls/listen-stream.ts). */
  readonly listenStreams: client.Gauge;
  /** Listen stream frames not sent because the client read too slowly, and the streams that ended how. */
  readonly listenStreamDropped: client.Counter;
  readonly listenStreamEnds: client.Counter<'reason'>;
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
    this.refusals = new client.Counter({
      name: 'vap_http_rate_limited_total',
      help: 'Requests answered 429, by reason (rate_limit: the per-credential bucket)',
      labelNames: ['reason'],
      registers: [this.registry],
    });
    this.listenStreams = new client.Gauge({
      name: 'vap_listen_streams',
      help: 'Listen streams (PCM WebSockets of live calls) open on this process',
      registers: [this.registry],
    });
    this.listenStreamDropped = new client.Counter({
      name: 'vap_listen_stream_frames_dropped_total',
      help: 'Listen stream frames dropped because the client did not read fast enough (its send buffer was full)',
      registers: [this.registry],
    });
    this.listenStreamEnds = new client.Counter({
      name: 'vap_listen_stream_ends_total',
      help: 'Listen streams that ended, by reason (call_ended, client_closed, time_limit, too_slow, protocol_error, shutdown, error)',
      labelNames: ['reason'],
      registers: [this.registry],
    });
    const counters: client.Metric[] = Object.values(callCounters);
    for (const c of counters) this.registry.registerMetric(c);
  }

  /**
   * Backlogs read from the database at scrape time: the same figures on every replica (graph them with max()),
   * right after a restart, and with no bookkeeping on the hot paths.
   */
  watchOperations(sql: Sql): void {
    const g = (name: string, help: string, labelNames: string[] = []) => new client.Gauge({ name, help, labelNames, registers: [this.registry] });
    const jobAge = g('vap_jobs_oldest_age_seconds', 'Age of the oldest job ready to run and not yet started, by queue (0 when none)', ['queue']);
    const webhookDue = g('vap_webhook_messages_due', 'Webhook messages due for delivery and not yet sent');
    const webhookLag = g('vap_webhook_oldest_due_age_seconds', 'How long the oldest due webhook message has waited past its attempt time (delivery lag)');
    const webhooksDisabled = g('vap_webhooks_disabled', 'Webhook endpoints disabled after failing for WEBHOOK_DISABLE_AFTER_HOURS');
    const callsCurrent = g('vap_calls_current', 'Calls not yet final, by type and status', ['type', 'status']);
    const callsStuck = g('vap_calls_stuck', `In-progress calls older than their agent's max duration plus ${STUCK_CALL_GRACE_SECONDS} s`, ['type']);
    this.collectors.push(async () => {
      const rows = await sql<{ name: string; age: number }[]>`
        select name, coalesce(extract(epoch from now() - min(start_after)) filter (where start_after <= now()), 0)::float8 as age
        from pgboss.job where state in ('created', 'retry') group by name`;
      jobAge.reset();
      for (const r of rows) jobAge.set({ queue: r.name }, Math.max(0, r.age));
    });
    this.collectors.push(async () => {
      const [w] = await sql<{ due: number; lag: number; disabled: number }[]>`
        select (select count(*)::int from webhook_messages where status = 'pending' and next_attempt_at <= now()) as due,
               (select coalesce(extract(epoch from now() - min(next_attempt_at)), 0)::float8 from webhook_messages
                 where status = 'pending' and next_attempt_at <= now()) as lag,
               (select count(*)::int from webhooks where disabled_at is not null) as disabled`;
      webhookDue.set(w!.due);
      webhookLag.set(Math.max(0, w!.lag));
      webhooksDisabled.set(w!.disabled);
    });
    this.collectors.push(async () => {
      const rows = await sql<{ type: string; status: string; n: number; stuck: number }[]>`
        select c.type, c.status, count(*)::int as n,
               count(*) filter (where c.status = 'in_progress' and c.started_at
                 < now() - make_interval(secs => coalesce(a.max_duration_seconds, 1800) + ${STUCK_CALL_GRACE_SECONDS}))::int as stuck
        from calls c left join agents a on a.id = c.agent_id
        where c.status in ('queued', 'initiated', 'in_progress') group by 1, 2`;
      callsCurrent.reset();
      callsStuck.reset();
      for (const t of ['web', 'inbound', 'outbound']) {
        callsStuck.set({ type: t }, 0);
        for (const st of ['queued', 'initiated', 'in_progress']) callsCurrent.set({ type: t, status: st }, 0);
      }
      for (const r of rows) {
        callsCurrent.set({ type: r.type, status: r.status }, r.n);
        if (r.stuck) callsStuck.inc({ type: r.type }, r.stuck);
      }
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
