// A call's models, made from its config: around the agent's STT, LLM and TTS (built when the call opens, so that
// one that cannot be built fails the call at once: setup-failure.ts), the process's prewarmed VAD with this agent's
// silence, the turn detector turn_taking asks for, and a squad member's own models. And the audio format of a
// phone leg.
import { type JobContext, inference, llm as agentsLlm, type voice } from '@livekit/agents';
import type { CallConfig, SquadMemberConfig } from '../../../schemas/internal.ts';
import { LocalTTS, createLLM, createSTT, createTTS } from '../providers/index.ts';
import { createRealtimeModel, isRealtime } from '../providers/realtime.ts';
import { deferPrewarm } from '../session/deferred-prewarm.ts';
import type { CallModels } from './setup-failure.ts';
import { vadSilenceFor } from '../session/mappings.ts';
import { TranscriptTurnDetector } from '../session/transcript-turn-detector.ts';

/** Phone legs are G.711 at 8 kHz: the agent publishes at that rate (see CallSessionOptions.outputSampleRate). */
export const PHONE_SAMPLE_RATE = 8000;

/** The longest the model's warm-up waits for the greeting to play (a slow start, or a greeting never said). */
const LLM_PREWARM_HOLD_MAX_MS = 2000;

export interface CallModelSet extends CallModels {
  vad: inference.VAD;
  /** Lets the LLM's connection warm up: a call that greets first holds it until the greeting plays. */
  releaseLlmPrewarm: () => void;
}

/** The call's models around its LLM, STT and TTS, which were built when the call opened (setup-failure.ts). */
export function callModels(ctx: JobContext, config: CallConfig, built: CallModels): CallModelSet {
  const { stt, tts, llm, sideLlm } = built;
  // A call that greets first warms the model's connection once the greeting plays, not beside it (deferred-prewarm.ts).
  const greetsFirst = config.call.type !== 'outbound' && !!config.agent.first_message?.trim();
  // A realtime model connects when the session starts: nothing to warm.
  const releaseLlmPrewarm = greetsFirst && llm instanceof agentsLlm.LLM ? deferPrewarm(llm, LLM_PREWARM_HOLD_MAX_MS) : () => {};
  // Festival loads its voice (~0.4 s) in a spare process while the room and the session start.
  if (tts instanceof LocalTTS) tts.prewarm();
  const vad = (ctx.proc.userData.vad as inference.VAD | undefined) ?? new inference.VAD();
  // A job process serves one call at a time, so the prewarmed VAD takes this agent's silence (mappings.ts).
  vad.updateOptions({ minSilenceDuration: vadSilenceFor(config.agent.turn_taking) });
  return { stt, tts, llm, sideLlm: sideLlm ?? null, vad, releaseLlmPrewarm };
}

/**
 * A squad member's models (session/squad.ts). A realtime member is its model alone: it hears and speaks itself. A
 * pipeline member keeps the session's STT unless its transcriber differs, or the session has none (a realtime entry
 * agent), and always has its own TTS.
 */
export function memberModels(m: SquadMemberConfig, config: CallConfig, env: Record<string, string | undefined> = process.env) {
  const keys = config.provider_keys;
  if (isRealtime(m.llm)) return { llm: createRealtimeModel(m.llm, keys, env) };
  const tts = createTTS(m.agent.tts, keys, { speed: m.agent.speed, emotions: m.agent.emotions, language: m.agent.language });
  if (tts instanceof LocalTTS) tts.prewarm();
  const sessionStt = !isRealtime(config.llm) && JSON.stringify(m.agent.transcriber) === JSON.stringify(config.agent.transcriber);
  return { llm: createLLM(m.llm, keys), tts, ...(sessionStt ? {} : { stt: createSTT(m.agent.transcriber, keys) }) };
}

/** The turn detector of turn_taking.detection: the local end-of-turn model, the transcript rules, the STT's own (Flux), or Silero alone. */
export function turnDetectorFor(detection: CallConfig['agent']['turn_taking']['detection']): NonNullable<voice.AgentSessionOptions['turnDetection']> {
  if (detection === 'model') return new inference.TurnDetector({ version: 'v1-mini' });
  if (detection === 'transcript') return new TranscriptTurnDetector();
  if (detection === 'stt') return 'stt';
  return 'vad';
}
