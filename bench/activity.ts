// Benchmark: GET /v1/activity/summary for an organisation with 1M calls, against the same aggregate SQL run
// bare (the five queries of activity/queries.ts on the same pool, no HTTP, auth, validation or JSON), in one
// run against one embedded PostgreSQL. Requests are sequential and interleaved (endpoint, bare, endpoint...),
// so both see the same cache and machine load.
//   npm run bench:activity   [BENCH_CALLS=1000000] [BENCH_SAMPLES=150]
import { mkdirSync, writeFileSync } from 'node:fs';
import { execSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { nearestRank, startBenchDatabase } from './support/bench-database.ts';
import { createSql } from '../control-plane/src/db/connect.ts';
import { migrate } from '../control-plane/src/db/migrate.ts';
import { loadConfig } from '../control-plane/src/config.ts';
import { startPlatform } from '../control-plane/src/platform.ts';
import { createOrgWithKey } from '../control-plane/src/modules/workspace/orgs.ts';
import { createLogger } from '../shared/logger.ts';
import { auditActions, callGroups, erroredSources, orgRow, resourceCounts, webhookSignals } from '../control-plane/src/modules/activity/queries.ts';
import { insertBareAgent } from '../test/support/bare-agent.ts';


const CALLS = Number(process.env.BENCH_CALLS ?? 1_000_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 150);
const WARMUP = 10;

const pct = nearestRank;

const db = await startBenchDatabase('activity');
const { dir, url } = db;
try {
  const sql = createSql(url, { max: 10 });
  await migrate(sql);
  const org = await createOrgWithKey(sql, 'bench');
  const noise = await createOrgWithKey(sql, 'neighbour');
  const t0 = performance.now();
  const agentId = await insertBareAgent(sql, org.org_id);
  const noiseAgentId = await insertBareAgent(sql, noise.org_id);
  // 1M calls spread over a year (about 82k in the default 30-day window), plus a neighbour with 10 % as many.
  const seed = async (orgId: string, agentId: string, n: number) => {
    for (let done = 0; done < n; done += 100_000) {
      const batch = Math.min(100_000, n - done);
      await sql`
        insert into calls (org_id, agent_id, type, status, end_reason, outcome, analysis_status, duration_seconds, created_at)
        select ${orgId}, ${agentId}, 'web',
               (array['completed','completed','completed','failed','in_progress'])[1 + i % 5],
               (array['api_stop','caller_hangup','silence_timeout','max_duration'])[1 + i % 4],
               (array['booked','no_answer','callback',null])[1 + i % 4],
               (array['completed','completed','failed','skipped'])[1 + i % 4],
               60 + i % 300,
               now() - (i * interval '365 days' / ${n}::int)
        from generate_series(${done + 1}::int, ${done + batch}::int) i`;
    }
  };
  // Seeding skips the per-row counter trigger (1.1M single-row upserts) and sets the counts in one go, as
  // the migration's backfill does; the requests measured below read the same table either way.
  await sql`alter table calls disable trigger calls_count_insert`;
  await seed(org.org_id, agentId, CALLS);
  await seed(noise.org_id, noiseAgentId, Math.round(CALLS / 10));
  await sql`alter table calls enable trigger calls_count_insert`;
  await sql`insert into org_call_counts (org_id, calls) select org_id, count(*) from calls group by org_id
            on conflict (org_id) do update set calls = excluded.calls`;
  await sql`insert into audit_events (org_id, actor_type, actor_id, action, resource_type, resource_id, created_at)
            select ${org.org_id}, 'api_key', 'k', (array['agent.update','call.update','webhook.update','tool.create'])[1 + i % 4],
                   split_part((array['agent.update','call.update','webhook.update','tool.create'])[1 + i % 4], '.', 1), gen_random_uuid()::text,
                   now() - (i * interval '90 days' / 50000)
            from generate_series(1, 50000) i`;
  const [hook] = await sql`insert into webhooks (org_id, name, url) values (${org.org_id}, 'h', 'https://hooks.example.com/x') returning id`;
  await sql`insert into webhook_deliveries (org_id, webhook_id, event_id, event, url, status, attempt, duration_ms, completed_at, created_at)
            select ${org.org_id}, ${hook!.id}, gen_random_uuid(), 'call.ended', 'https://hooks.example.com/x',
                   (array['succeeded','succeeded','succeeded','retrying','failed'])[1 + i % 5], 1, 20, now(), now() - (i * interval '30 days' / 100000)
            from generate_series(1, 100000) i`;
  await sql`vacuum analyze`;
  const seedSeconds = Math.round((performance.now() - t0) / 1000);

  const config = loadConfig({}, { DATABASE_URL: url, PORT: 0, METRICS_PORT: 0, LOG_LEVEL: 'silent', RATE_LIMIT_PER_SECOND: 0, JOBS_ENABLED: false, NODE_ENV: 'test', DATA_DIR: path.join(dir, 'data') });
  const platform = await startPlatform(config, { log: createLogger('bench', 'silent') });
  const headers = { authorization: `Bearer ${org.api_key}` };
  const endpoint = async () => {
    const res = await fetch(`${platform.url}/v1/activity/summary`, { headers });
    if (res.status !== 200) throw new Error(`summary answered ${res.status}`);
    return res.json();
  };
  const w = { until: new Date(), since: new Date(Date.now() - 30 * 86_400_000) };
  const bare = () =>
    Promise.all([orgRow(sql, org.org_id), resourceCounts(sql, org.org_id), auditActions(sql, org.org_id, w), callGroups(sql, org.org_id, w), webhookSignals(sql, org.org_id, w), erroredSources(sql, org.org_id)]);

  const check = (await endpoint()) as { resource_counts: { calls: number }; call_summary: { total: number } };
  if (check.resource_counts.calls !== CALLS) throw new Error(`expected ${CALLS} calls, got ${check.resource_counts.calls}`);
  for (let i = 0; i < WARMUP; i++) {
    await endpoint();
    await bare();
  }
  const times = { endpoint: [] as number[], bare: [] as number[] };
  for (let i = 0; i < SAMPLES; i++) {
    let t = performance.now();
    await endpoint();
    times.endpoint.push(performance.now() - t);
    t = performance.now();
    await bare();
    times.bare.push(performance.now() - t);
  }
  await platform.close();
  await sql.end();

  const stats = (xs: number[]) => ({ p50_ms: pct(xs, 50), p95_ms: pct(xs, 95), samples: xs.length });
  const results = { endpoint: stats(times.endpoint), bare_sql: stats(times.bare) };
  const commit = execSync('git rev-parse HEAD').toString().trim();
  const machine = { cores: cpus().length, cpu: cpus()[0]?.model, load_average: loadavg().map((l) => Math.round(l * 100) / 100) };
  const table = [
    `| ${CALLS.toLocaleString('en')} calls (${check.call_summary.total.toLocaleString('en')} in the 30-day window), ${SAMPLES} sequential requests | p50 ms | p95 ms |`,
    '|---|---|---|',
    `| Same SQL, bare (5 queries in parallel on the pool) | ${results.bare_sql.p50_ms} | ${results.bare_sql.p95_ms} |`,
    `| GET /v1/activity/summary (auth, validation, JSON) | ${results.endpoint.p50_ms} | ${results.endpoint.p95_ms} |`,
  ].join('\n');
  process.stdout.write(table + '\n');
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(
    'bench/results/activity.json',
    JSON.stringify({ at: new Date().toISOString(), commit, machine, command: 'npm run bench:activity', calls: CALLS, window_calls: check.call_summary.total, seed_seconds: seedSeconds, results }, null, 2) + '\n',
  );
} finally {
  await db.stop();
}
