// A call's first step in the worker: which call this job serves, its room joined, its config, and its agent's LLM,
// STT and TTS (a call whose agent cannot be built fails here, at once: setup-failure.ts). Web and outbound calls
// are named by the dispatch; a standby agent was given its call; an inbound SIP call is opened with the control
// plane, which checks the room, trunk and rule against the dialled number. An outbound call is open once the
// callee answers.
import type { JobContext } from '@livekit/agents';
import { ParticipantKind, RoomEvent, type RemoteParticipant, type Room } from '@livekit/rtc-node';
import { RoomServiceClient } from 'livekit-server-sdk';
import type { CallConfig } from '../../../schemas/internal.ts';
import type { InternalApiClient } from '../../../shared/internal-api.ts';
import type { Logger } from '../../../shared/logger.ts';
import { ROOM_OUTPUT_DEFAULTS, dropEarlyTrack, publishEarlyTrack } from '../session/early-track.ts';
import type { MetricsSink } from '../session/metrics-sink.ts';
import type { StartTimeline } from '../session/start-timeline.ts';
import { callIdFromMetadata, capabilityFromJobMetadata } from './job-metadata.ts';
import { PHONE_SAMPLE_RATE } from './models.ts';
import type { CallEndWatch } from './room-end.ts';
import { type StandbyCall, joinCallRoom } from './standby.ts';
import { CallSetupError, buildCallModels, failCallSetup, type CallModels } from './setup-failure.ts';

/** Longest wait for an outbound callee to answer; the control plane's ring timeout (at most 120 s) ends it first. */
const OUTBOUND_ANSWER_WAIT_MS = 150_000;

/** The LiveKit server's API: its http URL and key, for the room actions and a refused inbound call's room. */
export interface LivekitAccess {
  url: string;
  key: string;
  secret: string;
}

/** What each step of a call gets from the job. */
export interface CallDeps {
  api: InternalApiClient;
  metrics: MetricsSink;
  livekit: LivekitAccess;
  /** The call a standby agent was given: its room is joined, its capability and config are here. */
  standbyCall: StandbyCall | null;
  /** The worker's logger (a call's own lines are bound to its call id). */
  log: Logger;
}

/** A call this job serves, with its config; its room is joined, or (a standby agent's inbound call) joining. */
export interface OpenedCall {
  callId: string;
  capability: string | null;
  config: CallConfig;
  /** The job's room. */
  room: Room;
  /** A standby agent's inbound call: the caller's room, joined while the session is built. */
  joining: Promise<Room> | null;
  /** The caller's SIP participant (inbound), or the callee once answered (outbound). */
  participant: RemoteParticipant | null;
  /** The agent's LLM, STT and TTS, built as soon as the config came (setup-failure.ts). */
  models: CallModels;
}

