// Benchmark: authenticated GET /v1/audit-events on the platform vs. a bare Koa handler running the same SQL,
// in one run, against the same embedded PostgreSQL. Each server runs in its own process; autocannon runs here.
//   npm run bench:http   [BENCH_DURATION=10] [BENCH_CONNECTIONS=50]
import { statSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { startBenchDatabase } from './support/bench-database.ts';
import { createSql } from '../control-plane/src/db/connect.ts';
import { migrate } from '../control-plane/src/db/migrate.ts';
import { createOrgWithKey } from '../control-plane/src/modules/workspace/orgs.ts';
import { writeResults } from './support/results.ts';
import { startServer } from './support/server-process.ts';

const duration = Number(process.env.BENCH_DURATION ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

async function load(port: number, headers: Record<string, string>) {
  const opts = { url: `http://127.0.0.1:${port}/v1/audit-events`, connections, headers, pipelining: 1 };
  await autocannon({ ...opts, duration: 2 }); // warm-up: JIT, connection pools, caches
  const r = await autocannon({ ...opts, duration });
  if (r.non2xx) throw new Error(`${r.non2xx} non-2xx answers`);
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.errors };
}

const db = await startBenchDatabase('http');
const { dir, url } = db;
try {
  const sql = createSql(url, { max: 2 });
  await migrate(sql);
  const org = await createOrgWithKey(sql, 'bench');
  // 200 audit events so the query returns a full page of 50.
  await sql`insert into audit_events (org_id, actor_type, actor_id, action, resource_type, resource_id)
            select ${org.org_id}, 'api_key', 'k', 'agent.update', 'agent', gen_random_uuid()::text from generate_series(1, 200)`;
  await sql.end();

  const results: Record<string, Awaited<ReturnType<typeof load>>> = {};
  const logBytes: Record<string, number> = {};
  for (const mode of ['bare', 'platform']) {
    const logFile = path.join(dir, `${mode}.log`);
    const { child, port } = await startServer(mode, url, org.org_id, logFile);
    try {
      results[mode] = await load(port, mode === 'platform' ? { authorization: `Bearer ${org.api_key}` } : {});
    } finally {
      child.kill('SIGKILL');
    }
    logBytes[mode] = statSync(logFile).size;
  }
  const ratio = results.platform!.rps / results.bare!.rps;
  const table = [
    `| Setup (${connections} connections, ${duration} s) | req/s | p50 ms | p99 ms |`,
    '|---|---|---|---|',
    `| Bare Koa + @koa/router, same SQL | ${results.bare!.rps} | ${results.bare!.p50} | ${results.bare!.p99} |`,
    `| Platform, production config: auth (cached) + rate limiter + validation + request log (info) + metrics + audit list | ${results.platform!.rps} | ${results.platform!.p50} | ${results.platform!.p99} |`,
    '',
    `Platform / bare throughput: **${(ratio * 100).toFixed(1)} %** (target >= 70 %).`,
  ].join('\n');
  process.stdout.write(table + '\n');
  writeResults('http', { duration_s: duration, connections, results, ratio, request_log_bytes: logBytes, table });
} finally {
  await db.stop();
}
