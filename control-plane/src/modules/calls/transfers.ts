// Warm transfers (docs/decisions/036-warm-transfer.md). The worker's transfer_call tool (mode warm) holds the
// caller and asks for a second SIP leg: the control plane dials the destination into the call's own room, on
// the outbound trunk of the call's number, through the same destination policy as outbound calls, and answers
// once the person answered or the dial failed. The worker briefs the person, joins the legs by changing
// subscriptions, reports `joined` and leaves the room. From then on the call belongs to its two SIP legs: the
// agent's departure does not end it (the worker's `ended` report is held), and the first leg to hang up ends
// it, hangs up the other (the room is deleted) and records both legs' minutes.
import { SipCallError } from 'livekit-server-sdk';
import type { Db } from '../../db/types.ts';
import type { Services } from '../../services.ts';
import type { CallTransfer, TransferStatus } from '../../../../schemas/calls.ts';
import {
  endAnswered,
  endInFlight,
  holdReport,
  insertTransfer,
  liveTransfer,
  markAnswered,
  markEnded,
  markJoined,
  markNotAnswered,
  pastMaxDuration,
  setParticipant,
  transferById,
  transferInRoom,
  transferRows,
  type TransferRow,
} from './transfers/queries.ts';

export type { TransferRow } from './transfers/queries.ts';
export { liveTransfer } from './transfers/queries.ts';
import type { EndedReport, TransferResult } from '../../../../schemas/internal.ts';
import { conflict, notFound } from '../../http/errors.ts';
import { getCallById, touchWorker, type CallRow } from './queries.ts';
import { callerNumber } from './queries-outbound.ts';
import { callLimitsOf, spendTodayCents } from './queries-admission.ts';
import { callRateCents, rateTableFor } from '../phone-numbers/rates.ts';
import { countRefusal, destinationProblem } from './destinations.ts';
import { carrierFor } from '../phone-numbers/carriers/index.ts';
import { reasonForSipStatus } from './dial.ts';
import { finishCall, isFinal } from './lifecycle.ts';
import { retainMessages } from '../../../../shared/privacy.ts';
import { retentionOfCall } from './queries.ts';

/** The second leg's SIP participant: fixed per transfer, so the webhook can tell it from the caller. */
export const transferIdentity = (transferId: string) => `transfer-${transferId}`;
const E164 = /^\+[1-9]\d{1,14}$/;


export function transferView(t: TransferRow): CallTransfer {
  return {
    id: t.id,
    mode: t.mode,
    destination: t.destination,
    status: t.status,
    sip_status: t.sip_status,
    started_at: t.started_at.toISOString(),
    answered_at: t.answered_at?.toISOString() ?? null,
    joined_at: t.joined_at?.toISOString() ?? null,
    ended_at: t.ended_at?.toISOString() ?? null,
    duration_seconds: t.duration_seconds,
    credits_used: t.duration_seconds === null ? null : t.duration_seconds / 60,
    cost_cents: t.cost_cents,
  };
}

/** The transfers of some calls, in order, by call id (one query for a page of calls). */
export async function transfersOf(db: Db, callIds: string[]): Promise<Map<string, CallTransfer[]>> {
  const out = new Map<string, CallTransfer[]>();
  if (!callIds.length) return out;
  const rows = await transferRows(db, callIds);
  for (const r of rows) {
    const list = out.get(r.call_id) ?? [];
    list.push(transferView(r));
    out.set(r.call_id, list);
  }
  return out;
}


const refused = (message: string): TransferResult => ({ transfer_id: null, status: 'refused', participant_identity: null, message });

function isTimeout(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string };
  return e?.code === 'deadline_exceeded' || e?.name === 'TimeoutError' || /deadline|timed? ?out/i.test(e?.message ?? '');
}

const FAILURE_WORDS: Record<string, string> = {
  busy: 'The line was busy.',
  no_answer: 'Nobody answered.',
  failed: 'The call could not be placed.',
};

/**
 * POST /internal/v1/calls/{id}/transfers: dials the second leg into the call's room and waits (at most
 * TRANSFER_RING_TIMEOUT_SECONDS) for its answer. A refusal (policy, no trunk, a transfer already in flight, a
 * call that is not a live phone call) is a result the agent can say, not an error: the call goes on.
 */
