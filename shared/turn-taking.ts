// An agent's turn taking (`turn_taking`): its defaults, how `responsiveness` sets the endpointing delays, and
// how a partial object is completed. Used by the control plane (agents, call overrides); the worker receives the
// complete object (docs/decisions/010-turn-taking.md).
import { STT_TURN_MODELS, isTurnModel } from './voices.ts';

export const TURN_DETECTIONS = ['vad', 'model', 'transcript', 'stt'] as const;
export const ENDPOINTING_MODES = ['fixed', 'dynamic'] as const;
/**
 * How the agent yields to a barge-in: `pause` its audio on the caller's first sound (its level), or only once the
 * VAD hears speech (`pause_on_speech`), or keep on until `words`.
 */
export const BARGE_IN_MODES = ['pause', 'pause_on_speech', 'words'] as const;

export interface TurnTaking {
  detection: (typeof TURN_DETECTIONS)[number];
  endpointing: (typeof ENDPOINTING_MODES)[number];
  min_delay_ms: number;
  max_delay_ms: number;
  preemptive_generation: boolean;
  ignore_backchannels: boolean;
  barge_in: (typeof BARGE_IN_MODES)[number];
}
export type TurnTakingInput = Partial<TurnTaking>;

export const DELAY_LIMITS = { min_delay_ms: { minimum: 0, maximum: 4000 }, max_delay_ms: { minimum: 100, maximum: 6000 } } as const;

/**
 * The defaults of the fields that `responsiveness` does not set: the configuration the turn-taking benchmark
 * found best (docs/benchmarks.md, "Turn-taking"; docs/decisions/010-turn-taking.md).
 */
export const TURN_TAKING_DEFAULTS = {
  detection: 'transcript',
  endpointing: 'fixed',
  preemptive_generation: true,
  ignore_backchannels: true,
  barge_in: 'pause',
} as const satisfies Omit<TurnTaking, 'min_delay_ms' | 'max_delay_ms'>;

type Delays = Record<0 | 0.5 | 1, Pick<TurnTaking, 'min_delay_ms' | 'max_delay_ms'>>;

/** Silence alone (`vad`): the delays at the default responsiveness (0.5), and at its two ends. */
const SILENCE_DELAYS_AT: Delays = {
  0: { min_delay_ms: 1000, max_delay_ms: 4000 },
  0.5: { min_delay_ms: 500, max_delay_ms: 3000 },
  1: { min_delay_ms: 200, max_delay_ms: 1000 },
};

/**
 * With a turn detector (`transcript`, `model`): a turn that sounds finished commits after the floor, one that does
 * not waits the ceiling. The default is 1700 / 3000 ms (issue 47; docs/decisions/turns-default-wait.md): with the
 * realistic STT stand-in punctuating only from the words and the silence so far, and corpora whose callers pause
 * like real ones (numbers, look-ups, fillers), the words rarely tell a pause from an end, and the floor is what
 * keeps callers from being cut off. Chosen on the tuning corpora (bench/turn-taking/replay.ts over tuning-long:
 * the lowest floor within 5 % false cut-offs with this ceiling, 4.0 %); on the held-out test corpus (heldout-b) it
 * gives 4.7 % at a mean 1735 ms at true ends, where the earlier 1000 / 1500 ms gave 39.5 %. Eager agents (responsiveness 1) keep
 * 150 ms and its cut-offs; patient ones 2500 / 4000 ms.
 */
const DETECTOR_DELAYS_AT: Delays = {
  0: { min_delay_ms: 2500, max_delay_ms: 4000 },
  0.5: { min_delay_ms: 1700, max_delay_ms: 3000 },
  1: { min_delay_ms: 150, max_delay_ms: 1000 },
};

/**
 * The STT's own end of turn (`stt`, Deepgram Flux): its model has already waited when it sends EndOfTurn, so the
 * floor is what the agent adds after that (0: answer on Flux's decision; a patient agent keeps 300 ms in which a
 * caller who goes on keeps the turn). The ceiling is Flux's `eot_timeout_ms`, the silence after which it ends a
 * turn whatever its confidence: Deepgram's default 5000 ms at 0.5, 2000 ms for an eager agent.
 */
const STT_DELAYS_AT: Delays = {
  0: { min_delay_ms: 300, max_delay_ms: 6000 },
  0.5: { min_delay_ms: 0, max_delay_ms: 5000 },
  1: { min_delay_ms: 0, max_delay_ms: 2000 },
};

