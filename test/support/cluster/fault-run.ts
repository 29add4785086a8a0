// One fault, run the same way each time (the e2e files and `npm run bench:faults` share it):
//   1. calls in flight: web callers dialled through the load balancer, each greeted;
//   2. new calls keep arriving (one after another) and API requests too (probes.ts);
//   3. the fault strikes; each caller in flight asks a question: is it answered?; it stays on the line until the
//      platform ends its call or the fault's hold time passes, then hangs up;
//   4. the probes run on until new calls are served again (or the observation window ends), the cluster is
//      restored to full strength, and every call of the run must end (none stuck in progress), with its events
//      delivered: none lost, none twice except as a redelivery with the same `webhook-id`.
import { nowMs } from '../rtc-client.ts';
import type { Receiver } from '../webhook-receiver.ts';
import type { Cluster } from './cluster.ts';
import { WebCaller, type Caller, type Dialer, type Voices } from './callers.ts';
import { Probes } from './probes.ts';

type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

export interface FaultEnv {
  cluster: Cluster;
  /** The org's client, through the load balancer. */
  api: Api;
  agentId: string;
  voices: Voices;
  receiver: Receiver;
  log?: (line: string) => void;
}

export interface Fault {
  name: string;
  /** Strikes; resolves with what it struck (a member's name, a count of calls it held...). */
  inject(env: FaultEnv): Promise<Record<string, unknown>>;
  /** Brings the cluster back to full strength after the observation window. */
  restore(env: FaultEnv): Promise<void>;
  /** Seconds a caller in flight stays on the line after the fault unless the platform ends its call first. */
  holdS: number;
  /** Seconds the probes run after the fault at least (longer until new calls are served again, up to twice this). */
  observeS: number;
}

export interface InFlightOutcome {
  kind: 'web' | 'sip';
  call_id: string;
  /** The question asked 2 s after the fault was answered within 30 s (ms from its end to the answer), or null: silence. */
  answered_after_fault_ms: number | null;
  /** Seconds from the fault until the agent left the room, the platform closed the caller's connection, or null. */
  agent_left_after_s: number | null;
  disconnected_after_s: number | null;
  /** The record once the run is over. */
  status: string;
  end_reason: string | null;
  /** Seconds from the fault to the record's end, when the platform ended it before the caller hung up. */
  ended_by_platform_after_s: number | null;
}

export interface FaultResult {
  fault: string;
  target: Record<string, unknown>;
  in_flight: InFlightOutcome[];
  new_calls: ReturnType<Probes['summary']>;
  calls_total: number;
  /** Calls not completed or failed once everyone hung up and the platform had 150 s to notice. */
  stuck: { call_id: string; status: string }[];
  end_reasons: Record<string, number>;
  events: EventCheck;
  seconds_to_restore: number;
  /** A web call dialled once the cluster was restored: ms from dialling to its greeting, or null (not served). */
  greeting_ms_after_restore: number | null;
}