export async function startTransfer(services: Services, callId: string, destination: string): Promise<TransferResult> {
  const { sql, livekit, log, config } = services;
  const call = await getCallById(sql, callId);
  if (!call) throw notFound('Call');
  if (call.status !== 'in_progress' || !call.room_name) throw conflict('The call is not in progress');
  if (call.type === 'web') return refused('a web call has no phone line to transfer');
  if (!E164.test(destination)) return refused('a warm transfer dials a phone number');
  // The same policy as outbound calls (toll fraud): the worker checked it too, but a worker is not trusted.
  const carrier = carrierFor(services);
  const problem = await destinationProblem(sql, call.org_id, carrier, destination);
  const number = await callerNumber(sql, call.org_id, { number: (call.type === 'inbound' ? call.to_number : call.from_number) ?? '' });
  // The second leg is an outbound carrier call: priced at the carrier's outbound rate, and refused once the
  // day's spend has reached the org's cap, as POST /v1/calls is (docs/decisions/036-warm-transfer.md).
  const rate = number && number.provider === carrier.name ? callRateCents(carrier, 'outbound', destination, rateTableFor(config)) : null;
  if (!problem && number) {
    const limits = await callLimitsOf(sql, call.org_id);
    const spent = await spendTodayCents(sql, call.org_id);
    if (limits && spent >= limits.daily_spend_cap_cents) {
      countRefusal(services, 'daily_spend_cap', 'transfer');
      return refused("the organisation's daily spending limit is reached");
    }
  }
  let row: TransferRow | undefined;
  try {
    row = await insertTransfer(sql, {
      callId: call.id,
      orgId: call.org_id,
      destination,
      status: problem ? 'refused' : number ? 'ringing' : 'failed',
      reason: problem ? String(problem.ctx?.reason ?? 'destination_not_allowed') : number ? null : 'no_outbound_trunk',
      rateCentsPerMinute: problem ? null : rate,
    });
  } catch (err) {
    // call_transfers_live_idx: one transfer in flight per call.
    if ((err as { code?: string }).code === '23505') return refused('a transfer is already under way');
    throw err;
  }
  if (problem) {
    log.info({ call_id: call.id, org_id: call.org_id, reason: problem.ctx?.reason }, 'warm transfer refused by the destination policy');
    countRefusal(services, String(problem.ctx?.reason), 'transfer');
    return { transfer_id: row.id, status: 'refused', participant_identity: null, message: problem.msg };
  }
  if (!number) return { transfer_id: row.id, status: 'failed', participant_identity: null, message: "the call's number has no outbound line" };

  const identity = transferIdentity(row.id);
  await setParticipant(sql, row.id, identity);
  try {
    const info = await livekit.sip.createSipParticipant(number.outbound_trunk_id, destination, call.room_name, {
      participantIdentity: identity,
      participantName: destination,
      fromNumber: number.phone_number,
      waitUntilAnswered: true,
      ringingTimeout: config.TRANSFER_RING_TIMEOUT_SECONDS,
      playDialtone: false,
      participantAttributes: { 'vap.call_id': call.id, 'vap.transfer_id': row.id },
    });
    const answered = await markAnswered(sql, row.id, info.sipCallId || null);
    if (!answered) {
      // The call ended while the leg rang (the room is gone, or going): let the leg go.
      await livekit.rooms.removeParticipant(call.room_name, identity).catch(() => {});
      return { transfer_id: row.id, status: 'failed', participant_identity: null, message: 'the call ended while the transfer rang' };
    }
    log.info({ call_id: call.id, transfer_id: row.id }, 'warm transfer answered');
    return { transfer_id: row.id, status: 'answered', participant_identity: identity, message: null };
  } catch (err) {
    const code = err instanceof SipCallError ? err.sipStatusCode : undefined;
    const reason = code !== undefined ? reasonForSipStatus(code) : isTimeout(err) ? 'no_answer' : 'carrier_error';
    const status: TransferStatus = reason === 'busy' || reason === 'no_answer' ? reason : 'failed';
    log.info({ call_id: call.id, transfer_id: row.id, sip_status: code, reason, err: (err as Error).message }, 'warm transfer not answered');
    await markNotAnswered(sql, row.id, { status, sipStatus: code ?? null, reason });
    // A leg still ringing when our wait ran out must not ring on.
    await livekit.rooms.removeParticipant(call.room_name, identity).catch(() => {});
    return { transfer_id: row.id, status, participant_identity: null, message: FAILURE_WORDS[status] ?? FAILURE_WORDS.failed! };
  }
}

/** POST /internal/v1/calls/{id}/transfers/{transfer_id}: the worker joined the legs, or let the answered leg go. */
export async function updateTransfer(services: Services, db: Db, callId: string, transferId: string, state: 'joined' | 'abandoned'): Promise<CallTransfer> {
  const t = await transferById(db, callId, transferId, { lock: true });
  if (!t) throw notFound('Transfer');
  if (state === 'joined') {
    if (t.status === 'joined') return transferView(t);
    if (t.status !== 'answered') throw conflict(`The transfer is ${t.status}`);
    return transferView(await markJoined(db, t.id));
  }
  if (t.status !== 'answered' && t.status !== 'ringing') return transferView(t);
  const row = await markEnded(db, t.id);
  const call = await getCallById(db, callId);
  if (call?.room_name && t.participant_identity) await services.livekit.rooms.removeParticipant(call.room_name, t.participant_identity).catch(() => {});
  return transferView(row);
}

