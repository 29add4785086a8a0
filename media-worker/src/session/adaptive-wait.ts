// Adaptive waiting within a call (turn_taking.endpointing 'dynamic'): the caller's own mid-turn pauses, seen so far
// in the call, set how long a finished-sounding turn waits before it commits: longer for a caller who pauses long
// (reading a number, looking something up), min_delay_ms for a brisk one. agents-js's own dynamic endpointing
// learns only from pauses with no agent speech around them and moves a tenth of the way per pause, so in a call
// (the agent answers every turn) it hardly moves; this one learns from every pause the caller resumed from before
// the agent spoke or just after it began (an answer that came into the caller's pause and was talked over: a false
// cut-off is the clearest evidence there is), and not from a caller who heard the agent out before speaking.

export interface AdaptiveWaitOptions {
  /** The configured bounds: the wait starts at minDelay and never passes maxDelay. */
  minDelay: number;
  maxDelay: number;
  /** The VAD's silence before it reports the end of speech, plus its lag: added to the gap it reports (ms). */
  vadEndMs: number;
}

/** The wait covers this share of the caller's pauses seen so far... */
export const PAUSE_QUANTILE = 0.9;
/** ...plus this margin (ms: the STT's final and the end-of-turn check come after the silence starts). */
export const MARGIN_MS = 150;
/** The most recent pauses kept: a caller who settles down gets quicker answers again. */
export const WINDOW = 12;
/** A silence longer than this between two stretches of the caller's speech is not a pause in one turn. */
export const LONGEST_PAUSE_MS = 4000;
/** A caller who goes on within this long of the agent starting to speak was cut off, not answering the agent. */
export const CUT_IN_MS = 800;

export class AdaptiveWait {
  readonly #o: AdaptiveWaitOptions;
  readonly #pauses: number[] = [];
  #speechEndedAt: number | null = null;
  /** When the agent began to speak after the caller's last speech ended (null: it has not). */
  #agentFrom: number | null = null;

  constructor(o: AdaptiveWaitOptions) {
    this.#o = o;
  }

  /** The caller's mid-turn pauses seen so far (ms, most recent last). */
  get pauses(): readonly number[] {
    return this.#pauses;
  }

  /** The wait after a finished-sounding turn now (ms). */
  get minDelay(): number {
    const { minDelay, maxDelay } = this.#o;
    if (!this.#pauses.length) return minDelay;
    const sorted = [...this.#pauses].sort((a, b) => a - b);
    const q = sorted[Math.min(sorted.length - 1, Math.floor(PAUSE_QUANTILE * sorted.length))]!;
    return Math.round(Math.min(maxDelay, Math.max(minDelay, q + MARGIN_MS)));
  }

  /** The VAD's end of speech (at: ms clock). */
  onSpeechEnd(at: number): void {
    this.#speechEndedAt = at;
    this.#agentFrom = null;
  }

  /**
   * The VAD's start of speech: a resumed turn when the agent did not speak in the silence, or began less than
   * CUT_IN_MS before. True when it learned.
   */
  onSpeechStart(at: number): boolean {
    const ended = this.#speechEndedAt;
    this.#speechEndedAt = null;
    if (ended === null || (this.#agentFrom !== null && at - this.#agentFrom > CUT_IN_MS)) return false;
    const pause = at - ended + this.#o.vadEndMs;
    if (pause <= 0 || pause > LONGEST_PAUSE_MS) return false;
    this.#pauses.push(pause);
    if (this.#pauses.length > WINDOW) this.#pauses.shift();
    return true;
  }

  onAgentSpeaking(at: number): void {
    this.#agentFrom ??= at;
  }
}
