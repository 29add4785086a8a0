// Benchmark: GET /v1/calls, the console's calls list, for an organisation with 1M calls, against the same SQL
// run bare (calls/queries.ts listCalls on the same pool: no HTTP, auth, validation, call views or JSON), in one
// run against one embedded PostgreSQL. The console's typical queries: the first page, by status, agent, date
// range, outcome, phone number, words of the transcript (a common one and a rare one), and a deep page.
// Requests are sequential and interleaved (endpoint, bare, next query...), so both see the same cache and load.
//   npm run bench:calls-list   [BENCH_CALLS=1000000] [BENCH_SAMPLES=120]
// BENCH_KEEP=1 seeds, prints the database URL and waits (for EXPLAIN ANALYZE by hand) instead of measuring.


import path from 'node:path';
import { nearestRank, startBenchDatabase } from './support/bench-database.ts';
import { createSql } from '../control-plane/src/db/connect.ts';
import { migrate } from '../control-plane/src/db/migrate.ts';
import { loadConfig } from '../control-plane/src/config.ts';
import { startPlatform } from '../control-plane/src/platform.ts';
import { createOrgWithKey } from '../control-plane/src/modules/workspace/orgs.ts';
import { listCalls, type CallFilter } from '../control-plane/src/modules/calls/queries.ts';
import { CALL_COUNT_CAP } from '../schemas/calls.ts';
import { createLogger } from '../shared/logger.ts';
import { writeResults } from './support/results.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 1_000_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 120);
const WARMUP = 10;
const TARGET_P95_MS = 50;

const pct = nearestRank;
const stats = (xs: number[]) => ({ p50_ms: pct(xs, 50), p95_ms: pct(xs, 95), p99_ms: pct(xs, 99), samples: xs.length });