export interface EventCheck {
  expected: number;
  delivered: number;
  /** Events a call's end says must exist (call.started once started, call.ended or call.failed) with no delivery. */
  missing: { call_id: string; event: string }[];
  /** Deliveries that repeated an event with the same webhook-id (at-least-once redelivery). */
  redelivered_same_id: number;
  /** Events of one call and type under more than one webhook-id: a duplicate event, never allowed. */
  duplicated_distinct_ids: { call_id: string; event: string; ids: number }[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sec = (t: number | null, from: number) => (t === null ? null : Math.round((t - from) / 100) / 10);

async function getCall(
  api: Api,
  id: string,
): Promise<{ status: string; end_reason: string | null; ended_at: string | null; started_at: string | null } | null> {
  try {
    const r = await api('GET', `/v1/calls/${id}`);
    return r.status === 200 ? r.body : null;
  } catch {
    return null;
  }
}

const TERMINAL = new Set(['completed', 'failed']);

async function hold(env: FaultEnv, caller: Caller, faultAt: number, holdS: number): Promise<InFlightOutcome> {
  await sleep(2000);
  const answered = await caller.ask(30_000);
  let endedByPlatform: number | null = null;
  while (nowMs() - faultAt < holdS * 1000) {
    const c = await getCall(env.api, caller.id);
    if (c && TERMINAL.has(c.status)) {
      endedByPlatform = c.ended_at ? Date.parse(c.ended_at) : nowMs();
      break;
    }
    await sleep(1000);
  }
  await caller.leave();
  return {
    kind: caller.kind,
    call_id: caller.id,
    answered_after_fault_ms: answered,
    agent_left_after_s: sec(caller.agentLeftAt, faultAt),
    disconnected_after_s: sec(caller.disconnectedAt, faultAt),
    status: 'pending',
    end_reason: null,
    ended_by_platform_after_s: sec(endedByPlatform, faultAt),
  };
}

export function checkEvents(receiver: Receiver, calls: Map<string, { status: string; started_at: string | null }>): EventCheck {
  const deliveries = receiver.requests.filter((r) => r.json && typeof r.json.call_id === 'string' && calls.has(r.json.call_id));
  const byKey = new Map<string, Map<string, number>>();
  for (const d of deliveries) {
    const key = `${d.json.call_id} ${d.json.event}`;
    const ids = byKey.get(key) ?? new Map<string, number>();
    const id = String(d.headers['webhook-id']);
    ids.set(id, (ids.get(id) ?? 0) + 1);
    byKey.set(key, ids);
  }
  const missing: EventCheck['missing'] = [];
  let expected = 0;
  for (const [id, c] of calls) {
    const want = [...(c.started_at ? ['call.started'] : []), c.status === 'failed' ? 'call.failed' : 'call.ended'];
    for (const event of want) {
      expected++;
      if (!byKey.has(`${id} ${event}`)) missing.push({ call_id: id, event });
    }
  }
  let redelivered = 0;
  const duplicated: EventCheck['duplicated_distinct_ids'] = [];
  for (const [key, ids] of byKey) {
    for (const n of ids.values()) redelivered += n - 1;
    const [call_id, event] = key.split(' ') as [string, string];
    if (ids.size > 1) duplicated.push({ call_id, event, ids: ids.size });
  }
  return { expected, delivered: deliveries.length, missing, redelivered_same_id: redelivered, duplicated_distinct_ids: duplicated };
}

/** A web call through the API, for the runs' callers. */
export const webDialer =
  (env: FaultEnv): Dialer =>
  () =>
    WebCaller.dial(env.api, env.agentId, env.voices.question);

export interface RunOptions {
  /** The callers in flight when the fault strikes (default: 3 web callers). */
  inFlight?: Dialer[];
  /** The new calls' dialers, in turn (default: web calls). */
  newCalls?: Dialer[];
}

export async function runFault(env: FaultEnv, fault: Fault, opts: RunOptions = {}): Promise<FaultResult> {
  const log = env.log ?? (() => {});
  const web = webDialer(env);
  const inFlight = opts.inFlight ?? [web, web, web];
  log(`${fault.name}: dialling ${inFlight.length} calls in flight`);
  const callers: Caller[] = [];
  // A loaded machine can miss a greeting's deadline: a caller that was not greeted hangs up and dials again (its
  // call must still end: it is checked with the others).
  const unanswered: Caller[] = [];
  for (const dial of inFlight) {
    for (let attempt = 1; ; attempt++) {
      const c = await dial();
      try {
        await c.greeting(90_000);
        callers.push(c);
        break;
      } catch (err) {
        await c.leave();
        unanswered.push(c);
        if (attempt === 3) throw err;
      }
    }
  }
  const probes = new Probes(env.api, opts.newCalls ?? [web]).start();
  await sleep(3000);
  log(`${fault.name}: strike`);
  const faultAt = nowMs();
  const target = await fault.inject(env);
  log(`${fault.name}: struck ${JSON.stringify(target)}`);
  const outcomes = await Promise.all(callers.map((c) => hold(env, c, faultAt, fault.holdS)));
  const observeUntil = faultAt + fault.observeS * 1000;
  const giveUp = faultAt + fault.observeS * 2000;
  while (nowMs() < giveUp && (nowMs() < observeUntil || probes.recoveredAfterS(faultAt) === null)) await sleep(500);
  await probes.stop();
  const restoreStart = nowMs();
  log(`${fault.name}: restoring`);
  await fault.restore(env);
  const restored = Math.round((nowMs() - restoreStart) / 100) / 10;
  // Back at full strength: a new web call is greeted.
  let afterRestore: number | null = null;
  let afterRestoreId: string | null = null;
  try {
    const t = nowMs();
    const c = await web();
    afterRestoreId = c.id;
    try {
      afterRestore = Math.round((await c.greeting(60_000)) - t);
    } finally {
      await c.leave();
    }
  } catch (err) {
    log(`${fault.name}: no call served after the restore: ${(err as Error).message}`);
  }

  // Every call of the run must end by itself: nobody stops one through the API.
  const ids = [...callers.map((c) => c.id), ...unanswered.map((c) => c.id).filter(Boolean), ...probes.callIds(), ...(afterRestoreId ? [afterRestoreId] : [])];
  const records = new Map<string, { status: string; end_reason: string | null; started_at: string | null }>();
  const deadline = nowMs() + 150_000;
  for (;;) {
    for (const id of ids) {
      if (TERMINAL.has(records.get(id)?.status ?? '')) continue;
      const c = await getCall(env.api, id);
      if (c) records.set(id, c);
    }
    if (ids.every((id) => TERMINAL.has(records.get(id)?.status ?? '')) || nowMs() > deadline) break;
    await sleep(2000);
  }
  // Events of ended calls: given up to 60 s to arrive (a delivery retried after a replica died waits its turn).
  const ended = new Map([...records].filter(([, c]) => TERMINAL.has(c.status)));
  let events = checkEvents(env.receiver, ended);
  for (const until = nowMs() + 60_000; events.missing.length > 0 && nowMs() < until; events = checkEvents(env.receiver, ended)) await sleep(2000);

  for (const o of outcomes) {
    const r = records.get(o.call_id);
    o.status = r?.status ?? 'unknown';
    o.end_reason = r?.end_reason ?? null;
  }
  const endReasons: Record<string, number> = {};
  for (const r of records.values()) endReasons[r.end_reason ?? r.status] = (endReasons[r.end_reason ?? r.status] ?? 0) + 1;
  return {
    fault: fault.name,
    target,
    in_flight: outcomes,
    new_calls: probes.summary(faultAt),
    calls_total: ids.length,
    stuck: ids.filter((id) => !TERMINAL.has(records.get(id)?.status ?? '')).map((id) => ({ call_id: id, status: records.get(id)?.status ?? 'unknown' })),
    end_reasons: endReasons,
    events,
    seconds_to_restore: restored,
    greeting_ms_after_restore: afterRestore,
  };
}
