// Supervising a live call (docs/decisions/supervise-control-channel.md). A person with a secret key acts on a call in
// progress: listen (a hidden, subscribe-only LiveKit token), say, whisper, mute and unmute the agent (carried out by
// the call's media worker), takeover and hand_back (a person speaks to the caller in the agent's place:
// supervision-takeover.ts), transfer (a blind transfer through the same policy and spend cap as the transfer_call
// tool) and end (as POST /v1/calls/{id}/stop). Each action lands in the call's `supervision[]`, the audit log and a
// `call.supervised` event, in one transaction.
//
// The worker learns of its actions through a server-sent LiveKit data message to the agent participant that carries
// nothing but a nudge: the worker then takes the actions from the internal API with the call's capability. A message
// from anyone else in the room (the caller can publish data) is ignored by the worker, and could not carry an action
// anyway.
import { randomUUID } from 'node:crypto';
import { DataPacket_Kind } from 'livekit-server-sdk';
import type { Services } from '../../services.ts';
import type { Auth } from '../../auth/service.ts';
import type { Db } from '../../db/types.ts';
import { conflict, HttpError, notFound, ValidationFailure } from '../../http/errors.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { writeAudit } from '../audit-events/queries.ts';
import { emitCallEvent } from './lifecycle.ts';
import { getCall, getCallById, retentionOfCall, type CallRow } from './queries.ts';
import { appendSupervision } from './queries-supervision.ts';
import { stopCall } from './service.ts';
import { startBlindTransfer } from './blind-transfer.ts';
import { listenStreamUrl } from './listen-ticket.ts';
import { newTakeover, removePerson, takeoverRule, takeoverToken } from './supervision-takeover.ts';
import { retainFreeText } from '../../../../shared/privacy.ts';
import {
  SAY_MAX,
  SUPERVISION_TOPIC,
  type ControlCallRequest,
  type ControlCallResult,
  type ListenResult,
  type SupervisionAction,
  type SupervisionEntry,
  type WorkerSupervisionItem,
} from '../../../../schemas/supervision.ts';

interface Meta {
  requestId: string;
  ip: string | null;
}

const ACTOR_TYPES = new Set(['api_key', 'user']);

function problems(body: ControlCallRequest): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  const needs = (field: 'text' | 'destination') =>
    body[field] === undefined && out.push({ loc: ['body', field], msg: `Field required for action ${body.action}`, type: 'missing' });
  const refuses = (field: 'text' | 'when' | 'destination') =>
    body[field] !== undefined && out.push({ loc: ['body', field], msg: `Not a field of action ${body.action}`, type: 'extra_forbidden', input: body[field] });
  if (body.action === 'say' || body.action === 'whisper') needs('text');
  else refuses('text');
  if (body.action !== 'say') refuses('when');
  if (body.action === 'transfer') needs('destination');
  else refuses('destination');
  if (body.action === 'say' && body.text && body.text.length > SAY_MAX) {
    out.push({ loc: ['body', 'text'], msg: `String should have at most ${SAY_MAX} characters`, type: 'string_too_long', input: body.text, ctx: { max_length: SAY_MAX } });
  }
  return out;
}

/** The call, if it is the org's (else 404) and in progress (else 409). */
async function liveCall(db: Db, auth: Auth, callId: string): Promise<CallRow> {
  const call = await getCall(db, auth.orgId, callId);
  if (!call) throw notFound('Call');
  if (call.status !== 'in_progress' || !call.room_name) throw conflict(`The call is not in progress (status ${call.status})`, { status: call.status });
  return call;
}

/** Records one action: the call's supervision[] (and the worker's outbox), the audit log, `call.supervised`. */
export async function record(
  services: Services,
  auth: Auth,
  callId: string,
  action: SupervisionAction,
  details: Record<string, unknown>,
  meta: Meta,
  forWorker: Omit<WorkerSupervisionItem, 'seq'> | null = null,
): Promise<SupervisionEntry> {
  return services.sql.begin(async (tx) => {
    // Locked and checked again: the call may have ended since the first look.
    const call = await getCallById(tx, callId, { lock: true });
    if (!call || call.org_id !== auth.orgId) throw notFound('Call');
    if (call.status !== 'in_progress' && action !== 'end' && action !== 'transfer') throw conflict(`The call is not in progress (status ${call.status})`, { status: call.status });
    // A takeover in force, read under the lock: a second takeover (or a say) is refused; a hand_back names the person.
    const rule = takeoverRule(action, call.supervision ?? []);
    if (rule instanceof HttpError) throw rule;
    const handedBack = action === 'hand_back' && rule ? rule.identity : null;
    const given = handedBack ? { identity: handedBack } : details;
    const work = handedBack ? { action: 'hand_back' as const, identity: handedBack } : forWorker;
    // The record's free text follows the call's data retention; the worker's outbox gets the text as given.
    const retention = await retentionOfCall(tx, callId);
    const kept = 'text' in given ? { ...given, text: retainFreeText(retention, given.text as string) } : given;
    const actorType = ACTOR_TYPES.has(auth.actorType) ? (auth.actorType as 'api_key' | 'user') : 'api_key';
    const entry = await appendSupervision(tx, callId, { action, actor_type: actorType, actor_id: auth.actorId, at: new Date().toISOString(), details: kept }, work);
    await writeAudit(tx, {
      orgId: auth.orgId,
      actorType: auth.actorType,
      actorId: auth.actorId,
      action: `call.supervise.${action}`,
      resourceType: 'call',
      resourceId: callId,
      requestId: meta.requestId,
      ip: meta.ip,
      details: { seq: entry.seq, ...Object.fromEntries(Object.entries(kept).filter(([k]) => k !== 'text')) },
    });
    await emitCallEvent(tx, call, {
      orgId: call.org_id,
      type: 'call.supervised',
      callId: call.id,
      agentId: call.agent_id,
      webhookUrl: call.webhook_url,
      payload: { call_id: call.id, agent_id: call.agent_id, ...entry },
    });
    return entry;
  });
}

