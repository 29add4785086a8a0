// Benchmark: webhook delivery, from the commit of an event to its receipt by a local receiver, for the
// platform's dispatcher and for a floor (a minimal SKIP LOCKED + LISTEN/NOTIFY job table doing the same
// signed POST and one insert), in one run against the same embedded PostgreSQL. The emitter and the
// receiver run here; each delivery process runs on its own (bench/webhooks-worker.ts).
//   npm run bench:webhooks   [BENCH_RATE=200] [BENCH_SECONDS=5] [BENCH_BACKLOG=3000]
// Events come in pairs per call (call.started then call.ended, in one transaction), so both the platform and
// the floor must keep each call's events in order; the receiver counts every pair received out of order.
// Phases for each delivery process:
//   throughput: BENCH_BACKLOG events committed while no delivery process runs; then it starts and drains
//               them (deliveries/s from first to last receipt);
//   latency:    events committed one per transaction at BENCH_RATE/s for BENCH_SECONDS; commit -> receipt.
// The platform runs both phases a second time while another endpoint hangs on every request (10 s timeout).
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { startBenchDatabase } from './support/bench-database.ts';
import { createSql } from '../control-plane/src/db/connect.ts';
import { migrate } from '../control-plane/src/db/migrate.ts';
import { createOrgWithKey } from '../control-plane/src/modules/workspace/orgs.ts';
import { insertWebhook } from '../control-plane/src/modules/webhooks/queries.ts';
import { emitEvent } from '../control-plane/src/modules/events/emit.ts';
import { Secrets } from '../control-plane/src/crypto/secrets.ts';
import { writeResults } from './support/results.ts';
import type { Sql } from 'postgres';

const RATE = Number(process.env.BENCH_RATE ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 3000);

// --- the receiver: records the receipt time of each event id ---------------------------------------------
const receipts = new Map<string, number>();
// Per call, the event types in the order they arrived: call.started must come before call.ended.
const arrivals = new Map<string, string[]>();
let hangs = 0;
const receiver = http.createServer((req, res) => {
  const id = req.headers['webhook-id'] as string;
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.url === '/hang') {
      hangs++;
      return; // never answer: the sender's timeout ends it
    }
    receipts.set(id, performance.now());
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type?: string; event?: string; data?: { call_id?: string }; call_id?: string };
    const callId = body.data?.call_id ?? body.call_id;
    const type = body.type ?? body.event ?? '';
    if (callId) arrivals.set(callId, [...(arrivals.get(callId) ?? []), type]);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});
