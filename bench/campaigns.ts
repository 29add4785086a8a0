// Campaigns (docs/benchmarks.md, "Campaigns"): a campaign of 10,000 contacts uploaded as CSV, scheduled by the
// real scheduler (pg-boss ticks) and dialled by the real dial job, with the dialler stood in at the SIP edge:
// LiveKit's CreateSIPParticipant answers at once (no LiveKit, SIP bridge or callee), and the call is hung up at
// once by a loop standing for the callee (the call completes, as a worker's report would complete it). Embedded
// PostgreSQL, the control plane in this process. Reports:
//   - the upload (10,000 rows checked and stored);
//   - scheduler throughput: attempts scheduled per second (contacts claimed into calls with their dial jobs) and
//     dial jobs done per second (each call answered and ended), at the highest pacing a campaign may ask for;
//   - pacing accuracy: a second campaign at a set rate, calls started per minute against the rate;
//   - database rows (by table) and bytes per contact, wall and CPU time per contact;
//   - the time to build the export of the 10,000 contacts (GET .../export.csv).
// Usage: node bench/campaigns.ts [--contacts 10000] [--rate 600] [--minutes 5] [--small]
//   (npm run bench:campaigns). --small runs 400 contacts and one minute of pacing, to check the benchmark works,
//   and writes bench/results/campaigns-small.json.


import path from 'node:path';
import { parseArgs } from 'node:util';
import { nearestRank, startBenchDatabase } from './support/bench-database.ts';
import { benchPlatformConfig } from './support/bench-platform.ts';
import { insertBareAgent } from '../test/support/bare-agent.ts';
import { startPlatform } from '../control-plane/src/platform.ts';
import type { LiveKit } from '../control-plane/src/livekit/client.ts';
import { createOrgWithKey } from '../control-plane/src/modules/workspace/orgs.ts';
import { getCallById } from '../control-plane/src/modules/calls/queries.ts';
import { finishCall } from '../control-plane/src/modules/calls/lifecycle.ts';
import { dialQueues } from '../control-plane/src/modules/calls/dial.ts';
import { exportPage } from '../control-plane/src/modules/campaigns/queries.ts';
import { createLogger } from '../shared/logger.ts';
import { writeResults } from './support/results.ts';

const { values: args } = parseArgs({
  options: {
    contacts: { type: 'string' },
    rate: { type: 'string' },
    minutes: { type: 'string' },
    small: { type: 'boolean', default: false },
  },
});
const SMALL = args.small!;
const CONTACTS = Number(args.contacts ?? (SMALL ? 400 : 10_000));
const RATE = Number(args.rate ?? (SMALL ? 120 : 600));
const MINUTES = Number(args.minutes ?? (SMALL ? 1 : 5));
const FROM = '+14155550100';
const MAX_RATE = 60_000;

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const pct = nearestRank;
const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);

/** LiveKit as the dial job sees it, answering every call at once: the dialler stood in at the SIP edge. */
function standInLiveKit(): LiveKit {
  const missing = async () => {
    throw new Error('not found');
  };
  return {
    publicUrl: 'ws://127.0.0.1:9',
    agentName: 'vap-agent',
    rooms: { createRoom: async () => ({}), deleteRoom: async () => {}, getParticipant: missing, listParticipants: async () => [], listRooms: async () => [] },
    dispatch: { listDispatch: async () => [], createDispatch: async () => ({}) },
    sip: { createSipParticipant: async (_trunk: string, _to: string, room: string) => ({ sipCallId: `SCL_${room}` }) },
    webhooks: {},
    participantToken: async () => '',
    roomExists: async () => false,
  } as unknown as LiveKit;
}

