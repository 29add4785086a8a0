// An agent's turn taking (`turn_taking`): its defaults, how `responsiveness` sets the endpointing delays, and
// how a partial object is completed. Used by the control plane (agents, call overrides); the worker receives the
// complete object (docs/decisions.md, "Turn-taking").

export const TURN_DETECTIONS = ['vad', 'model', 'transcript'] as const;
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

export const DELAY_LIMITS = { min_delay_ms: { minimum: 0, maximum: 2000 }, max_delay_ms: { minimum: 100, maximum: 6000 } } as const;

/**
 * The defaults of the fields that `responsiveness` does not set: the configuration the turn-taking benchmark
 * found best (docs/benchmarks.md, "Turn-taking"; docs/decisions.md, "Turn-taking").
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
 * not waits the ceiling. The default floor is 1000 ms: with an STT that behaves like a real one (its periods at
 * some pauses too) the rules' evidence is often wrong, and in the turn-taking benchmark's realistic mode the floor
 * is what keeps callers from being cut off (150 ms: 38 % and 81 % of mid-turn pauses committed in, on the two
 * corpora; 800 ms: 6.5 % and 12.5 %; 1000 ms: 0 % and 7.5 %; a larger run then gave 800 ms 7.8 % and 11.3 %,
 * 900 ms 1.2 % and 5.1 %, 1000 ms 0 % and 3.7 %: the lowest floor within 5 % on both). Eager agents
 * (responsiveness 1) get the old 150 ms floor and its cut-offs; patient ones 1500 ms.
 */
const DETECTOR_DELAYS_AT: Delays = {
  0: { min_delay_ms: 1500, max_delay_ms: 3000 },
  0.5: { min_delay_ms: 1000, max_delay_ms: 1500 },
  1: { min_delay_ms: 150, max_delay_ms: 1000 },
};

/**
 * responsiveness (0 = patient, 1 = eager) -> endpointing delays in milliseconds, linear on each half.
 *   silence alone (`vad`):           0 -> 1000 / 4000;  0.5 -> 500 / 3000 (agents-js's own);  1 -> 200 / 1000.
 *   with a turn detector (default):  0 -> 1500 / 3000;  0.5 -> 1000 / 1500;                   1 -> 150 / 1000.
 * min is the silence after which a likely end of turn commits; max is the ceiling when the turn detector
 * expects the caller to go on.
 */
export function delaysFor(responsiveness: number, detection: TurnTaking['detection'] = 'vad'): Pick<TurnTaking, 'min_delay_ms' | 'max_delay_ms'> {
  const DELAYS_AT = detection === 'vad' ? SILENCE_DELAYS_AT : DETECTOR_DELAYS_AT;
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
