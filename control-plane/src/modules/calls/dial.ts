// The dial job (pg-boss queue `calls.dial`, one job per outbound call, keyed by the call id): create the room,
// dispatch the agent, and place the call with LiveKit's CreateSIPParticipant on the from-number's outbound
// trunk. The job follows the SIP leg until it is answered (-> in_progress, `call.started`) or fails
// (-> failed, `call.failed` with a carrier-style reason). A scheduled call's job is due at `scheduled_at`.
//
// Neither lost nor doubled when a process dies mid-dial: the job is retried (pg-boss heartbeat), and every
// step checks the call under its row lock first. `dialed_at` is committed just before the call is placed, and
// the leg is recorded (`carrier_call_sid`) as soon as its SIP participant shows in the room, which the SIP
// bridge joins just before it sends the INVITE. A resumed job follows a leg that is in the room; places the call
// again only when no leg was ever seen and none is in the room (the INVITE never left); and fails a call whose
// recorded leg is gone (`dial_interrupted`) rather than ringing the callee twice (docs/decisions.md).
import client from 'prom-client';
import { SipCallError } from 'livekit-server-sdk';
import type { Job, QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import { admitCall } from './limits.ts';
import { getCallById, type CallRow } from './queries.ts';
import { callerNumber, markDialed, setCarrierCallSid } from './queries-outbound.ts';
import { failCall, isFinal, markInitiated, markStarted } from './lifecycle.ts';
import { countRefusal, destinationProblem, doNotCallProblem } from './destinations.ts';
import { carrierFor } from '../phone-numbers/carriers/index.ts';
import { dispatchCallAgent } from './capability.ts';

export const DIAL_QUEUE = 'calls.dial';

/** The SIP participant of an outbound call: fixed, so a resumed job can find the leg it placed. */
export const sipIdentity = (callId: string) => `sip-${callId}`;

export type FailureReason = 'busy' | 'no_answer' | 'rejected' | 'invalid_number' | 'carrier_error';

/**
 * Carrier-style reason of a failed dial, from the SIP final response (RFC 3261 section 21; docs/decisions.md).
 * No SIP status (a timeout with no final response) is `no_answer`.
 */
export function reasonForSipStatus(code: number | undefined | null): FailureReason {
  if (code === undefined || code === null || !Number.isFinite(code)) return 'no_answer';
  if (code === 486 || code === 600) return 'busy';
  if (code === 408 || code === 480 || code === 487) return 'no_answer';
  if (code === 403 || code === 603 || code === 607 || code === 608) return 'rejected';
  if (code === 404 || code === 410 || code === 484 || code === 485 || code === 604) return 'invalid_number';
  return 'carrier_error';
}

interface DialMetrics {
  dials: client.Counter<'result'>;
  answer: client.Histogram<never>;
}
const metricsOf = new WeakMap<object, DialMetrics>();
function dialMetrics(services: Services): DialMetrics {
  const registry = services.metrics.registry;
  let m = metricsOf.get(registry);
  if (!m) {
    m = {
      dials: new client.Counter({
        name: 'vap_outbound_dials_total',
        help: 'Outbound dials by result (answered, or the failure reason)',
        labelNames: ['result'],
        registers: [registry],
      }),
      answer: new client.Histogram({
        name: 'vap_outbound_answer_seconds',
        help: 'From placing an outbound call to its answer',
        buckets: [0.5, 1, 2, 5, 10, 20, 30, 60],
        registers: [registry],
      }),
    };
    metricsOf.set(registry, m);
  }
  return m;
}

type Claim =
  | { kind: 'skip'; why: string }
  | { kind: 'dial'; call: CallRow; trunkId: string }
  | { kind: 'follow'; call: CallRow; trunkId: string | null }
  | { kind: 'failed' }
  | { kind: 'wait'; message: string };

/**
 * Thrown by the dial job of a scheduled call that came due while its org is at `max_concurrent_calls`: pg-boss
 * retries the job with backoff (`scheduledDialOptions`) and the call stays `queued` until a slot frees, at most
 * `OUTBOUND_CONCURRENCY_WAIT_SECONDS` past its time. The same job retried, not a new one: a process that dies
 * while the call waits leaves exactly one job for it.
 */
export class WaitingForSlot extends Error {}

/** First retry of a waiting scheduled call after about this long, doubling (with jitter) up to RETRY_MAX. */
const WAIT_RETRY_DELAY_SECONDS = 5;
const WAIT_RETRY_MAX_SECONDS = 60;

/**
 * pg-boss options of a scheduled call's dial job: enough retries to wait `waitSeconds` for a free slot (the
 * backoff reaches 2/3 of RETRY_MAX at worst once capped, so waitSeconds / 40 retries cover the window, plus the
 * doubling ones before it). The time limit, not the count, decides when the call gives up (see claim).
 */
export function scheduledDialOptions(waitSeconds: number): { retryLimit: number; retryDelay: number; retryBackoff: true; retryDelayMax: number } {
  const capped = Math.ceil(waitSeconds / ((WAIT_RETRY_MAX_SECONDS * 2) / 3));
  return { retryLimit: capped + 6, retryDelay: WAIT_RETRY_DELAY_SECONDS, retryBackoff: true, retryDelayMax: WAIT_RETRY_MAX_SECONDS };
}

/** Decides, under the row lock, what this run of the job does. `lastAttempt`: pg-boss will not retry this run. */
async function claim(services: Services, callId: string, lastAttempt = false): Promise<Claim> {
  return services.sql.begin(async (tx) => {
    const call = await getCallById(tx, callId, { lock: true });
    if (!call || call.type !== 'outbound') return { kind: 'skip', why: 'not an outbound call' } as const;
    if (isFinal(call.status)) return { kind: 'skip', why: `already ${call.status}` } as const; // stopped before its time, or done
    if (call.status === 'in_progress') return { kind: 'skip', why: 'answered' } as const;
    if (call.dialed_at) {
      // Being placed by a run that died: follow its leg (or place it, if it never left; see follow()).
      const number = await callerNumber(tx, call.org_id, { number: call.from_number ?? '' });
      return { kind: 'follow', call, trunkId: number?.outbound_trunk_id ?? null } as const;
    }
    // The destination policy may have changed since the call was created (a scheduled call, say).
    const refusal = await destinationProblem(tx, call.org_id, carrierFor(services), call.to_number ?? '');
    if (refusal) {
      services.log.info({ call_id: call.id, org_id: call.org_id, reason: refusal.ctx?.reason }, 'outbound call refused by the destination policy at dial time');
      countRefusal(services, String(refusal.ctx?.reason), 'dial');
      await failCall(tx, call, 'destination_not_allowed', 'destination_not_allowed');
      return { kind: 'failed' } as const;
    }
    // So may the do-not-call list (the callee asked on another call, say).
    if (await doNotCallProblem(tx, call.org_id, call.to_number ?? '')) {
      services.log.info({ call_id: call.id, org_id: call.org_id }, 'outbound call refused at dial time: the number is on the do-not-call list');
      await failCall(tx, call, 'do_not_call', 'do_not_call');
      return { kind: 'failed' } as const;
    }
    if (call.status === 'queued' && call.scheduled_at) {
      // Due now: a scheduled call counts for concurrency from here (its daily slot was taken at creation), and
      // the day's spend is checked again (it was under the cap when the call was created).
      const admission = await admitCall(tx, call.org_id, { daily: false, spend: true, excludeCallId: call.id });
      if (!admission.ok && admission.reason === 'daily_spend_cap') {
        services.log.info({ call_id: call.id, org_id: call.org_id }, 'scheduled call refused at the daily spend cap');
        countRefusal(services, admission.reason, 'dial');
        await failCall(tx, call, 'daily_spend_cap', 'daily_spend_cap');
        return { kind: 'failed' } as const;
      }
      if (!admission.ok) {
        // Wait for a slot (the job is retried with backoff), up to the limit past the call's time.
        const waitedMs = Date.now() - call.scheduled_at.getTime();
        if (!lastAttempt && waitedMs < services.config.OUTBOUND_CONCURRENCY_WAIT_SECONDS * 1000) {
          return { kind: 'wait', message: admission.message } as const;
        }
        await failCall(tx, call, 'concurrency_limit', 'concurrency_limit');
        return { kind: 'failed' } as const;
      }
    }
    const number = await callerNumber(tx, call.org_id, { number: call.from_number ?? '' });
    if (!number) {
      // The number was released or deactivated after the call was created (a scheduled call, say).
      await failCall(tx, call, 'carrier_error', 'from_number_unavailable');
      return { kind: 'failed' } as const;
    }
    await markInitiated(tx, call.id);
    return { kind: 'dial', call, trunkId: number.outbound_trunk_id } as const;
  });
}

/** Records the failure unless the call ended otherwise meanwhile (a stop), and closes the room. */
async function fail(services: Services, call: CallRow, reason: string, endReason: string): Promise<void> {
  await services.sql.begin(async (tx) => {
    const locked = await getCallById(tx, call.id, { lock: true });
    if (locked && !isFinal(locked.status)) await failCall(tx, locked, reason, endReason);
  });
  await services.livekit.rooms.deleteRoom(call.room_name!).catch(() => {});
}

async function answered(services: Services, call: CallRow, sipCallId: string | null): Promise<void> {
  const stillLive = await services.sql.begin(async (tx) => {
    const locked = await getCallById(tx, call.id, { lock: true });
    if (!locked || isFinal(locked.status)) return false;
    if (sipCallId) await setCarrierCallSid(tx, call.id, sipCallId);
    if (locked.status !== 'in_progress') await markStarted(tx, locked, new Date().toISOString());
    return true;
  });
  // Stopped while it rang and answered just then: hang up.
  if (!stillLive) await services.livekit.rooms.deleteRoom(call.room_name!).catch(() => {});
}

/**
 * Test-only pause points of the dial (`VAP_TEST_DIAL_PAUSE=before-invite|after-invite`), honoured only when
 * NODE_ENV=test: the run logs `dial paused for a test` with the point and the call id, then blocks for good, so
 * a test can SIGKILL the process there (test/e2e/outbound-dial-crash.test.ts). `before-invite`: `dialed_at` is
 * committed, CreateSIPParticipant not sent. `after-invite`: the leg is in the room and recorded, not answered.
 */
async function testPause(services: Services, point: 'before-invite' | 'after-invite', callId: string): Promise<void> {
  if (services.config.NODE_ENV !== 'test' || process.env.VAP_TEST_DIAL_PAUSE !== point) return;
  services.log.warn({ call_id: callId, point }, 'dial paused for a test');
  await new Promise<never>(() => {});
}

/**
 * Records the leg as soon as its SIP participant is in the room (the bridge joins just before its INVITE), while
 * CreateSIPParticipant waits for the answer: from then on a resumed job knows the callee was rung. Resolves
 * with whether the leg was seen; stops looking once `done` settles.
 */
async function recordLeg(services: Services, call: CallRow, done: Promise<unknown>): Promise<boolean> {
  let settled = false;
  done.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (!settled) {
    const p = await services.livekit.rooms.getParticipant(call.room_name!, sipIdentity(call.id)).catch(() => null);
    if (p) {
      const sid = p.attributes?.['sip.callID'];
      if (sid) await setCarrierCallSid(services.sql, call.id, sid);
      else services.log.warn({ call_id: call.id }, 'the SIP participant has no sip.callID: the leg is not recorded');
      return true;
    }
    await Promise.race([done.catch(() => {}), new Promise((r) => setTimeout(r, 200))]);
  }
  return false;
}

/**
 * Waits (at most OUTBOUND_AGENT_WAIT_SECONDS) for the dispatched agent to be in the room. A callee, and above
 * all an answering machine, speaks from the answer: an agent that joins after it misses the "Hello?" or the
 * greeting and its beep. A worker slow to start (cold, or short of CPU) then costs a few seconds before the
 * INVITE instead of the opening of the call. No agent by then: the call is placed anyway, and the agent greets
 * when it arrives (a failed call would be worse than a late greeting).
 */
async function waitForAgent(services: Services, call: CallRow): Promise<void> {
  const waitMs = services.config.OUTBOUND_AGENT_WAIT_SECONDS * 1000;
  if (waitMs <= 0) return;
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const participants = await services.livekit.rooms.listParticipants(call.room_name!).catch(() => []);
    if (participants.some((p) => p.kind === 4 /* ParticipantInfo_Kind.AGENT */)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  services.log.warn({ call_id: call.id, waited_seconds: waitMs / 1000 }, 'no agent in the room yet: placing the outbound call anyway');
}

/** Places the call and follows it to its answer or its failure. `again`: a resumed job placing a call whose INVITE never left. */
async function place(services: Services, call: CallRow, trunkId: string, opts: { again?: boolean } = {}): Promise<void> {
  const { livekit, config, log } = services;
  const m = dialMetrics(services);
  const room = call.room_name!;
  const metadata = JSON.stringify({ call_id: call.id });
  const ring = config.OUTBOUND_RING_TIMEOUT_SECONDS;
  try {
    await livekit.rooms.createRoom({ name: room, metadata, emptyTimeout: ring + 60, departureTimeout: 1 });
    const dispatches = await livekit.dispatch.listDispatch(room);
    // The call's capability in the dispatch only (room metadata is visible to the room's participants).
    if (!dispatches.some((d) => d.agentName === livekit.agentName)) {
      await dispatchCallAgent(services, room, call.id);
    }
  } catch (err) {
    log.error({ err, call_id: call.id }, 'room or dispatch failed for an outbound call');
    throw err; // retried by pg-boss: nothing was placed yet
  }
  await waitForAgent(services, call);
  // Committed before the INVITE: from here a retried job follows this leg instead of placing another.
  if (!opts.again && !(await markDialed(services.sql, call.id))) return; // stopped meanwhile
  await testPause(services, 'before-invite', call.id);
  const t0 = performance.now();
  try {
    const placing = livekit.sip.createSipParticipant(trunkId, call.to_number!, room, {
      participantIdentity: sipIdentity(call.id),
      participantName: call.to_number!,
      fromNumber: call.from_number!,
      waitUntilAnswered: true,
      ringingTimeout: ring,
      playDialtone: false,
      participantAttributes: { 'vap.call_id': call.id },
    });
    if (await recordLeg(services, call, placing)) await testPause(services, 'after-invite', call.id);
    const info = await placing;
    m.answer.observe((performance.now() - t0) / 1000);
    m.dials.inc({ result: 'answered' });
    await answered(services, call, info.sipCallId || null);
  } catch (err) {
    const code = err instanceof SipCallError ? err.sipStatusCode : undefined;
    // A deadline on our side (the room's ring timeout) or LiveKit's own: the callee did not answer.
    const reason = code !== undefined ? reasonForSipStatus(code) : isTimeout(err) ? 'no_answer' : 'carrier_error';
    m.dials.inc({ result: reason });
    log.info({ call_id: call.id, sip_status: code, reason, err: (err as Error).message }, 'outbound call failed');
    await fail(services, call, reason, reason);
  }
}

function isTimeout(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string };
  return e?.code === 'deadline_exceeded' || e?.name === 'TimeoutError' || /deadline|timed? ?out/i.test(e?.message ?? '');
}

/** The call's SIP participant if the bridge holds a leg of it, else null; 'unknown' when LiveKit cannot tell. */
async function legInRoom(services: Services, call: CallRow) {
  try {
    if (!(await services.livekit.roomExists(call.room_name!))) return null;
    const participants = await services.livekit.rooms.listParticipants(call.room_name!);
    return participants.find((p) => p.identity === sipIdentity(call.id)) ?? null;
  } catch {
    return 'unknown' as const;
  }
}

/**
 * A job resumed after a crash, for a call the run that died was placing (`dialed_at` set):
 *  - its leg is in the room: follow it until it is answered or gone;
 *  - no leg was ever seen (`carrier_call_sid` null) and none is in the room: the run died before its INVITE
 *    left (the bridge joins the room before sending it), so the call is placed now, once;
 *  - a leg was seen and is gone: the callee was rung and the leg ended with the run that watched it, which
 *    left no trace of how; the call fails with `carrier_error`, end reason `dial_interrupted`, rather than
 *    ringing the callee a second time.
 */
async function follow(services: Services, call: CallRow, trunkId: string | null): Promise<void> {
  const deadline = (call.dialed_at?.getTime() ?? Date.now()) + (services.config.OUTBOUND_RING_TIMEOUT_SECONDS + 15) * 1000;
  for (;;) {
    const fresh = await getCallById(services.sql, call.id);
    if (!fresh || isFinal(fresh.status) || fresh.status === 'in_progress') return;
    const p = await legInRoom(services, fresh);
    if (p === 'unknown') throw new Error('LiveKit cannot tell whether the call was placed'); // retried by pg-boss
    if (!p && !fresh.carrier_call_sid) {
      if (!trunkId) return fail(services, fresh, 'carrier_error', 'from_number_unavailable');
      services.log.info({ call_id: call.id }, 'resumed dial: the INVITE never left, placing the call');
      return place(services, fresh, trunkId, { again: true });
    }
    const status = p?.attributes?.['sip.callStatus'];
    if (p && status === 'active') return answered(services, call, p.attributes['sip.callID'] ?? null);
    if (!p || status === 'hangup') return fail(services, call, 'carrier_error', 'dial_interrupted');
    if (Date.now() > deadline) return fail(services, call, 'no_answer', 'no_answer');
    await new Promise((r) => setTimeout(r, 500));
  }
}

export async function dialCall(services: Services, callId: string, opts: { lastAttempt?: boolean } = {}): Promise<string> {
  const c = await claim(services, callId, opts.lastAttempt);
  if (c.kind === 'skip') return c.why;
  if (c.kind === 'failed') return 'failed';
  if (c.kind === 'wait') {
    services.log.info({ call_id: callId }, 'scheduled call due at the concurrency limit: waiting for a slot');
    throw new WaitingForSlot(c.message);
  }
  if (c.kind === 'follow') {
    await follow(services, c.call, c.trunkId);
    return 'followed';
  }
  await place(services, c.call, c.trunkId);
  return 'placed';
}

export function dialQueues(services: Services): QueueDef<never>[] {
  const ring = services.config.OUTBOUND_RING_TIMEOUT_SECONDS;
  return [
    {
      name: DIAL_QUEUE,
      // A job runs while the call rings. The heartbeat lets another process take over a job whose process died
      // (within about 70 s: pg-boss's supervisor looks every 60 s); the retries cover LiveKit being unreachable.
      options: { retryLimit: 5, retryDelay: 2, retryBackoff: true, expireInSeconds: ring + 120, heartbeatSeconds: 10 },
      // Scheduled calls are delayed jobs: NOTIFY fires when they are created, not when they are due, so poll.
      work: { batchSize: 1, includeMetadata: true, localConcurrency: services.config.OUTBOUND_DIAL_CONCURRENCY, pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 1 },
      handler: async (jobs: Job<{ call_id: string }>[]) => {
        for (const job of jobs) {
          // includeMetadata gives the job's own retry limit (a scheduled call's is larger than the queue's).
          const limit = (job as Job<{ call_id: string }> & { retryLimit?: number }).retryLimit;
          await dialCall(services, job.data.call_id, { lastAttempt: limit !== undefined && job.retryCount >= limit });
        }
      },
    },
  ];
}
