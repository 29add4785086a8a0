// The job side of the worker: one call per job (agents-js runs each job in its own process). Reads the
// call id from the dispatch or room metadata, fetches the call's resolved config from the control plane,
// runs the CallSession in the room, and reports back. See docs/internal-api.md.
import { type JobContext, type JobProcess, defineAgent, inference, telemetry, voice } from '@livekit/agents';
import { ParticipantKind, RoomEvent, type RemoteParticipant, type Room } from '@livekit/rtc-node';
import { RoomServiceClient, SipClient } from 'livekit-server-sdk';
import { InternalApiClient } from '../../shared/internal-api.ts';
import type { CallConfig, SquadMemberConfig } from '../../schemas/internal.ts';
import { createLogger } from '../../shared/logger.ts';
import { KeypadCollector } from './session/keypad.ts';
import { loadWorkerConfig } from './config.ts';
import { callIdFromMetadata, capabilityFromJobMetadata } from './worker-metadata.ts';
import { type MetricsSink, PushMetricsSink, nullSink } from './metrics.ts';
import { type StandbyCall, joinCallRoom, standByInRoom, standbyRoomOf } from './standby.ts';
import { LocalTTS, createLLM, createSTT, createTTS, inputSampleRateFor } from './providers/index.ts';
import { LocalSTT } from '../../shared/speech/local-stt.ts';
import { ambientFrames, isAmbientSound } from './session/background.ts';
import { CallSession } from './session/call-session.ts';
import { vadSilenceFor } from './session/mappings.ts';
import { TranscriptTurnDetector } from './session/transcript-turn-detector.ts';
import { publishTurnMetrics } from './session/room-metrics.ts';
import { hangUpRoom } from './session/hang-up.ts';
import { warmTransfer } from './session/warm-transfer.ts';
import { RoomRecorder } from './recording/room-recorder.ts';
import { SpanKind, contextFrom, inSpan, initTracing } from '../../shared/tracing.ts';
import { StartTimeline } from './session/start-timeline.ts';
import { deferPrewarm } from './session/deferred-prewarm.ts';
import { keepFfiLogsNative } from '../../shared/ffi-logs.ts';
import { ROOM_OUTPUT_DEFAULTS, dropEarlyTrack, publishEarlyTrack } from './session/early-track.ts';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { settleHeap } from './session/settle-heap.ts';

const log = createLogger('media-worker');

const DTMF_CODES: Record<string, number> = { '*': 10, '#': 11, A: 12, B: 13, C: 14, D: 15 };
/** Keypad digits pressed within this gap of each other are one entry. */

/** Longest wait for an outbound callee to answer; the control plane's ring timeout (at most 120 s) ends it first. */
const OUTBOUND_ANSWER_WAIT_MS = 150_000;
/** Phone legs are G.711 at 8 kHz: the agent publishes at that rate (see CallSessionOptions.outputSampleRate). */
const PHONE_SAMPLE_RATE = 8000;

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

/** A squad member's models (session/squad.ts). The session's STT stays unless the member's transcriber differs. */
function memberModels(m: SquadMemberConfig, config: CallConfig, keys: CallConfig['provider_keys']) {
  const tts = createTTS(m.agent.tts, keys, { speed: m.agent.speed, emotions: m.agent.emotions, language: m.agent.language });
  if (tts instanceof LocalTTS) tts.prewarm();
  const sameStt = JSON.stringify(m.agent.transcriber) === JSON.stringify(config.agent.transcriber);
  return { llm: createLLM(m.llm, keys), tts, ...(sameStt ? {} : { stt: createSTT(m.agent.transcriber, keys) }) };
}

/** `traceparent` of the dispatch (or room) metadata: the control plane's `call.dispatch` span. */
function traceParentOf(...sources: (string | undefined | null)[]): Record<string, unknown> | null {
  for (const raw of sources) {
    try {
      const v = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
      if (typeof v?.traceparent === 'string') return v;
    } catch {
      // not JSON
    }
  }
  return null;
}

/**
 * The job, in a `call.job` span that continues the control plane's trace, so agents-js's own spans (session,
 * turns, STT/LLM/TTS, tool calls) and the reports back to the control plane all join the call's trace.
 */
