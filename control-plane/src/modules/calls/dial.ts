// The dial job (pg-boss queue `calls.dial`, one job per outbound call, keyed by the call id): create the room,
// dispatch the agent, and place the call with LiveKit's CreateSIPParticipant on the from-number's outbound
// trunk. The job follows the SIP leg until it is answered (-> in_progress, `call.started`) or fails
// (-> failed, `call.failed` with a carrier-style reason). A scheduled call's job is due at `scheduled_at`.
//
// Neither lost nor doubled when a process dies mid-dial: the job is retried (pg-boss heartbeat), and every
// step checks the call under its row lock first. `dialed_at` is committed just before the call is placed, so a
// resumed job redials only a call that was never placed; one that was placed is followed through its SIP
// participant (a fixed identity in the call's room), never placed again.
import client from 'prom-client';
import { SipCallError } from 'livekit-server-sdk';
import type { Job, QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import { admitCall } from './limits.ts';
import { callerNumber, getCallById, markDialed, setCarrierCallSid, type CallRow } from './queries.ts';
import { failCall, isFinal, markInitiated, markStarted } from './lifecycle.ts';

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

type Claim = { kind: 'skip'; why: string } | { kind: 'dial'; call: CallRow; trunkId: string } | { kind: 'follow'; call: CallRow } | { kind: 'failed' };

/** Decides, under the row lock, what this run of the job does. */
async function claim(services: Services, callId: string): Promise<Claim> {
  return services.sql.begin(async (tx) => {
    const call = await getCallById(tx, callId, { lock: true });
    if (!call || call.type !== 'outbound') return { kind: 'skip', why: 'not an outbound call' } as const;
    if (isFinal(call.status)) return { kind: 'skip', why: `already ${call.status}` } as const; // stopped before its time, or done
    if (call.status === 'in_progress') return { kind: 'skip', why: 'answered' } as const;
    if (call.dialed_at) return { kind: 'follow', call } as const; // placed by a run that died: never place it again
    if (call.status === 'queued' && call.scheduled_at) {
      // Due now: a scheduled call counts for concurrency from here (its daily slot was taken at creation).
      const admission = await admitCall(tx, call.org_id, { daily: false, excludeCallId: call.id });
      if (!admission.ok) {
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

/** Places the call and follows it to its answer or its failure. */
async function place(services: Services, call: CallRow, trunkId: string): Promise<void> {
  const { livekit, config, log } = services;
  const m = dialMetrics(services);
  const room = call.room_name!;
  const metadata = JSON.stringify({ call_id: call.id });
  const ring = config.OUTBOUND_RING_TIMEOUT_SECONDS;
  try {
    await livekit.rooms.createRoom({ name: room, metadata, emptyTimeout: ring + 60, departureTimeout: 1 });
    const dispatches = await livekit.dispatch.listDispatch(room);
    if (!dispatches.some((d) => d.agentName === livekit.agentName)) await livekit.dispatch.createDispatch(room, livekit.agentName, { metadata });
  } catch (err) {
    log.error({ err, call_id: call.id }, 'room or dispatch failed for an outbound call');
    throw err; // retried by pg-boss: nothing was placed yet
  }
  // Committed before the INVITE: from here a retried job follows this leg instead of placing another.
  if (!(await markDialed(services.sql, call.id))) return; // stopped meanwhile
  const t0 = performance.now();
  try {
    const info = await livekit.sip.createSipParticipant(trunkId, call.to_number!, room, {
      participantIdentity: sipIdentity(call.id),
      participantName: call.to_number!,
      fromNumber: call.from_number!,
      waitUntilAnswered: true,
      ringingTimeout: ring,
      playDialtone: false,
      participantAttributes: { 'vap.call_id': call.id },
    });
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

/**
 * A job resumed after a crash, for a call placed by the run that died: follow its SIP participant until it is
 * answered or gone. A leg that is gone left no trace of its end (the run that placed it saw it): the call
 * fails with `carrier_error` and end reason `dial_interrupted` rather than ringing the callee again.
 */
async function follow(services: Services, call: CallRow): Promise<void> {
  const deadline = (call.dialed_at?.getTime() ?? Date.now()) + (services.config.OUTBOUND_RING_TIMEOUT_SECONDS + 15) * 1000;
  for (;;) {
    const fresh = await getCallById(services.sql, call.id);
    if (!fresh || isFinal(fresh.status) || fresh.status === 'in_progress') return;
    const p = await services.livekit.rooms.getParticipant(call.room_name!, sipIdentity(call.id)).catch(() => null);
    const status = p?.attributes?.['sip.callStatus'];
    if (p && status === 'active') return answered(services, call, p.attributes['sip.callID'] ?? null);
    if (!p || status === 'hangup') return fail(services, call, 'carrier_error', 'dial_interrupted');
    if (Date.now() > deadline) return fail(services, call, 'no_answer', 'no_answer');
    await new Promise((r) => setTimeout(r, 500));
  }
}

export async function dialCall(services: Services, callId: string): Promise<string> {
  const c = await claim(services, callId);
  if (c.kind === 'skip') return c.why;
  if (c.kind === 'failed') return 'failed';
  if (c.kind === 'follow') {
    await follow(services, c.call);
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
      // within ~20 s; the retries cover LiveKit being unreachable before anything was placed.
      options: { retryLimit: 5, retryDelay: 2, retryBackoff: true, expireInSeconds: ring + 120, heartbeatSeconds: 10 },
      // Scheduled calls are delayed jobs: NOTIFY fires when they are created, not when they are due, so poll.
      work: { batchSize: 1, localConcurrency: services.config.OUTBOUND_DIAL_CONCURRENCY, pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 1 },
      handler: async (jobs: Job<{ call_id: string }>[]) => {
        for (const job of jobs) await dialCall(services, job.data.call_id);
      },
    },
  ];
}