receiver.keepAliveTimeout = 30_000;
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const rxUrl = (p: string) => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}${p}`;

// ~1 KB bodies, like the floor measurement in the platform notes.
const summary = 'The caller asked about opening hours and booked a table for four at 8 pm. '.repeat(10);
const endedPayload = (callId: string) => ({
  call_id: callId,
  agent_id: '5f0e2c1a-1111-4222-8333-444455556666',
  status: 'completed',
  duration_seconds: 184,
  to_number: '+14155550100',
  from_number: '+14155550199',
  outcome: 'booked',
  ai_summary: summary.slice(0, 400),
  analysis: { summary: summary.slice(0, 400) },
});

/** Commits `n` events: for 'normal', n/2 calls each with call.started then call.ended; for 'hang', n call.analyzed. */
type Emitter = (sql: Sql, n: number, kind: 'normal' | 'hang') => Promise<string[]>;

const startedPayload = (callId: string) => ({ call_id: callId, agent_id: '5f0e2c1a-1111-4222-8333-444455556666', to_number: null, from_number: null });
/** The (type, payload) pairs of `n` events of kind 'normal': calls of two events each, in order. */
function callEvents(n: number): { callId: string; type: string; payload: object }[] {
  const out: { callId: string; type: string; payload: object }[] = [];
  let callId = randomUUID();
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) callId = randomUUID();
    out.push(i % 2 === 0 ? { callId, type: 'call.started', payload: startedPayload(callId) } : { callId, type: 'call.ended', payload: endedPayload(callId) });
  }
  return out;
}

/** Calls whose call.ended arrived before their call.started. */
function orderViolations(): number {
  let bad = 0;
  for (const types of arrivals.values()) {
    const s = types.indexOf('call.started');
    const e = types.indexOf('call.ended');
    if (s >= 0 && e >= 0 && e < s) bad++;
  }
  return bad;
}

let orgId = '';
const platformEmit: Emitter = async (sql, n, kind) =>
  sql.begin(async (tx) => {
    const ids: string[] = [];
    const events = kind === 'normal' ? callEvents(n) : Array.from({ length: n }, () => {
      const callId = randomUUID();
      return { callId, type: 'call.analyzed', payload: { call_id: callId, outcome: 'booked', ai_summary: null, analysis: null } };
    });
    for (const e of events) ids.push((await emitEvent(tx, { orgId, type: e.type, callId: e.callId, payload: e.payload } as never)).id);
    return ids;
  });

const floorEmit: Emitter = async (sql, n) =>
  sql.begin(async (tx) => {
    const ids: string[] = [];
    for (const e of callEvents(n)) {
      const id = randomUUID();
      const body = JSON.stringify({ id, event: e.type, created_at: new Date().toISOString(), ...e.payload });
      await tx`insert into floor_jobs (call_id, url, event_id, body) values (${e.callId}, ${rxUrl('/floor')}, ${id}, ${body})`;
      ids.push(id);
    }
    // The payload says how many jobs arrived, so the floor wakes that many workers, not all of them.
    await tx`select pg_notify('floor_jobs', ${String(n)})`;
    return ids;
  });

const log = (msg: string) => process.stderr.write(`[bench:webhooks] ${msg}\n`);

function pct(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function waitFor(ids: string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (ids.some((id) => !receipts.has(id))) {
    if (Date.now() > deadline) throw new Error(`${ids.filter((id) => !receipts.has(id)).length} of ${ids.length} events never arrived`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function throughput(sql: Sql, emit: Emitter, start: () => Promise<void>): Promise<number> {
  const ids: string[] = [];
  for (let i = 0; i < BACKLOG; i += 250) ids.push(...(await emit(sql, Math.min(250, BACKLOG - i), 'normal')));
  log(`backlog of ${ids.length} committed`);
  await start();
  await waitFor(ids, 120_000);
  const times = ids.map((id) => receipts.get(id)!).sort((a, b) => a - b);
  return Math.round(((ids.length - 1) / (times.at(-1)! - times[0]!)) * 1000);
}

async function latency(sql: Sql, emit: Emitter): Promise<{ p50: number; p99: number; n: number }> {
  const committed = new Map<string, number>();
  const total = RATE * SECONDS;
  const t0 = performance.now();
  const inflight: Promise<void>[] = [];
  // One transaction per call (its two events), at RATE events/s.
  for (let i = 0; i < total; i += 2) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    inflight.push(
      emit(sql, 2, 'normal').then((ids) => {
        const at = performance.now();
        for (const id of ids) committed.set(id, at);
      }),
    );
  }
  await Promise.all(inflight);
  const ids = [...committed.keys()];
  log(`${ids.length} events committed at ${RATE}/s`);
  await waitFor(ids);
  const lat = ids.map((id) => Math.max(0, receipts.get(id)! - committed.get(id)!)).sort((a, b) => a - b);
  return { p50: Number(pct(lat, 50).toFixed(2)), p99: Number(pct(lat, 99).toFixed(2)), n: lat.length };
}

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

function startWorker(mode: string, url: string, masterKey: string, secret: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(import.meta.dirname, 'webhooks-worker.ts'), mode, url, masterKey, secret], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`${mode} worker exited with ${code}`)));
  });
}

async function stopWorker(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(t);
}

const db = await startBenchDatabase('webhooks');
const { url } = db;
const results: Record<string, unknown> = {};
try {
  const sql = createSql(url, { max: 20 });
  await migrate(sql);
  // The floor keeps each call's events in order as the platform does: a job is claimable only when no earlier
  // job of its call is still in the table (claimed jobs stay until delivered).
  await sql`create table floor_jobs (id bigserial primary key, call_id uuid not null, url text not null, event_id text not null, body text not null, claimed boolean not null default false)`;
  await sql`create index on floor_jobs (call_id, id)`;
  await sql`create table floor_attempts (id bigserial primary key, job_id bigint not null, status int not null, duration_ms int not null, at timestamptz not null default now())`;
  const masterKey = randomBytes(32).toString('base64');
  const secrets = new Secrets(Buffer.from(masterKey, 'base64'));
  orgId = (await createOrgWithKey(sql, 'bench')).org_id;
  const hook = await insertWebhook(sql, secrets, orgId, { name: 'bench', url: rxUrl('/platform'), events: ['call.started', 'call.ended'] });

  // Floor first, then the platform, then the platform next to a hanging endpoint.
  let child: ChildProcess | null = null;
  const floorRps = await throughput(sql, floorEmit, async () => void (child = await startWorker('floor', url, masterKey, hook.secret)));
  const floorLat = await latency(sql, floorEmit);
  await stopWorker(child!);
  results.floor = { rps: floorRps, ...floorLat, order_violations: orderViolations(), calls_checked: arrivals.size };
  arrivals.clear();
  log(`floor: ${JSON.stringify(results.floor)}`);

  const platformRps = await throughput(sql, platformEmit, async () => void (child = await startWorker('platform', url, masterKey, '')));
  const platformLat = await latency(sql, platformEmit);
  results.platform = { rps: platformRps, ...platformLat, order_violations: orderViolations(), calls_checked: arrivals.size };
  arrivals.clear();
  log(`platform: ${JSON.stringify(results.platform)}`);

  // A second endpoint that never answers, with events of its own throughout.
  await insertWebhook(sql, secrets, orgId, { name: 'hang', url: rxUrl('/hang'), events: ['call.analyzed'] });
  await platformEmit(sql, 200, 'hang');
  const hangTicker = setInterval(() => void platformEmit(sql, 5, 'hang'), 100);
  const hangLat = await latency(sql, platformEmit);
  await stopWorker(child!);
  const hangRps = await throughput(sql, platformEmit, async () => void (child = await startWorker('platform', url, masterKey, '')));
  clearInterval(hangTicker);
  results.platform_with_hanging_endpoint = { rps: hangRps, ...hangLat, hanging_requests_seen: hangs, order_violations: orderViolations(), calls_checked: arrivals.size };
  await stopWorker(child!);
  await sql.end();

  const f = results.floor as { rps: number; p50: number; p99: number };
  const p = results.platform as typeof f;
  const h = results.platform_with_hanging_endpoint as typeof f;
  const table = [
    `| Setup | deliveries/s (drain of ${BACKLOG}) | commit to receipt p50 ms | p99 ms (${RATE}/s offered, ${SECONDS} s) | calls out of order |`,
    '|---|---|---|---|---|',
    `| Floor: SKIP LOCKED + LISTEN (one wake-up per job), 20 workers, per-call order, signed POST + 1 insert | ${f.rps} | ${f.p50} | ${f.p99} | ${(f as unknown as { order_violations: number }).order_violations} |`,
    `| Platform dispatcher | ${p.rps} | ${p.p50} | ${p.p99} | ${(p as unknown as { order_violations: number }).order_violations} |`,
    `| Platform, another endpoint hanging (10 s timeouts) | ${h.rps} | ${h.p50} | ${h.p99} | ${(h as unknown as { order_violations: number }).order_violations} |`,
    '',
    `Platform / floor throughput: **${((p.rps / f.rps) * 100).toFixed(1)} %** (target >= 50 %); p50 ${p.p50} ms (target < 20 ms).`,
  ].join('\n');
  process.stdout.write(table + '\n');
  writeResults('webhooks', { rate: RATE, seconds: SECONDS, backlog: BACKLOG, results, table });
} finally {
  receiver.closeAllConnections();
  receiver.close();
  await db.stop();
}