const db = await startBenchDatabase('calls-list');
const { dir, url } = db;
try {
  const sql = createSql(url, { max: 10 });
  await migrate(sql);
  const org = await createOrgWithKey(sql, 'bench');
  const noise = await createOrgWithKey(sql, 'neighbour');
  const t0 = performance.now();

  const agentsOf = async (orgId: string, n: number) => {
    const [model] =
      await sql`insert into llm_models (org_id, name, provider, model, temperature) values (${orgId}, 'm', 'openai', 'gpt-4o-mini', 0.7) returning id`;
    const rows = await sql<{ id: string }[]>`
      insert into agents (org_id, name, llm_id, transcriber, tts)
      select ${orgId}, 'agent ' || i, ${model!.id}, '{}', '{}' from generate_series(1, ${n}) i returning id`;
    return rows.map((r) => r.id);
  };
  const numbersOf = async (orgId: string, agentId: string, prefix: string, n: number) => {
    const rows = await sql<{ id: string; phone_number: string }[]>`
      insert into phone_numbers (org_id, phone_number, provider, agent_id)
      select ${orgId}, ${prefix} || lpad(i::text, 4, '0'), 'simulated', ${agentId} from generate_series(1, ${n}) i
      returning id, phone_number`;
    return rows;
  };
  const agents = await agentsOf(org.org_id, 10);
  const numbers = await numbersOf(org.org_id, agents[0]!, '+1415555', 20);
  const nagents = await agentsOf(noise.org_id, 2);
  const nnumbers = await numbersOf(noise.org_id, nagents[0]!, '+1212555', 4);

  // Bulk load: the calls indexes are dropped and rebuilt after (a build is much faster than 1.1M inserts into
  // nine indexes), and the per-row counter trigger is skipped and its counts set in one go, as the migration's
  // backfill does. The requests measured below read the same tables and indexes either way.
  const indexes = await sql<{ indexname: string; indexdef: string }[]>`
    select indexname, indexdef from pg_indexes where tablename = 'calls' and indexname <> 'calls_pkey'`;
  for (const ix of indexes) await sql.unsafe(`drop index ${ix.indexname}`);
  await sql`alter table calls disable trigger calls_count_insert`;
  // A year of calls: half inbound (to one of the org's 20 numbers), 30 % outbound (from one), 20 % web; 85 %
  // completed, 10 % failed; 60 % with an outcome; 30 % with a three-message transcript, in which "refund" is in
  // one of six and "chargeback" in about one of a thousand.
  const seed = async (orgId: string, agentIds: string[], nums: string[], n: number) => {
    for (let done = 0; done < n; done += 100_000) {
      const batch = Math.min(100_000, n - done);
      await sql`
        insert into calls (org_id, agent_id, type, direction, status, to_number, from_number, outcome, end_reason,
                           duration_seconds, messages, analysis_status, created_at)
        select ${orgId}, (${agentIds}::uuid[])[1 + (i * 13) % ${agentIds.length}], t.type, case when t.type = 'web' then null else t.type end,
               case when s < 85 then 'completed' when s < 95 then 'failed' when s < 98 then 'in_progress' when s < 99 then 'queued' else 'initiated' end,
               case t.type when 'inbound' then (${nums}::text[])[1 + (i / 10) % ${nums.length}] when 'outbound' then '+1646' || lpad((i % 10000000)::text, 7, '0') end,
               case t.type when 'inbound' then '+1917' || lpad((i % 10000000)::text, 7, '0') when 'outbound' then (${nums}::text[])[1 + (i / 10 + 7) % ${nums.length}] end,
               (array[null, null, null, null, null, null, null, null, 'appointment_booked', 'appointment_booked', 'appointment_booked',
                      'appointment_booked', 'callback_requested', 'callback_requested', 'callback_requested', 'not_interested',
                      'not_interested', 'voicemail', 'transferred', 'refund_issued'])[1 + (i * 31) % 20],
               (array['caller_hangup', 'agent_hangup', 'silence_timeout', 'max_duration'])[1 + i % 4],
               30 + (i * 7) % 600,
               case when (i / 10) % 10 < 3 then jsonb_build_array(
                 jsonb_build_object('role', 'agent', 'content', 'Hello, thanks for calling Acme, how can I help you today?'),
                 jsonb_build_object('role', 'user', 'content',
                   (array['I need to reschedule my appointment for next week', 'I would like a refund for my last order',
                          'Can you check the status of my delivery', 'I want to cancel my subscription',
                          'My invoice looks wrong this month', 'Please update my billing address'])[1 + (i * 7) % 6]
                   || case when i % 997 = 0 then ', and I filed a chargeback with my bank' else '' end),
                 jsonb_build_object('role', 'agent', 'content', 'Of course, let me look into that for you right away.'))
               end,
               'completed',
               now() - (i * interval '365 days' / ${n}::int)
        from generate_series(${done + 1}::int, ${done + batch}::int) i,
             lateral (select (array['inbound', 'inbound', 'inbound', 'inbound', 'inbound', 'outbound', 'outbound', 'outbound', 'web', 'web'])[1 + i % 10] as type) t,
             lateral (select (i * 17) % 100 as s) st`;
    }
  };
  await seed(
    org.org_id,
    agents,
    numbers.map((x) => x.phone_number),
    CALLS,
  );
  await seed(
    noise.org_id,
    nagents,
    nnumbers.map((x) => x.phone_number),
    Math.round(CALLS / 10),
  );
  await sql`alter table calls enable trigger calls_count_insert`;
  await sql`insert into org_call_counts (org_id, calls) select org_id, count(*) from calls group by org_id
            on conflict (org_id) do update set calls = excluded.calls`;
  for (const ix of indexes) await sql.unsafe(ix.indexdef);
  await sql`vacuum analyze`;
  const seedSeconds = Math.round((performance.now() - t0) / 1000);
  if (process.env.BENCH_KEEP) {
    process.stdout.write(`seeded in ${seedSeconds} s: ${url} org ${org.org_id}\n`);
    await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  }

  if (!process.env.BENCH_KEEP) await measure();
  await sql.end();

  async function measure() {
    const config = loadConfig(
      {},
      {
        DATABASE_URL: url,
        PORT: 0,
        METRICS_PORT: 0,
        LOG_LEVEL: 'silent',
        RATE_LIMIT_PER_SECOND: 0,
        JOBS_ENABLED: false,
        NODE_ENV: 'test',
        DATA_DIR: path.join(dir, 'data'),
      },
    );
    const platform = await startPlatform(config, { log: createLogger('bench', 'silent') });
    const headers = { authorization: `Bearer ${org.api_key}` };

    const weekAgo = new Date(Date.now() - 7 * 86_400_000).toISOString();
    const sixDaysAgo = new Date(Date.now() - 6 * 86_400_000).toISOString();
    // The console's queries: [name, query string, the same filter for listCalls].
    const QUERIES: [string, Record<string, string>][] = [
      ['first page', {}],
      ['status=failed', { status: 'failed' }],
      ['agent_id', { agent_id: agents[3]! }],
      ['date range (one day, a week ago)', { created_after: weekAgo, created_before: sixDaysAgo }],
      ['outcome=refund_issued', { outcome: 'refund_issued' }],
      ['phone_number_id', { phone_number_id: numbers[7]!.id }],
      ['q=refund (common word)', { q: 'refund' }],
      ['q=chargeback (rare word)', { q: 'chargeback' }],
      ['deep page (offset 10,000)', { offset: '10000' }],
    ];
    const filterOf = (q: Record<string, string>): CallFilter => ({
      orgId: org.org_id,
      agentId: q.agent_id,
      status: q.status,
      createdAfter: q.created_after,
      createdBefore: q.created_before,
      outcome: q.outcome,
      phoneNumberId: q.phone_number_id,
      q: q.q,
      limit: 50,
      offset: Number(q.offset ?? 0),
    });
    const endpoint = async (q: Record<string, string>) => {
      const res = await fetch(`${platform.url}/v1/calls?${new URLSearchParams(q).toString()}`, { headers });
      if (res.status !== 200) throw new Error(`GET /v1/calls answered ${res.status}: ${await res.text()}`);
      return { body: (await res.json()) as { items: unknown[]; total: number }, exact: res.headers.get('total-exact') };
    };
    const bare = (q: Record<string, string>) => listCalls(sql, filterOf(q), CALL_COUNT_CAP);

    // What each query answers, and the indexes its page uses (the plan of the handler's statement).
    const shape: Record<string, { items: number; total: number; total_exact: boolean }> = {};
    for (const [name, q] of QUERIES) {
      const { body, exact } = await endpoint(q);
      shape[name] = { items: body.items.length, total: body.total, total_exact: exact === 'true' };
      if (body.items.length === 0) throw new Error(`${name}: no calls; the seed does not fit the query`);
    }
    for (let i = 0; i < WARMUP; i++) for (const [, q] of QUERIES) await Promise.all([endpoint(q), bare(q)]);

    const times: Record<string, { endpoint: number[]; bare: number[] }> = Object.fromEntries(QUERIES.map(([n]) => [n, { endpoint: [], bare: [] }]));
    for (let i = 0; i < SAMPLES; i++) {
      for (const [name, q] of QUERIES) {
        let t = performance.now();
        await endpoint(q);
        times[name]!.endpoint.push(performance.now() - t);
        t = performance.now();
        await bare(q);
        times[name]!.bare.push(performance.now() - t);
      }
    }
    await platform.close();

    const results = Object.fromEntries(
      QUERIES.map(([name, q]) => [
        name,
        { query: new URLSearchParams(q).toString() || '(none)', ...shape[name]!, endpoint: stats(times[name]!.endpoint), bare_sql: stats(times[name]!.bare) },
      ]),
    );
    const lines = [
      `| ${CALLS.toLocaleString('en')} calls, ${SAMPLES} requests each | total | endpoint p50 / p95 / p99 ms | bare SQL p50 / p95 / p99 ms |`,
      '|---|---|---|---|',
      ...Object.entries(results).map(
        ([name, r]) =>
          `| ${name} | ${r.total.toLocaleString('en')}${r.total_exact ? '' : ' (estimate)'} | ${r.endpoint.p50_ms} / ${r.endpoint.p95_ms} / ${r.endpoint.p99_ms} | ${r.bare_sql.p50_ms} / ${r.bare_sql.p95_ms} / ${r.bare_sql.p99_ms} |`,
      ),
    ];
    process.stdout.write(lines.join('\n') + '\n');
    const missed = Object.entries(results)
      .filter(([, r]) => r.endpoint.p95_ms >= TARGET_P95_MS)
      .map(([n]) => n);
    process.stdout.write(missed.length ? `p95 at or over ${TARGET_P95_MS} ms: ${missed.join(', ')}\n` : `every p95 under ${TARGET_P95_MS} ms\n`);
    writeResults('calls-list', {
      calls: CALLS,
      neighbour_calls: Math.round(CALLS / 10),
      limit: 50,
      count_cap: CALL_COUNT_CAP,
      seed_seconds: seedSeconds,
      target_p95_ms: TARGET_P95_MS,
      results,
    });
  }
} finally {
  await db.stop();
}