/** Opens the call, or says why this job has none (`stopped`: the job's end reason). */
export async function openCall(
  ctx: JobContext,
  timeline: StartTimeline,
  deps: CallDeps,
  onCallId: (callId: string) => void,
  closing: CallEndWatch,
): Promise<OpenedCall | { stopped: string }> {
  const { api, standbyCall, log } = deps;
  // Web and outbound calls name the call in the dispatch: its config is fetched while the room connects. A
  // standby agent's call came with its config.
  const dispatchedId = standbyCall?.call_id ?? callIdFromMetadata(ctx.job.metadata, ctx.job.room?.metadata);
  const dispatchedCapability = standbyCall?.capability ?? capabilityFromJobMetadata(ctx.job.metadata);
  if (dispatchedId && dispatchedCapability) api.setCapability(dispatchedId, dispatchedCapability);
  const earlyConfig = standbyCall ? Promise.resolve(standbyCall.config) : dispatchedId ? api.getConfig(dispatchedId) : null;
  // Awaited below; a failure then is the call's, not an unhandled rejection now.
  earlyConfig?.catch(() => {});

  const connected = (r: Room) => {
    timeline.mark('connected');
    // The agent's audio plays once the caller has subscribed to it (agents-js waits for that).
    if (r.remoteParticipants.size > 0) timeline.mark('caller_present');
    r.once(RoomEvent.ParticipantConnected, () => timeline.mark('caller_present'));
    r.once(RoomEvent.LocalTrackSubscribed, () => timeline.mark('audio_subscribed'));
  };
  // A standby agent's inbound call: the caller's room is joined (~0.15 s) while the session is built and the
  // greeting synthesized, and awaited only before the session starts. Every other call's room is joined first.
  const joining = standbyCall?.join ? joinFromStandby(ctx, standbyCall.join, standbyCall.config, connected, log) : null;
  joining?.catch(() => {});
  const room: Room = ctx.room;
  if (!joining) {
    await ctx.connect();
    connected(room);
  }
  // The job's room (a standby agent's is joined already): its close ends the call from here on.
  closing.watch(room);
  // The room's own metadata, now readable, can name the call where the dispatch did not.
  let callId = dispatchedId ?? callIdFromMetadata(ctx.job.metadata, ctx.job.room?.metadata, room.metadata);
  // Web and outbound calls: the dispatch brings the call's capability; inbound calls get it from the open.
  let capability = dispatchedCapability;
  if (!dispatchedId && callId && capability) api.setCapability(callId, capability);
  let participant: RemoteParticipant | null = null;
  let inboundConfig: CallConfig | null = null;
  if (!callId) {
    // Inbound SIP: a number's dispatch rule made the room.
    const first = await Promise.race([ctx.waitForParticipant(), closing.closed.then(() => null)]);
    if (!first) return { stopped: 'room closed' };
    participant = first;
    if (participant.kind !== ParticipantKind.SIP) {
      log.error({ room: room.name }, 'job without call id');
      return { stopped: 'no call id' };
    }
    const opened = await openInbound(room, participant, deps);
    if ('stopped' in opened) return opened;
    ({ callId, capability, config: inboundConfig } = opened);
  }

  onCallId(callId);
  const config = inboundConfig ?? (earlyConfig && callId === dispatchedId ? await earlyConfig : await api.getConfig(callId));
  timeline.mark('config');
  // The config brings the call's capability (a dispatch carries only a ticket that opens the config, once).
  if (config.capability) {
    capability = config.capability;
    api.setCapability(callId, capability);
  }
  // The agent's models first: a call that cannot have them fails now, with its cause, before an outbound call
  // rings and instead of a dispatch timeout (setup-failure.ts).
  let models: CallModels;
  try {
    models = buildCallModels(config);
  } catch (err) {
    if (!(err instanceof CallSetupError)) throw err;
    return { stopped: await failCallSetup(err, { reporter: api.reporter(callId), logger: log.child({ call_id: callId }) }) };
  }
  if (config.call.type === 'outbound') {
    // The control plane places the call after dispatching this job: the session starts when the callee
    // answers, so the agent's timers and greeting run from the answer, not from the ringing.
    participant = await waitForAnswer(room, OUTBOUND_ANSWER_WAIT_MS);
    if (!participant) {
      // Not answered (busy, no answer, stopped): the control plane records why. Nothing to report here.
      log.info({ call_id: callId, room: room.name }, 'outbound call not answered');
      return { stopped: 'not answered' };
    }
  }
  return { callId, capability, config, room, joining, participant, models };
}

/**
 * The control plane checks the room, trunk and rule against the dialled number, routes the call and opens it.
 * Refused, the room is deleted: the SIP bridge then answers the INVITE with a final 486.
 */