/**
 * Nudges the call's agent participants: a data message from the server (no sender participant) on
 * SUPERVISION_TOPIC, addressed to them only, so the caller never sees it. It carries only the seq; the worker takes
 * the actions from the internal API. Best effort: a lost nudge is made up by the next one.
 */
export async function nudgeWorker(services: Services, room: string, seq: number): Promise<boolean> {
  const { livekit, log } = services;
  try {
    const agents = (await livekit.rooms.listParticipants(room)).filter((p) => p.kind === 4 /* ParticipantInfo_Kind.AGENT */).map((p) => p.identity);
    if (!agents.length) return false;
    const data = new TextEncoder().encode(JSON.stringify({ seq }));
    await livekit.rooms.sendData(room, data, DataPacket_Kind.RELIABLE, { destinationIdentities: agents, topic: SUPERVISION_TOPIC });
    return true;
  } catch (err) {
    log.warn({ err: (err as Error).message, room }, 'supervision nudge failed');
    return false;
  }
}

/** POST /v1/calls/{id}/control. */
export async function controlCall(services: Services, auth: Auth, callId: string, body: ControlCallRequest, meta: Meta): Promise<ControlCallResult> {
  const call = await liveCall(services.sql, auth, callId);
  const bad = problems(body);
  if (bad.length) throw new ValidationFailure(bad);
  const { action } = body;
  if (action === 'end') {
    const entry = await record(services, auth, callId, 'end', {}, meta);
    await stopCall(services, auth, callId, meta);
    return { call_id: callId, supervision: entry };
  }
  if (action === 'transfer') {
    // The transfer_call tool's own path (blind): destination policy, daily spend cap, a priced call_transfers row.
    const result = await startBlindTransfer(services, callId, body.destination!);
    const details = { destination: body.destination, status: result.status, message: result.message, transfer_id: result.transfer_id };
    return { call_id: callId, supervision: await record(services, auth, callId, 'transfer', details, meta) };
  }
  if (action === 'takeover') {
    // The person's identity is fixed before the locked check; the token is made only once the takeover has won.
    const person = newTakeover(services);
    const entry = await record(services, auth, callId, 'takeover', person, meta, { action: 'takeover', identity: person.identity });
    const takeover = await takeoverToken(services, call.room_name!, person);
    await nudgeWorker(services, call.room_name!, entry.seq);
    return { call_id: callId, supervision: entry, takeover };
  }
  if (action === 'hand_back') {
    const entry = await record(services, auth, callId, 'hand_back', {}, meta);
    // Out of the room first (their voice stops reaching the caller), then the worker resumes the agent.
    await removePerson(services, call.room_name!, String(entry.details.identity));
    await nudgeWorker(services, call.room_name!, entry.seq);
    return { call_id: callId, supervision: entry };
  }
  const when = action === 'say' ? (body.when ?? 'after_current') : undefined;
  const details = { ...(body.text !== undefined ? { text: body.text } : {}), ...(when ? { when } : {}) };
  const item = { action, ...(body.text !== undefined ? { text: body.text } : {}), ...(when ? { when } : {}) };
  const entry = await record(services, auth, callId, action, details, meta, item);
  await nudgeWorker(services, call.room_name!, entry.seq);
  return { call_id: callId, supervision: entry };
}

/** POST /v1/calls/{id}/listen: a hidden, subscribe-only participant's token for the call's room. */
export async function listenToCall(services: Services, auth: Auth, callId: string, meta: Meta): Promise<ListenResult> {
  const call = await liveCall(services.sql, auth, callId);
  const identity = `supervisor-${randomUUID()}`;
  const ttl = services.config.LISTEN_TOKEN_TTL_SECONDS;
  const token = await services.livekit.listenToken(call.room_name!, identity, ttl);
  const expiresAt = new Date(Date.now() + ttl * 1000).toISOString();
  await record(services, auth, callId, 'listen', { identity, expires_at: expiresAt }, meta);
  // The stream's single-use ticket, for the same time (listen-stream.ts).
  const streamUrl = await listenStreamUrl(services, auth, callId, new Date(expiresAt));
  return { call_id: callId, server_url: services.livekit.publicUrl, participant_token: token, identity, expires_at: expiresAt, stream_url: streamUrl };
}