const db = await startBenchDatabase('campaigns');
const { dir } = db;
let platform: Awaited<ReturnType<typeof startPlatform>> | null = null;
let hangingUp = true;
try {
  const config = benchPlatformConfig(db, {
    DATA_DIR: path.join(dir, 'data'),
    OUTBOUND_AGENT_WAIT_SECONDS: 0,
    ANALYSIS_MODE: 'off',
    CAMPAIGN_MAX_CONTACTS: Math.max(CONTACTS, RATE * (MINUTES + 1)),
    CAMPAIGN_UPLOAD_MAX_BYTES: 64 * 1024 * 1024,
    CAMPAIGN_MAX_CALLS_PER_MINUTE: MAX_RATE,
  });
  platform = await startPlatform(config, { log: createLogger('bench', 'silent') });
  const services = platform.services;
  (services as { livekit: LiveKit }).livekit = standInLiveKit();
  const sql = services.sql;
  const org = await createOrgWithKey(sql, 'bench');
  await sql`update orgs set max_concurrent_calls = 100000, max_calls_per_day = 10000000, daily_spend_cap_cents = 2000000000 where id = ${org.org_id}`;
  const agentId = await insertBareAgent(sql, org.org_id);
  await sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id) values (${org.org_id}, ${FROM}, 'simulated', ${agentId}, 'ST_bench')`;

  // The callee: every answered call is hung up at once (it completes as the worker's report would complete it).
  const hangUpLoop = (async () => {
    while (hangingUp) {
      const live = await sql<{ id: string }[]>`select id from calls where org_id = ${org.org_id} and status = 'in_progress' limit 500`;
      for (const { id } of live) {
        await sql.begin(async (tx) => {
          const call = await getCallById(tx, id, { lock: true });
          if (call?.status === 'in_progress') await finishCall(tx, services, call, { endReason: 'user_hangup', endedAt: new Date().toISOString(), messages: [] });
        });
      }
      if (!live.length) await new Promise((r) => setTimeout(r, 100));
    }
  })();

  const always = [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }];
  let n = 0;
  const numbers = (count: number) => Array.from({ length: count }, () => `+1555${String(1_000_000 + n++).padStart(7, '0')}`);
  const upload = async (name: string, count: number, pacing: { calls_per_minute: number; max_concurrent: number }) => {
    const csv = ['to_number,customer_name', ...numbers(count).map((num, i) => `${num},Customer ${i}`)].join('\n');
    const form = new FormData();
    form.append('name', name);
    form.append('agent_id', agentId);
    form.append('schedule', JSON.stringify({ windows: always }));
    form.append('pacing', JSON.stringify(pacing));
    form.append('retry', JSON.stringify({ on: [], max_retries: 0 }));
    form.append('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv');
    const t0 = performance.now();
    const res = await fetch(`${platform!.url}/v1/campaigns`, { method: 'POST', headers: { authorization: `Bearer ${org.api_key}` }, body: form });
    const body = (await res.json()) as { id: string; import: { accepted: number } };
    if (res.status !== 201 || body.import.accepted !== count) throw new Error(`upload answered ${res.status}: ${JSON.stringify(body).slice(0, 500)}`);
    return { id: body.id, ms: performance.now() - t0, bytes: csv.length };
  };
  const states = async (id: string) =>
    Object.fromEntries((await sql<{ state: string; n: number }[]>`select state, count(*)::int as n from campaign_contacts where campaign_id = ${id} group by state`).map((r) => [r.state, r.n]));
  const waitFor = async (what: string, fn: () => Promise<boolean>, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await fn())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const tableRows = async () =>
    Object.fromEntries(
      (
        await sql<{ t: string; n: number }[]>`
          select 'campaign_contacts' as t, count(*)::int as n from campaign_contacts
          union all select 'calls', count(*)::int from calls
          union all select 'events', count(*)::int from events
          union all select 'webhook_messages', count(*)::int from webhook_messages
          union all select 'audit_events', count(*)::int from audit_events
          union all select 'pgboss.job (' || name || ')', count(*)::int from pgboss.job group by name`
      ).map((r) => [r.t, r.n]),
    );
  const dbBytes = async () => Number((await sql<{ b: string }[]>`select pg_database_size(current_database())::text as b`)[0]!.b);

  // 0. Baseline, in the same run: bare pg-boss moving N no-op jobs through a queue with the dial queue's options
  // and worker settings (inserted 200 at a time, as ticks insert dial jobs). The dial jobs can go no faster.
  const dialQueue = dialQueues(services)[0]!;
  const NOOP = 'bench.noop';
  await services.boss.createQueue(NOOP, { notify: true, ...dialQueue.options });
  let noopDone = 0;
  await services.boss.work(NOOP, dialQueue.work ?? {}, async (jobs: unknown[]) => {
    noopDone += jobs.length;
  });
  log(`baseline: ${CONTACTS} no-op jobs through bare pg-boss`);
  const b0 = performance.now();
  for (let i = 0; i < CONTACTS; i += 200) await services.boss.insert(NOOP, Array.from({ length: Math.min(200, CONTACTS - i) }, () => ({ data: {} })));
  const noopQueuedMs = performance.now() - b0;
  await waitFor('the no-op jobs', async () => noopDone >= CONTACTS, 60 * 60_000);
  const noopMs = performance.now() - b0;
  await services.boss.offWork(NOOP);
  log(`baseline: ${round(noopMs / 1000)} s`);

  // 1. Throughput: N contacts at the highest pacing, concurrency unbounded in practice.
  log(`throughput: ${CONTACTS} contacts`);
  await sql`vacuum analyze`;
  const rowsBefore = await tableRows();
  const bytesBefore = await dbBytes();
  const cpu0 = process.cpuUsage();
  const big = await upload('throughput', CONTACTS, { calls_per_minute: MAX_RATE, max_concurrent: 5000 });
  log(`uploaded in ${round(big.ms)} ms`);
  const t0 = performance.now();
  let scheduledMs = 0;
  await waitFor(
    'every contact to be scheduled',
    async () => {
      const s = await states(big.id);
      if (!s.pending) scheduledMs = performance.now() - t0;
      return !s.pending;
    },
    60 * 60_000,
  );
  log(`scheduled in ${round(scheduledMs / 1000)} s`);
  await waitFor('the campaign to complete', async () => (await sql`select 1 from campaigns where id = ${big.id} and status = 'completed'`).length > 0, 60 * 60_000);
  const completedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  log(`completed in ${round(completedMs / 1000)} s`);
  const final = await states(big.id);
  // Ticks' dials per second over the run (the calls' created_at is their tick's transaction start).
  const perSecond = await sql<{ n: number }[]>`
    select count(*)::int as n from calls where campaign_id = ${big.id} group by date_trunc('second', created_at) order by 1`;
  await sql`vacuum analyze`;
  const rowsAfter = await tableRows();
  const bytesAfter = await dbBytes();
  const rowsPerContact = Object.fromEntries(
    Object.keys(rowsAfter)
      .map((k) => [k, round((rowsAfter[k]! - (rowsBefore[k] ?? 0)) / CONTACTS, 2)] as const)
      .filter(([, v]) => v > 0),
  );

  // 2. The export of the N contacts, built five times.
  const exportMs: number[] = [];
  let exportBytes = 0;
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    const res = await fetch(`${platform.url}/v1/campaigns/${big.id}/export.csv`, { headers: { authorization: `Bearer ${org.api_key}` } });
    const text = await res.text();
    exportMs.push(performance.now() - t);
    exportBytes = text.length;
    if (res.status !== 200 || text.trimEnd().split('\r\n').length !== CONTACTS + 1) throw new Error(`export answered ${res.status} with ${text.length} bytes`);
  }
  log(`export p50 ${round(pct(exportMs, 50))} ms`);
  // Its floor: the raw database reading the same rows in one query, with no paging and no CSV.
  const rawExportMs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    const rows = await exportPage(sql, big.id, null, CONTACTS + 1);
    rawExportMs.push(performance.now() - t);
    if (rows.length !== CONTACTS) throw new Error(`the raw export read ${rows.length} rows`);
  }

  // 3. Pacing: RATE calls a minute for MINUTES minutes (more contacts than that, so it never runs dry).
  log(`pacing: ${RATE}/min for ${MINUTES} min`);
  const paced = await upload('pacing', RATE * (MINUTES + 1), { calls_per_minute: RATE, max_concurrent: 5000 });
  const p0 = Date.now();
  await new Promise((r) => setTimeout(r, MINUTES * 60_000 + 5000));
  await sql`update campaigns set status = 'paused', pause_reason = 'manual' where id = ${paced.id}`;
  const starts = (await sql<{ t: Date }[]>`select created_at as t from calls where campaign_id = ${paced.id} order by created_at`).map((r) => r.t.getTime());
  const first = starts[0] ?? p0;
  const perMinute = Array.from({ length: MINUTES }, (_, m) => starts.filter((t) => t >= first + m * 60_000 && t < first + (m + 1) * 60_000).length);
  const gaps = starts.slice(1).map((t, i) => t - starts[i]!).filter((g) => g > 0);

  hangingUp = false;
  await hangUpLoop;

  const results = {
    contacts: CONTACTS,
    upload: { rows: CONTACTS, csv_bytes: big.bytes, ms: round(big.ms) },
    baseline_bare_pgboss: {
      jobs: CONTACTS,
      inserted_seconds: round(noopQueuedMs / 1000, 2),
      completed_seconds: round(noopMs / 1000, 2),
      jobs_per_second: round(CONTACTS / (noopMs / 1000)),
    },
    throughput: {
      pacing_calls_per_minute: MAX_RATE,
      scheduled_seconds: round(scheduledMs / 1000, 2),
      scheduled_per_second: round(CONTACTS / (scheduledMs / 1000)),
      completed_seconds: round(completedMs / 1000, 2),
      dial_jobs_per_second: round(CONTACTS / (completedMs / 1000)),
      busiest_second: Math.max(...perSecond.map((r) => r.n)),
      final_states: final,
      wall_ms_per_contact: round(completedMs / CONTACTS, 2),
      cpu_ms_per_contact: round((cpu.user + cpu.system) / 1000 / CONTACTS, 2),
    },
    database: { rows_per_contact: rowsPerContact, bytes_per_contact: Math.round((bytesAfter - bytesBefore) / CONTACTS) },
    export: {
      contacts: CONTACTS,
      bytes: exportBytes,
      samples: exportMs.length,
      p50_ms: round(pct(exportMs, 50)),
      max_ms: round(Math.max(...exportMs)),
      raw_database_p50_ms: round(pct(rawExportMs, 50)),
      raw_database_max_ms: round(Math.max(...rawExportMs)),
    },
    pacing: {
      set_per_minute: RATE,
      minutes: perMinute.map((achieved, m) => ({ minute: m + 1, achieved, error_pct: round(((achieved - RATE) / RATE) * 100, 2) })),
      gap_ms: { samples: gaps.length, p50: round(pct(gaps, 50)), p95: round(pct(gaps, 95)), expected: round(60_000 / RATE) },
    },
  };
  console.log(JSON.stringify(results, null, 2));
  writeResults(SMALL ? 'campaigns-small' : 'campaigns', { results });
} finally {
  hangingUp = false;
  await platform?.close();
  await db.stop();
}