async function openInbound(
  room: Room,
  participant: RemoteParticipant,
  deps: CallDeps,
): Promise<{ callId: string; capability: string | null; config: CallConfig | null } | { stopped: string }> {
  const attrs = participant.attributes ?? {};
  try {
    const opened = await deps.api.openInbound({
      to_number: attrs['sip.trunkPhoneNumber'] ?? '',
      from_number: attrs['sip.phoneNumber'] ?? null,
      room_name: room.name ?? '',
      // The SIP Call-ID of the INVITE (sip.callID is LiveKit's own call id).
      sip_call_id: attrs['sip.callIDFull'] ?? attrs['sip.callID'] ?? null,
      // Set by LiveKit from the trunk the bridge matched and the rule that made the room: the control plane
      // opens the call only when both, and the room, are the dialled number's own.
      trunk_id: attrs['sip.trunkID'] ?? '',
      dispatch_rule_id: attrs['sip.ruleID'] ?? '',
      // The carrier account header of the INVITE, mapped by the number's trunk (issue 50, item 9).
      carrier_account: attrs['vap.carrier_account'] ?? null,
    });
    return { callId: opened.call_id, capability: opened.capability, config: opened.config ?? null };
  } catch (err) {
    // Refused (unknown or inactive number, no agent, limits) or the control plane is unreachable. Deleting the
    // room while the call still rings makes the SIP bridge answer the INVITE with a final 486; leaving it
    // would let the caller ring until the trunk's ringing timeout.
    const reason = (err as { body?: { reason?: string } }).body?.reason ?? (err as Error).message;
    deps.log.info({ room: room.name, to: attrs['sip.trunkPhoneNumber'], reason }, 'inbound call refused');
    // This job came too late: the control plane gave the call to the number's fallback agent, whose job is
    // in the room. Leave it be.
    if (reason === 'answered_elsewhere') return { stopped: 'inbound call answered elsewhere' };
    // The room's call was opened before (by a job that has it): its config goes out once. Leave the room be.
    if (reason === 'already_opened') return { stopped: 'inbound call already opened' };
    const { url, key, secret } = deps.livekit;
    await new RoomServiceClient(url, key, secret).deleteRoom(room.name ?? '').catch(() => {});
    return { stopped: 'inbound call refused' };
  }
}

/**
 * A standby agent's inbound call: the caller's room joined, and the agent's audio track moved there, in the format
 * the session's output will use on a phone leg (so the session takes it, and the SIP bridge subscribes while the
 * session starts rather than after).
 */
async function joinFromStandby(ctx: JobContext, join: { room_name: string; token: string }, config: CallConfig, onConnected: (room: Room) => void, log: Logger): Promise<Room> {
  const room = await joinCallRoom(ctx, join);
  onConnected(room);
  // The standby room's track comes down, and the call room's is published, while the session starts: the session
  // takes the new track as it is (publishEarlyTrack), so its start does not wait for the publication (~80 ms).
  void dropEarlyTrack();
  const format = { ...ROOM_OUTPUT_DEFAULTS, ...(config.call.type === 'web' ? {} : { sampleRate: PHONE_SAMPLE_RATE }) };
  void publishEarlyTrack(room, format).catch((err: unknown) => log.warn({ room: join.room_name, err: (err as Error).message }, 'early audio track not published'));
  return room;
}

/** The SIP participant of an outbound call once answered (`sip.callStatus` active); null if the room closes first. */
function waitForAnswer(room: Room, timeoutMs: number): Promise<RemoteParticipant | null> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const finish = (p: RemoteParticipant | null) => {
      clearTimeout(timer);
      room.off(RoomEvent.ParticipantConnected, check);
      room.off(RoomEvent.ParticipantAttributesChanged, check);
      room.off(RoomEvent.Disconnected, gone);
      resolve(p);
    };
    const check = () => {
      for (const p of room.remoteParticipants.values()) {
        if (p.kind === ParticipantKind.SIP && (p.attributes?.['sip.callStatus'] ?? 'active') === 'active') {
          finish(p);
          return;
        }
      }
    };
    const gone = () => finish(null);
    room.on(RoomEvent.ParticipantConnected, check);
    room.on(RoomEvent.ParticipantAttributesChanged, check);
    room.on(RoomEvent.Disconnected, gone);
    timer = setTimeout(gone, timeoutMs);
    check();
  });
}
