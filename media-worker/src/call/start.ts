// A call's start in the worker, once the call is open (open.ts): its models, its CallSession with the room's
// actions, the greeting synthesized while the rest starts, the recorder, and the session started in the room.
// The start is a chain of synchronous steps: the loop is let go between them, so the room's audio and events are
// served in between rather than after one long block (session/start-timeline.ts).
import { type JobContext, voice } from '@livekit/agents';
import type { Room } from '@livekit/rtc-node';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { InternalApiClient } from '../../../shared/internal-api.ts';
import type { Logger } from '../../../shared/logger.ts';
import { inputSampleRateFor } from '../providers/index.ts';
import { RoomRecorder } from '../recording/room-recorder.ts';
import { CallSession } from '../session/call-session.ts';
import { sideTaskLlm } from '../session/call-context.ts';
import { publishTurnMetrics } from '../session/room-metrics.ts';
import type { StartTimeline } from '../session/start-timeline.ts';
import { type CallEnding, endOnShutdown } from './end.ts';
import { PHONE_SAMPLE_RATE, callModels, memberModels, turnDetectorFor } from './models.ts';
import type { CallDeps, OpenedCall } from './open.ts';
import { roomActions } from './room-actions.ts';
import { type CallEndWatch, onCallerLeft } from './room-end.ts';

/** A call whose session has started in its room. */
export interface StartedCall extends CallEnding {
  room: Room;
  /** The internal API, with the call's capability (a supervisor's actions come from it). */
  api: InternalApiClient;
  /** The call's logger, bound to its call id. */
  logger: Logger;
}

/** The participant the session listens to, once it does (agents-js's RoomIO has no public accessor for it). */
function linkedIdentity(session: voice.AgentSession): string | undefined {
  return (session as unknown as { _roomIO?: { linkedParticipant?: { identity?: string } } })._roomIO?.linkedParticipant?.identity;
}

export async function startCall(ctx: JobContext, opened: OpenedCall, timeline: StartTimeline, deps: CallDeps, closing: CallEndWatch): Promise<StartedCall> {
  const { callId, capability, config, joining, participant, models } = opened;
  const { api, metrics } = deps;
  let room = opened.room;
  const logger = deps.log.child({ call_id: callId });
  void timeline.closed.then((t) => {
    logger.info({ call_type: config.call.type, ...t }, 'call start timeline');
    metrics.startLoopBlocks?.(config.call.type, t.loop_blocks.length);
  });
  const { stt, tts, llm, sideLlm, vad, releaseLlmPrewarm } = callModels(ctx, config, models);
  await yieldToLoop();

  const reporter = api.reporter(callId);
  const call: CallSession = new CallSession({
    config,
    // The end-of-turn model only where the agent asks for it (turn_taking.detection).
    models: { stt, llm, tts, vad, turnDetection: turnDetectorFor(config.agent.turn_taking.detection), sideLlm },
    // A realtime model is the call's STT, LLM and TTS at once: its labels stand for all three.
    labels: {
      stt: stt ? { provider: config.agent.transcriber.provider, model: stt.model } : { provider: config.llm.provider, model: config.llm.model },
      llm: { provider: config.llm.provider, model: config.llm.model },
      tts: tts ? { provider: config.agent.tts.provider, model: tts.model } : { provider: config.llm.provider, model: config.llm.model },
    },
    reporter,
    api,
    metrics,
    logger,
    // A squad's other agents speak with their own model and voice (and transcriber, where it differs).
    memberModels: (m) => memberModels(m, config),
    inputSampleRate: inputSampleRateFor(config.agent.transcriber.provider),
    ...(config.call.type === 'web' ? {} : { outputSampleRate: PHONE_SAMPLE_RATE }),
    actions: roomActions({ callId, callType: config.call.type, room: () => room, participant, session: () => call.session, model: sideTaskLlm({ llm, sideLlm }), logger, deps }),
  });

  // The room closing (a stop through the API deletes it) or the job shutting down ends the call, at whatever step
  // of its start it is: a session not started yet is not started (call-session.ts).
  void closing.closed.then((c) => call.end(c.reason, c.error, c.at));

  // The greeting's audio is made while the recorder and the session start.
  call.prepareGreeting();
  await yieldToLoop();

  // Each turn's latency, for the clients in the room (the web SDK's `metrics` event).
  call.turnMetrics.onTurn((t) => void publishTurnMetrics(room, t, logger));

  if (joining) room = await joining;
  closing.watch(room);
  // The caller's leave ends the call at that moment (a SIP BYE, a web caller leaving): room-end.ts.
  const offCallerLeft = onCallerLeft(room, () => linkedIdentity(call.session) ?? participant?.identity, (at) => void call.end('user_hangup', undefined, at));
  void call.ended.then(offCallerLeft);

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

  endOnShutdown(ctx, { call, reporter, recorder });

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
  return { call, reporter, recorder, room, logger, api };
}