/**
 * The worker's `ended` report of a call whose legs are joined: the agent left, the call goes on. The report
 * (its conversation, usage and latency) is held on the transfer for the call's end. True when held.
 */
export async function holdEndedReport(db: Db, call: CallRow, report: EndedReport & { seq: number }): Promise<boolean> {
  if (isFinal(call.status)) return false;
  const t = await liveTransfer(db, call.id, { lock: true });
  if (!t || t.status !== 'joined') return false;
  const messages = retainMessages(await retentionOfCall(db, call.id), report.messages);
  await holdReport(db, t.id, { ...report, messages });
  return true;
}

/**
 * Ends a call whose legs were joined: the call completes (end_reason `transferred`, its duration the caller's
 * leg from its start), the transfer ends with the second leg's time, and the room is deleted, which hangs up
 * the leg still in it. Idempotent: a second leg's departure, a room_finished or the reaper find nothing to do.
 */
export async function endJoinedCall(services: Services, callId: string, why: string, endReason: 'transferred' | 'max_duration' = 'transferred'): Promise<boolean> {
  const room = await services.sql.begin(async (tx) => {
    const call = await getCallById(tx, callId, { lock: true });
    if (!call || isFinal(call.status)) return null;
    const t = await liveTransfer(tx, call.id, { lock: true });
    if (!t || t.status !== 'joined') return null;
    const ended = await markEnded(tx, t.id);
    const endedAt = ended.ended_at!.toISOString();
    const report = t.held_report;
    // Without the worker's report yet (it is still on its way), the call ends now and waits for it.
    await finishCall(
      tx,
      services,
      call,
      { endReason, endedAt, ...(report ? { messages: report.messages, latency: report.latency, usage: report.usage } : {}) },
      report ? {} : { awaitReport: { graceSeconds: services.config.STOP_REPORT_GRACE_SECONDS } },
    );
    services.log.info({ call_id: call.id, transfer_id: t.id, why }, 'transferred call ended');
    return call.room_name;
  });
  if (room) await services.livekit.rooms.deleteRoom(room).catch(() => {});
  return room !== null;
}

/**
 * A call stopped (POST /v1/calls/{id}/stop) with a transfer in flight: the transfer ends with the call (the stop
 * deletes the room, which hangs up both legs), a ringing one as `failed`, an answered or joined one with its
 * second leg's minutes. In the stop's transaction.
 */
export async function closeTransfers(db: Db, callId: string): Promise<void> {
  await endInFlight(db, callId, 'call_stopped');
}

/**
 * LiveKit webhooks for a room with a warm transfer: a SIP leg that leaves a joined call ends it (and hangs up
 * the other); the second leg hanging up during the briefing ends the transfer. Returns true when the event
 * was a transfer's (the caller's departure before the join is the worker's to handle, as in any call).
 */
export async function onTransferRoomEvent(services: Services, room: string, event: string, participant: { identity: string; kind: number } | undefined): Promise<boolean> {
  const live = await transferInRoom(services.sql, room);
  if (!live) return false;
  if (live.status === 'joined') {
    const sipLeft = event === 'participant_left' && participant?.kind === 3; // ParticipantInfo_Kind.SIP
    if (sipLeft || event === 'room_finished') {
      await endJoinedCall(services, live.call_id, sipLeft ? `${participant.identity} hung up` : 'room finished');
      return true;
    }
    // The agent leaving a joined call is expected: not a lost worker.
    return event === 'participant_left' && participant?.kind === 4;
  }
  if (event === 'participant_left' && participant?.identity === live.participant_identity) {
    await endAnswered(services.sql, live.call_id);
  }
  return false;
}

/**
 * The reaper's view of a joined call: alive while both SIP legs are in the room; otherwise it ends here. Null
 * when the call has no joined transfer (the reaper goes on as for any call).
 */
export async function reapJoined(services: Services, call: CallRow): Promise<'alive' | 'reaped' | null> {
  const t = await liveTransfer(services.sql, call.id);
  if (!t || t.status !== 'joined' || !call.room_name) return null;
  // The agent that ended calls at max_duration has left: the reaper keeps the bound for the joined legs.
  if (await pastMaxDuration(services.sql, call.id)) return (await endJoinedCall(services, call.id, 'max duration reached', 'max_duration')) ? 'reaped' : null;
  const participants = await services.livekit.rooms.listParticipants(call.room_name).catch(() => null);
  // LiveKit unreachable: decide on a later sweep.
  if (!participants || participants.filter((p) => p.kind === 3).length >= 2) {
    await touchWorker(services.sql, call.id);
    return 'alive';
  }
  return (await endJoinedCall(services, call.id, 'a leg is gone')) ? 'reaped' : null;
}
