// A realtime (speech-to-speech) model's turns, measured as the pipeline's are, so dashboards compare both
// (docs/guides/agents-and-turn-taking.md, "Realtime models"). agents-js gives a realtime reply no voice-to-voice
// figure (ChatMessage.metrics.e2eLatency is the pipeline's); here it is, from the same two ends:
//  - the caller's end of speech: the session's own VAD (Silero, on the caller's audio), its end-of-speech event
//    less the silence it waited for, so neither the provider's turn detection nor the VAD's wait is left out;
//  - the model's first audio: the reply's startedSpeakingAt, the moment its first frame played.
// It is set on the reply's message before TurnMetrics reads it (voice_e2e_latency_seconds, with the model's labels),
// and the provider's response timing (response created to first audio: realtime_model_metrics.ttftMs) goes to
// voice_llm_ttft_seconds (turn-metrics.ts).
import { VADEventType, type llm, type VADEvent, type voice } from '@livekit/agents';
import type { RealtimeSettings } from '../../../schemas/models.ts';

export class RealtimeTurns {
  /** When the caller last stopped speaking (ms since epoch); null before they spoke. */
  #speechEndedAt: number | null = null;
  /** The end of speech a reply has already been measured from: each turn counts once. */
  #measured: number | null = null;

  /** The session's VAD events (vad-tap.ts). */
  onVadEvent = (ev: VADEvent): void => {
    if (ev.type === VADEventType.END_OF_SPEECH) this.#speechEndedAt = ev.timestamp - ev.silenceDuration;
  };

  /**
   * Sets a realtime reply's voice-to-voice latency (seconds, as agents-js's own) on its message: from the caller's
   * last end of speech to the reply's first audio. None for a reply no speech of the caller's came before (the
   * greeting), or one whose turn was measured already (a second message of one response).
   */
  onAgentMessage(msg: llm.ChatMessage): void {
    const started = msg.metrics?.startedSpeakingAt;
    const end = this.#speechEndedAt;
    if (typeof started !== 'number' || end === null || end === this.#measured || msg.metrics.e2eLatency !== undefined) return;
    const e2e = started - end / 1000;
    if (!(e2e >= 0)) return;
    this.#measured = end;
    msg.metrics.e2eLatency = e2e;
  }
}

type TurnHandling = NonNullable<voice.AgentSessionOptions['turnHandling']> & { turnDetection?: unknown };

/**
 * The session's turn handling with a realtime model: the provider ends turns (`realtime_llm`) unless the model's
 * turn detection is the platform's, where the session's VAD does, after the agent's min_delay_ms. Nothing is
 * generated ahead (a realtime model answers the turn it was sent, in one response).
 */
export function realtimeTurnHandling<T extends TurnHandling>(options: T, settings: RealtimeSettings): T {
  return {
    ...options,
    turnDetection: settings.turn_detection === 'platform' ? 'vad' : 'realtime_llm',
    preemptiveGeneration: { ...options.preemptiveGeneration, enabled: false },
  };
}
