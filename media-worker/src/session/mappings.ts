// The agent's turn-taking settings mapped onto agents-js turn handling (documented in docs/decisions.md).
import type { voice } from '@livekit/agents';
import type { TurnTaking } from '../../../shared/turn-taking.ts';

type TurnDetection = NonNullable<voice.AgentSessionOptions['turnDetection']>;

/**
 * The session's turn handling for an agent. `turnDetector` is the local end-of-turn model (used for detection
 * 'model'); `preemptiveAllowed` is false where an early reply would be wrong (see CallSession).
 */
export function turnHandlingFor(
  agent: { turn_taking: TurnTaking; interruption_sensitivity: number },
  opts: { turnDetector: TurnDetection; preemptiveAllowed: boolean },
): NonNullable<voice.AgentSessionOptions['turnHandling']> & { turnDetection: TurnDetection } {
  const t = agent.turn_taking;
  return {
    // 'vad' ends turns on Silero's silence alone; 'model' adds the local end-of-turn model.
    turnDetection: t.detection === 'vad' ? 'vad' : opts.turnDetector,
    endpointing: endpointingFor(t),
    // 'vad' keeps interruption decisions local (adaptive mode would call a cloud model).
    interruption: interruptionOptions(agent.interruption_sensitivity, t.ignore_backchannels),
    // The TTS starts with the LLM: an early reply's first audio is ready when the turn commits. A discarded one
    // costs its synthesised characters as well as its tokens (counted as wasted tokens).
    preemptiveGeneration: { enabled: t.preemptive_generation && opts.preemptiveAllowed, preemptiveTts: true },
  };
}

/**
 * turn_taking (docs/decisions.md, "Turn-taking") -> agents-js endpointing: `fixed` waits min_delay_ms after a
 * likely end of turn and max_delay_ms after an unlikely one; `dynamic` learns the caller's pauses between those
 * bounds. The delays arrive resolved (responsiveness sets them in the control plane).
 */
export function endpointingFor(t: Pick<TurnTaking, 'endpointing' | 'min_delay_ms' | 'max_delay_ms'>): { mode: 'fixed' | 'dynamic'; minDelay: number; maxDelay: number } {
  const minDelay = Math.max(0, t.min_delay_ms);
  return { mode: t.endpointing, minDelay, maxDelay: Math.max(minDelay, t.max_delay_ms) };
}

/** Silero's silence before it reports the end of speech, for the model path (agents-js requires 250 ms there). */
export const MODEL_VAD_SILENCE_MS = 250;
/** The shortest silence the VAD is given: below ~3 Silero windows (32 ms) a breath between words ends speech. */
export const MIN_VAD_SILENCE_MS = 100;

/** The VAD's report of the end of speech comes this long after its silence (Silero's windows and inference). */
export const VAD_END_LAG_MS = 50;

/**
 * The VAD's silence for an agent. agents-js counts the endpointing delay from the last speech, but runs the
 * end-of-turn check only once the VAD has reported the end of speech, so the VAD's silence plus its lag is a
 * floor under every turn's end. It sits one lag under min_delay_ms, so that min_delay_ms is what binds, down to
 * 100 ms (the end-of-turn model needs 250 ms), and stays at 250 ms above that, where it only tells when speech
 * stopped.
 */
export function vadSilenceFor(t: Pick<TurnTaking, 'detection' | 'min_delay_ms'>): number {
  if (t.detection === 'model') return MODEL_VAD_SILENCE_MS;
  return Math.min(MODEL_VAD_SILENCE_MS, Math.max(MIN_VAD_SILENCE_MS, t.min_delay_ms - VAD_END_LAG_MS));
}

/**
 * interruption_sensitivity (0 = hard to interrupt, 1 = any sound interrupts) -> the minimum user speech
 * (VAD) before the agent stops talking, and the minimum transcribed words.
 *   0   -> 1500 ms and 3 words;  0.5 -> 800 ms, 1 word;  1 -> 100 ms, 0 words.
 */
export function interruptionFor(sensitivity: number): { minDuration: number; minWords: number } {
  const s = clamp01(sensitivity);
  return {
    minDuration: Math.round(1500 - 1400 * s),
    minWords: s >= 0.75 ? 0 : s >= 0.25 ? 1 : s > 0 ? 2 : 3,
  };
}

/** With ignore_backchannels, the least speech before words may interrupt (ms). */
export const WORD_GATED_MIN_DURATION_MS = 250;

/**
 * With ignore_backchannels, sound alone never interrupts: at least one transcribed word must be heard, and the
 * call keeps backchannel words from the transcript (CallSession), so only other words count. The words are
 * then what tells a barge-in from a noise, so the speech the agent waits for is capped at 250 ms: a barge-in
 * stops the agent as soon as its first real word is transcribed.
 */
export function interruptionOptions(sensitivity: number, ignoreBackchannels: boolean) {
  const { minDuration, minWords } = interruptionFor(sensitivity);
  if (!ignoreBackchannels) return { enabled: true, mode: 'vad' as const, minDuration, minWords };
  return { enabled: true, mode: 'vad' as const, minDuration: Math.min(minDuration, WORD_GATED_MIN_DURATION_MS), minWords: Math.max(1, minWords) };
}

function clamp01(x: number): number {
  if (!Number.isFinite(x)) return 0.5;
  return Math.min(1, Math.max(0, x));
}