async function entry(ctx: JobContext): Promise<void> {
  const tracing = initTracing('vap-media-worker');
  if (tracing.provider) telemetry.setTracerProvider(tracing.provider);
  const parent = contextFrom(traceParentOf(ctx.job.metadata, ctx.job.room?.metadata));
  let reason = 'call ended';
  try {
    reason = await inSpan(
      'call.job',
      { kind: SpanKind.CONSUMER, parent, attributes: { 'livekit.job_id': ctx.job.id, 'livekit.room': ctx.job.room?.name ?? '' } },
      (span) => runCall(ctx, (callId) => span.setAttribute('vap.call_id', callId)),
    );
  } finally {
    await tracing.flush().catch(() => {});
  }
  ctx.shutdown(reason);
}

/** The longest the model's warm-up waits for the greeting to play (a slow start, or a greeting never said). */
const LLM_PREWARM_HOLD_MAX_MS = 2000;

async function runCall(ctx: JobContext, onCallId: (callId: string) => void): Promise<string> {
  const cfg = loadWorkerConfig();
  const api = new InternalApiClient({
    baseUrl: cfg.controlPlaneUrl,
    token: cfg.workerToken,
    workerId: ctx.workerId,
    onReportFailed: ({ callId, kind, seq, error }) => log.error({ call_id: callId, kind, seq, err: (error as Error)?.message }, 'report failed'),
  });
  const metrics = process.env.VAP_METRICS_PUSH_URL ? new PushMetricsSink(process.env.VAP_METRICS_PUSH_URL) : nullSink;
  // A standby agent joins its room and waits there for a call (standby.ts); the call's clock starts when it comes.
  const standbyRoom = standbyRoomOf(ctx.job.metadata);
  const standbyCall = standbyRoom ? await standBy(ctx, api, metrics, standbyRoom) : null;
  if (standbyRoom && !standbyCall) return 'standby released';
  // The call's first seconds, logged once (with the call id) when they have passed or the call ended first.
  const timeline = new StartTimeline();
  try {
    return await runTimedCall(ctx, onCallId, timeline, { cfg, api, metrics, standbyCall });
  } finally {
    timeline.finish();
  }
}

/** Joins the standby room and waits for its call; null when the room is released or closes first. */
async function standBy(ctx: JobContext, api: InternalApiClient, metrics: MetricsSink, room: string): Promise<StandbyCall | null> {
  const logger = log.child({ room });
  try {
    return await standByInRoom(ctx, api, room, {
      logger,
      // The agent's audio track, published now: the caller subscribes as they join (session/early-track.ts).
      onJoined: async () => {
        await publishEarlyTrack(ctx.room).catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'early audio track not published'));
        metrics.standby?.(ctx.job.id, true);
        // The join's garbage collected now, not in the call's first seconds (session/settle-heap.ts).
        settleHeap();
        logger.info('standby agent waiting for a call');
      },
    });
  } finally {
    metrics.standby?.(ctx.job.id, false);
  }
}

/**
 * A standby agent's inbound call: the caller's room joined, and the agent's audio track moved there, in the format
 * the session's output will use on a phone leg (so the session takes it, and the SIP bridge subscribes while the
 * session starts rather than after).
 */
async function joinFromStandby(ctx: JobContext, join: { room_name: string; token: string }, config: CallConfig, onConnected: (room: Room) => void): Promise<Room> {
  const room = await joinCallRoom(ctx, join);
  onConnected(room);
  // The standby room's track comes down, and the call room's is published, while the session starts: the session
  // takes the new track as it is (publishEarlyTrack), so its start does not wait for the publication (~80 ms).
  void dropEarlyTrack();
  const format = { ...ROOM_OUTPUT_DEFAULTS, ...(config.call.type === 'web' ? {} : { sampleRate: PHONE_SAMPLE_RATE }) };
  void publishEarlyTrack(room, format).catch((err: unknown) => log.warn({ room: join.room_name, err: (err as Error).message }, 'early audio track not published'));
  return room;
}

interface CallDeps {
  cfg: ReturnType<typeof loadWorkerConfig>;
  api: InternalApiClient;
  metrics: MetricsSink;
  /** The call a standby agent was given: its room is joined, its capability and config are here. */
  standbyCall: StandbyCall | null;
}

