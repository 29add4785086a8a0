// Benchmark: a list's page and its total read in one statement (control-plane/src/db/list-page.ts), against the
// two statements it replaced. GET of the do-not-call list (a page of 50 out of 200) three ways, in one run
// against one embedded PostgreSQL:
//   two:      bare Koa, the page and the count as two statements at once on the pool (the reads before)
//   tx:       bare Koa, the same two statements in one read-only REPEATABLE READ transaction (the other way to
//             one snapshot, weighed against the one chosen)
//   one:      bare Koa, the platform's own listNumbers (one statement, the count as its subquery)
//   platform: GET /v1/do-not-call on the platform in its production configuration (bench/http-server.ts)
// The bare ways rotate over several rounds so that drift in the machine's load falls on both.
//   npm run bench:lists   [BENCH_DURATION=5] [BENCH_ROUNDS=6] [BENCH_CONNECTIONS=50]
import path from 'node:path';
import autocannon from 'autocannon';
import { startBenchDatabase } from './support/bench-database.ts';
import { createSql } from '../control-plane/src/db/connect.ts';
import { migrate } from '../control-plane/src/db/migrate.ts';
import { createOrgWithKey } from '../control-plane/src/modules/workspace/orgs.ts';
import { writeResults } from './support/results.ts';
import { startServer } from './support/server-process.ts';
import { percentile } from '../shared/latency.ts';

const duration = Number(process.env.BENCH_DURATION ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 6);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

interface Run {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
}

async function load(url: string, headers: Record<string, string>, seconds: number): Promise<Run> {
  const r = await autocannon({ url, connections, headers, pipelining: 1, duration: seconds });
  if (r.non2xx || r.errors) throw new Error(`${url}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, requests: r['2xx'] };
}

const ROUTES = { two: 'two-reads', tx: 'snapshot-tx', one: 'one-read' } as const;

const median = (xs: number[]) => percentile(xs, 50);

const db = await startBenchDatabase('lists');
try {
  const sql = createSql(db.url, { max: 2 });
  await migrate(sql);
  const org = await createOrgWithKey(sql, 'bench');
  await sql`insert into do_not_call (org_id, phone_number, source)
            select ${org.org_id}, '+1555' || lpad(g::text, 7, '0'), 'api' from generate_series(1, 200) g`;
  await sql.end();

  const runs: Record<'two' | 'tx' | 'one' | 'platform', Run[]> = { two: [], tx: [], one: [], platform: [] };
  const bare = await startServer('bare', db.url, org.org_id, path.join(db.dir, 'bare.log'));
  try {
    const base = `http://127.0.0.1:${bare.port}`;
    // Warm-up of both routes: JIT, the pool's connections, the table in shared buffers.
    await load(`${base}/two-reads/do-not-call`, {}, 2);
    await load(`${base}/one-read/do-not-call`, {}, 2);
    await load(`${base}/snapshot-tx/do-not-call`, {}, 2);
    for (let i = 0; i < rounds; i++) {
      // Rotate which goes first, so none always follows another.
      const ways = ['two', 'tx', 'one'] as const;
      const order = [...ways.slice(i % 3), ...ways.slice(0, i % 3)];
      for (const way of order) runs[way].push(await load(`${base}/${ROUTES[way]}/do-not-call`, {}, duration));
    }
  } finally {
    bare.child.kill('SIGKILL');
  }
  const platform = await startServer('platform', db.url, org.org_id, path.join(db.dir, 'platform.log'));
  try {
    const url = `http://127.0.0.1:${platform.port}/v1/do-not-call?limit=50`;
    const auth = { authorization: `Bearer ${org.api_key}` };
    await load(url, auth, 2);
    for (let i = 0; i < rounds; i++) runs.platform.push(await load(url, auth, duration));
  } finally {
    platform.child.kill('SIGKILL');
  }

  const summary = Object.fromEntries(
    Object.entries(runs).map(([way, rs]) => [way, { rps: median(rs.map((r) => r.rps)), p50_ms: median(rs.map((r) => r.p50)), p99_ms: median(rs.map((r) => r.p99)), requests: rs.reduce((n, r) => n + r.requests, 0) }]),
  ) as Record<keyof typeof runs, { rps: number; p50_ms: number; p99_ms: number; requests: number }>;
  const oneOverTwo = summary.one.rps / summary.two.rps;
  const txOverTwo = summary.tx.rps / summary.two.rps;
  const platformOverOne = summary.platform.rps / summary.one.rps;
  const table = [
    `| Do-not-call list, a page of 50 of 200 (${connections} connections, median of ${rounds} runs of ${duration} s) | req/s | p50 ms | p99 ms | requests |`,
    '|---|---|---|---|---|',
    `| Bare Koa, page and count as two statements at once on the pool (before) | ${summary.two.rps} | ${summary.two.p50_ms} | ${summary.two.p99_ms} | ${summary.two.requests} |`,
    `| Bare Koa, page and count in one read-only REPEATABLE READ transaction | ${summary.tx.rps} | ${summary.tx.p50_ms} | ${summary.tx.p99_ms} | ${summary.tx.requests} |`,
    `| Bare Koa, page and count in one statement (listNumbers) | ${summary.one.rps} | ${summary.one.p50_ms} | ${summary.one.p99_ms} | ${summary.one.requests} |`,
    `| Platform, production config, GET /v1/do-not-call | ${summary.platform.rps} | ${summary.platform.p50_ms} | ${summary.platform.p99_ms} | ${summary.platform.requests} |`,
    '',
    `One statement / two statements: **${(oneOverTwo * 100).toFixed(1)} %** of the throughput; one transaction / two statements: ${(txOverTwo * 100).toFixed(1)} %; platform / bare one statement: ${(platformOverOne * 100).toFixed(1)} %.`,
  ].join('\n');
  process.stdout.write(table + '\n');
  writeResults('list-page', { duration_s: duration, rounds, connections, runs, summary, one_over_two: oneOverTwo, tx_over_two: txOverTwo, platform_over_one: platformOverOne, table });
} finally {
  await db.stop();
}
