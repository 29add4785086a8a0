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
    // 'vad' ends turns on Silero's silence alone; 'model' adds the local end-of-turn model; 'stt' takes the
    // transcriber's own end of turn (Deepgram Flux's EndOfTurn, stt-turns.ts).
    turnDetection: t.detection === 'vad' ? 'vad' : t.detection === 'stt' ? 'stt' : opts.turnDetector,
    endpointing: endpointingFor(t),
    // 'vad' keeps interruption decisions local (adaptive mode would call a cloud model).
    interruption: interruptionOptions(agent.interruption_sensitivity, t),
    // The TTS starts with the LLM: an early reply's first audio is ready when the turn commits. A discarded one
    // costs its synthesised characters as well as its tokens (counted as wasted tokens).
    preemptiveGeneration: { enabled: t.preemptive_generation && opts.preemptiveAllowed, preemptiveTts: true },
  };
}

/**
 * turn_taking (docs/decisions/010-turn-taking.md) -> agents-js endpointing: `fixed` waits min_delay_ms after a
 * likely end of turn and max_delay_ms after an unlikely one; `dynamic` learns the caller's pauses between those
 * bounds. The delays arrive resolved (responsiveness sets them in the control plane).
 */
export function endpointingFor(t: Pick<TurnTaking, 'endpointing' | 'min_delay_ms' | 'max_delay_ms'> & { detection?: TurnTaking['detection'] }): { mode: 'fixed' | 'dynamic'; minDelay: number; maxDelay: number } {
  const minDelay = Math.max(0, t.min_delay_ms);
  // With the STT's end of turn, agents-js only adds min_delay_ms after the STT's EndOfTurn (no detector of its
  // own ever asks for the ceiling); max_delay_ms goes to Flux as its eot_timeout_ms (stt-turns.ts). `dynamic`
  // would learn a wait up to that ceiling on top of Flux's own, so the wait stays fixed.
  if (t.detection === 'stt') return { mode: 'fixed', minDelay, maxDelay: minDelay };
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
  // With the STT's end of turn the VAD ends no turn: it only says when speech stopped (barge-in, user state).
  if (t.detection === 'model' || t.detection === 'stt') return MODEL_VAD_SILENCE_MS;
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

/** With barge_in 'pause' or 'pause_on_speech', the speech that pauses the agent in agents-js: Silero's start of
 * speech (two 32 ms windows). With 'pause' the call pauses it sooner, on the onset of the sound (onset.ts). */
export const PAUSE_AFTER_SPEECH_MS = 50;
/**
 * After a pause that no word has confirmed (a backchannel, which the call keeps from agents-js, or a noise), the
 * reply resumes this long after the VAD's end of speech. The STT's final for a real barge-in comes about one
 * final lag after the end of speech; the VAD reports it 50-100 ms sooner, so this leaves the final its time.
 */
export const RESUME_AFTER_MS = 150;

/**
 * turn_taking.barge_in 'pause' and 'pause_on_speech': the caller's sound pauses the agent's audio (agents-js's pause: the reply
 * is held, not dropped) and the words decide what the pause was. A transcript with a word stops the reply
 * (agents-js interrupts a paused speech on a final; the call does it on the first interim word that is not a
 * backchannel). A sound with no words, or with ignore_backchannels a backchannel (which the call keeps from
 * agents-js), resumes the reply where it paused. A barge-in so costs Silero's start of speech instead of its
 * first transcribed word; a backchannel costs a short pause instead of nothing (docs/decisions/010-turn-taking.md). With 'pause' the call pauses sooner still, on the onset of the sound (turn-handling.ts).
 * 'words', or a sensitivity under 0.25 (two or more words required): sound alone does not pause; the agent
 * speaks on until `interruption_sensitivity`'s words (then agents-js holds the reply until the final stops it),
 * and with ignore_backchannels after at most 250 ms of speech.
 */
export function interruptionOptions(sensitivity: number, t: Pick<TurnTaking, 'ignore_backchannels' | 'barge_in'>) {
  const { minDuration, minWords } = interruptionFor(sensitivity);
  if (pausesOnSound(sensitivity, t)) {
    return {
      enabled: true,
      mode: 'vad' as const,
      minDuration: PAUSE_AFTER_SPEECH_MS,
      minWords: 0,
      falseInterruptionTimeout: RESUME_AFTER_MS,
      resumeFalseInterruption: true,
    };
  }
  if (!t.ignore_backchannels) return { enabled: true, mode: 'vad' as const, minDuration, minWords };
  return { enabled: true, mode: 'vad' as const, minDuration: Math.min(minDuration, WORD_GATED_MIN_DURATION_MS), minWords: Math.max(1, minWords) };
}

/** The caller's sound pauses the agent (barge_in 'pause' or 'pause_on_speech' at a sensitivity that one word interrupts). */
export function pausesOnSound(sensitivity: number, t: Pick<TurnTaking, 'barge_in'>): boolean {
  return t.barge_in !== 'words' && interruptionFor(sensitivity).minWords <= 1;
}

/** With barge_in 'pause', the onset of the caller's sound pauses the agent before the VAD's start of speech (onset.ts). */
export function pausesOnOnset(sensitivity: number, t: Pick<TurnTaking, 'barge_in'>): boolean {
  return t.barge_in === 'pause' && pausesOnSound(sensitivity, t);
}

/** With barge_in 'words' and ignore_backchannels, the least speech before the words may interrupt (ms). */
export const WORD_GATED_MIN_DURATION_MS = 250;

function clamp01(x: number): number {
  if (!Number.isFinite(x)) return 0.5;
  return Math.min(1, Math.max(0, x));
}