async function runTimedCall(ctx: JobContext, onCallId: (callId: string) => void, timeline: StartTimeline, deps: CallDeps): Promise<string> {
  const { cfg, api, metrics, standbyCall } = deps;

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
  const joining = standbyCall?.join ? joinFromStandby(ctx, standbyCall.join, standbyCall.config, connected) : null;
  joining?.catch(() => {});
  let room: Room = ctx.room;
  if (!joining) {
    await ctx.connect();
    connected(room);
  }
  // The room's own metadata, now readable, can name the call where the dispatch did not.
  let callId = dispatchedId ?? callIdFromMetadata(ctx.job.metadata, ctx.job.room?.metadata, room.metadata);
  // Web and outbound calls: the dispatch brings the call's capability; inbound calls get it from the open.
  let capability = dispatchedCapability;
  if (!dispatchedId && callId && capability) api.setCapability(callId, capability);
  let participant: RemoteParticipant | null = null;
  let inboundConfig: CallConfig | null = null;
  if (!callId) {
    // Inbound SIP: a number's dispatch rule made the room; the control plane checks the room, trunk and rule
    // against the dialled number, routes it and opens the call.
    participant = await ctx.waitForParticipant();
    const attrs = participant.attributes ?? {};
    if (participant.kind !== ParticipantKind.SIP) {
      log.error({ room: room.name }, 'job without call id');
      return 'no call id';
    }
    try {
      const opened = await api.openInbound({
        to_number: attrs['sip.trunkPhoneNumber'] ?? '',
        from_number: attrs['sip.phoneNumber'] ?? null,
        room_name: room.name ?? '',
        // The SIP Call-ID of the INVITE (sip.callID is LiveKit's own call id).
        sip_call_id: attrs['sip.callIDFull'] ?? attrs['sip.callID'] ?? null,
        // Set by LiveKit from the trunk the bridge matched and the rule that made the room: the control plane
        // opens the call only when both, and the room, are the dialled number's own.
        trunk_id: attrs['sip.trunkID'] ?? '',
        dispatch_rule_id: attrs['sip.ruleID'] ?? '',
      });
      callId = opened.call_id;
      capability = opened.capability;
      inboundConfig = opened.config ?? null;
    } catch (err) {
      // Refused (unknown or inactive number, no agent, limits) or the control plane is unreachable. Deleting the
      // room while the call still rings makes the SIP bridge answer the INVITE with a final 486; leaving it
      // would let the caller ring until the trunk's ringing timeout.
      const reason = (err as { body?: { reason?: string } }).body?.reason ?? (err as Error).message;
      log.info({ room: room.name, to: attrs['sip.trunkPhoneNumber'], reason }, 'inbound call refused');
      // This job came too late: the control plane gave the call to the number's fallback agent, whose job is
      // in the room. Leave it be.
      if (reason === 'answered_elsewhere') return 'inbound call answered elsewhere';
      await new RoomServiceClient(cfg.livekitUrl.replace(/^ws/, 'http'), cfg.livekitApiKey, cfg.livekitApiSecret).deleteRoom(room.name ?? '').catch(() => {});
      return 'inbound call refused';
    }
  }

  onCallId(callId);
  const config = inboundConfig ?? (earlyConfig && callId === dispatchedId ? await earlyConfig : await api.getConfig(callId));
  timeline.mark('config');
  if (config.call.type === 'outbound') {
    // The control plane places the call after dispatching this job: the session starts when the callee
    // answers, so the agent's timers and greeting run from the answer, not from the ringing.
    participant = await waitForAnswer(room, OUTBOUND_ANSWER_WAIT_MS);
    if (!participant) {
      // Not answered (busy, no answer, stopped): the control plane records why. Nothing to report here.
      log.info({ call_id: callId, room: room.name }, 'outbound call not answered');
      return 'not answered';
    }
  }
  const logger = log.child({ call_id: callId });
  void timeline.closed.then((t) => {
    logger.info({ call_type: config.call.type, ...t }, 'call start timeline');
    metrics.startLoopBlocks?.(config.call.type, t.loop_blocks.length);
  });
  const keys = config.provider_keys;
  // The control plane resolves the transcriber's language (its own, else the agent's) before it gets here.
  const stt = createSTT(config.agent.transcriber, keys);
  const tts = createTTS(config.agent.tts, keys, { speed: config.agent.speed, emotions: config.agent.emotions, language: config.agent.language });
  const llm = createLLM(config.llm, keys);
  // A call that greets first warms the model's connection once the greeting plays, not beside it (deferred-prewarm.ts).
  const greetsFirst = config.call.type !== 'outbound' && !!config.agent.first_message?.trim();
  const releaseLlmPrewarm = greetsFirst ? deferPrewarm(llm, LLM_PREWARM_HOLD_MAX_MS) : () => {};
  // Festival loads its voice (~0.4 s) in a spare process while the room and the session start.
  if (tts instanceof LocalTTS) tts.prewarm();
  const vad = (ctx.proc.userData.vad as inference.VAD | undefined) ?? new inference.VAD();
  // A job process serves one call at a time, so the prewarmed VAD takes this agent's silence (mappings.ts).
  vad.updateOptions({ minSilenceDuration: vadSilenceFor(config.agent.turn_taking) });
  const livekit = { url: cfg.livekitUrl.replace(/^ws/, 'http'), key: cfg.livekitApiKey, secret: cfg.livekitApiSecret };
  // The call's start is a chain of synchronous steps (models, session, greeting): the loop is let go between them,
  // so the room's audio and events are served in between rather than after one long block (start-timeline.ts).
  await yieldToLoop();

  const reporter = api.reporter(callId);
  // Set once a warm transfer joined the legs: the call goes on without the agent, so ending the session must not hang up.
  let joinedTransfer = false;
  const call = new CallSession({
    config,
    // The end-of-turn model only where the agent asks for it (turn_taking.detection).
    models: { stt, llm, tts, vad, turnDetection: turnDetectorFor(config.agent.turn_taking.detection) },
    labels: {
      stt: { provider: config.agent.transcriber.provider, model: stt.model },
      llm: { provider: config.llm.provider, model: config.llm.model },
      tts: { provider: config.agent.tts.provider, model: tts.model },
    },
    reporter,
    api,
    metrics,
    logger,
    // A squad's other agents speak with their own model and voice (and transcriber, where it differs).
    memberModels: (m) => memberModels(m, config, keys),
    inputSampleRate: inputSampleRateFor(config.agent.transcriber.provider),
    ...(config.call.type === 'web' ? {} : { outputSampleRate: PHONE_SAMPLE_RATE }),
    actions: {
      hangUp: async () => {
        if (joinedTransfer) return; // the legs talk on; the job's shutdown takes the agent out of the room
        await hangUpRoom({
          rooms: new RoomServiceClient(livekit.url, livekit.key, livekit.secret),
          room: room.name ?? '',
          callType: config.call.type,
          logger,
          metrics,
        });
      },
      transfer: async (destination) => {
        const p = participant ?? [...room.remoteParticipants.values()].find((x) => x.kind === ParticipantKind.SIP);
        if (!p) throw new Error('no SIP participant to transfer');
        const to = /^(tel|sip):/.test(destination) ? destination : `tel:${destination}`;
        await new SipClient(livekit.url, livekit.key, livekit.secret).transferSipParticipant(room.name ?? '', p.identity, to, { playDialtone: false });
      },
      warmTransfer: async (destination) => {
        const caller = participant ?? [...room.remoteParticipants.values()].find((x) => x.kind === ParticipantKind.SIP);
        if (!caller) return { ok: false, message: 'There is no phone line to transfer.' };
        const rooms = new RoomServiceClient(livekit.url, livekit.key, livekit.secret);
        const r = await warmTransfer(
          {
            room,
            caller,
            session: call.session,
            model: llm,
            updateSubscriptions: (identity, sids, subscribe) => rooms.updateSubscriptions(room.name ?? '', identity, sids, subscribe),
            dial: (to) => api.startTransfer(callId, { destination: to, mode: 'warm' }),
            report: async (transferId, state) => {
              await api.updateTransfer(callId, transferId, { state });
            },
            logger,
            sampleRate: PHONE_SAMPLE_RATE,
          },
          destination,
        );
        if (r.ok) joinedTransfer = true;
        return r;
      },
      sendDtmf: async (digits) => {
        for (const d of digits) {
          await room.localParticipant!.publishDtmf(DTMF_CODES[d] ?? Number(d), d);
          await new Promise((r) => setTimeout(r, 300));
        }
      },
    },
  });

  // The greeting's audio is made while the recorder and the session start.
  call.prepareGreeting();
  await yieldToLoop();

  // Each turn's latency, for the clients in the room (the web SDK's `metrics` event).
  call.turnMetrics.onTurn((t) => void publishTurnMetrics(room, t, logger));

  if (joining) room = await joining;

  // Both sides of the call, mixed into one WAV and uploaded to the session config's URL with the call's capability.
  // A `no_content` call keeps no recording, even if a control plane that does not know the mode asked for one.
  const uploadUrl = call.privacy.mode !== 'no_content' && config.recording.enabled ? config.recording.upload_url : undefined;
  const startRecorder = (url: string) =>
    RoomRecorder.start({ room, callId, callType: config.call.type, uploadUrl: url, ...(capability ? { capability } : {}), logger });
  // Recording consent `ask`: the recorder starts on the caller's yes, or never (session/recording-consent.ts).
  const recorder: Promise<RoomRecorder | null> = !uploadUrl
    ? Promise.resolve(null)
    : call.consent.waitsForAnswer
      ? call.consent.allowed
          .then((yes) => (yes && !call.endReason ? startRecorder(uploadUrl) : null))
          .catch((err: unknown) => {
            logger.warn({ err: (err as Error).message }, 'recording start failed');
            return null;
          })
      : startRecorder(uploadUrl);
  if (!call.consent.waitsForAnswer) await recorder;

  ctx.addShutdownCallback(async () => {
    if (!call.endReason) await call.end('worker_shutdown');
    await call.ended;
    await reporter.flush();
    await (await recorder)?.finish();
  });

  timeline.mark('session_built');
  const onSpeaking = (ev: voice.AgentStateChangedEvent) => {
    if (ev.newState !== 'speaking') return;
    call.session.off(voice.AgentSessionEventTypes.AgentStateChanged, onSpeaking);
    timeline.mark('first_audio');
    releaseLlmPrewarm();
    metrics.firstAudio?.(config.call.type, ctx.job.id, timeline.elapsedMs() / 1000);
  };
  call.session.on(voice.AgentSessionEventTypes.AgentStateChanged, onSpeaking);
  await call.start({ room, roomName: room.name });
  timeline.mark('session_started');

  // Keypad input on a phone leg: one user turn per entry (keypad.ts; the log counts the digits, never shows them).
  const keypad = new KeypadCollector({
    logger,
    onTurn: (pressed) => {
      if (call.endReason) return;
      call.session.generateReply({ userInput: `The caller pressed ${pressed.split('').join(' ')} on the keypad.` });
    },
  });
  room.on(RoomEvent.DtmfReceived, (_code, digit, from) => {
    if (from?.kind !== ParticipantKind.SIP) return;
    keypad.press(digit);
  });

  if (isAmbientSound(config.agent.background_sound)) {
    const player = new voice.BackgroundAudioPlayer({ ambientSound: { source: ambientFrames(config.agent.background_sound), volume: 0.6 } });
    await player.start({ room, agentSession: call.session }).catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'background sound failed'));
  }

  await call.ended;
  if (metrics instanceof PushMetricsSink) await metrics.flush();
  // The ended report must reach the control plane before the job process exits; the recording follows it.
  await reporter.flush();
  await (await recorder)?.finish();
  return 'call ended';
}

/** The turn detector of turn_taking.detection: the local end-of-turn model, the transcript rules, or Silero alone. */
function turnDetectorFor(detection: 'vad' | 'model' | 'transcript'): NonNullable<voice.AgentSessionOptions['turnDetection']> {
  if (detection === 'model') return new inference.TurnDetector({ version: 'v1-mini' });
  if (detection === 'transcript') return new TranscriptTurnDetector();
  return 'vad';
}

export default defineAgent({
  prewarm: async (proc: JobProcess) => {
    // Before any room: the media SDK's native logs stay out of the job's loop (ffi-logs.ts).
    if (!keepFfiLogsNative()) log.warn('the media SDK started before its logs could be left native: they are decoded on the loop');
    // Loads the Silero model once per process, before a call arrives.
    proc.userData.vad = new inference.VAD({ minSilenceDuration: 250 });
    // The local STT's recogniser, loaded while the process waits rather than beside the call's greeting.
    if (loadWorkerConfig().prewarmLocalStt) LocalSTT.prewarm({ language: 'en-US' });
    // What loading left collected now, while the process waits (session/settle-heap.ts).
    settleHeap();
  },
  entry,
});
