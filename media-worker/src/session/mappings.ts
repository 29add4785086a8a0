// The agent's 0-1 knobs mapped onto agents-js turn handling (documented in docs/decisions.md).

/**
 * responsiveness (0 = patient, 1 = eager) -> endpointing delays, in milliseconds.
 * minDelay is how long after the end of speech (VAD) the turn may end when the turn detector is confident;
 * maxDelay is the longest wait when it thinks the user will go on.
 *   0   -> 1000 / 4000 ms;  0.5 -> 600 / 2500 ms (close to the agents-js defaults 500 / 3000);  1 -> 200 / 1000 ms.
 */
export function endpointingFor(responsiveness: number): { minDelay: number; maxDelay: number } {
  const r = clamp01(responsiveness);
  return {
    minDelay: Math.round(1000 - 800 * r),
    maxDelay: Math.round(4000 - 3000 * r),
  };
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

function clamp01(x: number): number {
  if (!Number.isFinite(x)) return 0.5;
  return Math.min(1, Math.max(0, x));
}