/**
 * responsiveness (0 = patient, 1 = eager) -> endpointing delays in milliseconds, linear on each half.
 *   silence alone (`vad`):           0 -> 1000 / 4000;  0.5 -> 500 / 3000 (agents-js's own);  1 -> 200 / 1000.
 *   with a turn detector (default):  0 -> 2500 / 4000;  0.5 -> 1700 / 3000;                   1 -> 150 / 1000.
 *   the STT's end of turn (`stt`):   0 -> 300 / 6000;   0.5 -> 0 / 5000;                      1 -> 0 / 2000.
 * min is the silence after which a likely end of turn commits; max is the ceiling when the turn detector
 * expects the caller to go on (with `stt`, Flux's eot_timeout_ms).
 */
export function delaysFor(responsiveness: number, detection: TurnTaking['detection'] = 'vad'): Pick<TurnTaking, 'min_delay_ms' | 'max_delay_ms'> {
  const DELAYS_AT = detection === 'vad' ? SILENCE_DELAYS_AT : detection === 'stt' ? STT_DELAYS_AT : DETECTOR_DELAYS_AT;
  const r = Number.isFinite(responsiveness) ? Math.min(1, Math.max(0, responsiveness)) : 0.5;
  const [a, b, t] = r <= 0.5 ? [DELAYS_AT[0], DELAYS_AT[0.5], r / 0.5] : [DELAYS_AT[0.5], DELAYS_AT[1], (r - 0.5) / 0.5];
  const lerp = (x: number, y: number) => Math.round(x + (y - x) * t);
  return { min_delay_ms: lerp(a.min_delay_ms, b.min_delay_ms), max_delay_ms: lerp(a.max_delay_ms, b.max_delay_ms) };
}

export interface TurnTakingProblem {
  loc: string[];
  msg: string;
  type: string;
  input: unknown;
}

/**
 * Completes a partial `turn_taking` over the defaults. Delays not given come from `responsiveness`; a delay
 * that is given wins, and the defaulted one moves so that min <= max. Both given with max < min is a problem
 * reported at `max_delay_ms`.
 */
export function resolveTurnTaking(input: TurnTakingInput | undefined, responsiveness: number): { value: TurnTaking; problems: TurnTakingProblem[] } {
  const given = input ?? {};
  const derived = delaysFor(responsiveness, given.detection ?? TURN_TAKING_DEFAULTS.detection);
  let min = given.min_delay_ms ?? derived.min_delay_ms;
  let max = given.max_delay_ms ?? derived.max_delay_ms;
  const problems: TurnTakingProblem[] = [];
  if (given.min_delay_ms !== undefined && given.max_delay_ms === undefined) max = Math.max(max, min, DELAY_LIMITS.max_delay_ms.minimum);
  if (given.max_delay_ms !== undefined && given.min_delay_ms === undefined) min = Math.min(min, max);
  if (max < min) {
    problems.push({ loc: ['max_delay_ms'], msg: `max_delay_ms must be at least min_delay_ms (${min})`, type: 'value_error', input: max });
  }
  const value: TurnTaking = {
    detection: given.detection ?? TURN_TAKING_DEFAULTS.detection,
    endpointing: given.endpointing ?? TURN_TAKING_DEFAULTS.endpointing,
    min_delay_ms: min,
    max_delay_ms: max,
    preemptive_generation: given.preemptive_generation ?? TURN_TAKING_DEFAULTS.preemptive_generation,
    ignore_backchannels: given.ignore_backchannels ?? TURN_TAKING_DEFAULTS.ignore_backchannels,
    barge_in: given.barge_in ?? TURN_TAKING_DEFAULTS.barge_in,
  };
  return { value, problems };
}

/**
 * The cross-field rule of `turn_taking` and `transcriber`: detection `stt` takes the end of turn from the
 * transcriber, so only a transcriber that decides one (Deepgram Flux: STT_TURN_MODELS of the speech catalogue)
 * can have it. Null when the pair is fine, else the message; the caller reports it at the field the request set.
 */
export function detectionProblem(t: Pick<TurnTaking, 'detection'>, transcriber: { provider: string; model: string }): string | null {
  if (t.detection !== 'stt' || isTurnModel(transcriber)) return null;
  const models = STT_TURN_MODELS.map((m) => `${m.provider} '${m.model}'`).join(' or ');
  return `turn_taking.detection 'stt' needs a transcriber that detects the end of the turn itself (${models}); this one is ${transcriber.provider} '${transcriber.model}'`;
}
