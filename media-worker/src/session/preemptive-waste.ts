// Completion tokens spent on preemptive generations that were thrown away: agents-js starts a reply on the
// caller's transcript before the turn commits (turn_taking.preemptive_generation) and cancels it when the
// caller goes on or the transcript changes. Such a reply's speech handle is cancelled without ever being
// scheduled; its LLM metrics carry the handle's id. A stream cancelled before its usage chunk reports no
// tokens, so the figure is a floor.
import type { metrics as agentsMetrics, voice } from '@livekit/agents';

export class PreemptiveWaste {
  /** Discarded generations and their completion tokens, over the call. */
  discarded = 0;
  wastedTokens = 0;
  /** Replies of the LLM not yet scheduled nor cancelled, by speech id. */
  #pending = new Map<string, voice.SpeechHandle>();
  #tokens = new Map<string, number>();
  #discardedIds = new Set<string>();
  #counted = new Set<string>();
  #onWaste: (tokens: number, generations: number) => void;

  constructor(onWaste: (tokens: number, generations: number) => void = () => {}) {
    this.#onWaste = onWaste;
  }

  onSpeechCreated(handle: voice.SpeechHandle): void {
    this.#pending.set(handle.id, handle);
  }

  onLlmMetrics(m: agentsMetrics.LLMMetrics): void {
    if (!m.speechId) return;
    if (this.#discardedIds.has(m.speechId)) {
      // The metrics of a cancelled stream can come after its handle was found cancelled.
      this.#waste(m.speechId, m.completionTokens);
      return;
    }
    if (!this.#pending.has(m.speechId)) return; // a reply already played
    this.#tokens.set(m.speechId, (this.#tokens.get(m.speechId) ?? 0) + m.completionTokens);
    this.settle();
  }

  /** Sorts the pending replies into used (scheduled) and discarded (cancelled unscheduled). */
  settle(): void {
    for (const [id, h] of this.#pending) {
      if (h.scheduled) {
        this.#pending.delete(id);
        this.#tokens.delete(id);
      } else if (h.interrupted || h.done()) {
        this.#pending.delete(id);
        this.#discardedIds.add(id);
        // Counted once its LLM metrics are known (a `say` has none and never counts).
        if (this.#tokens.has(id)) this.#waste(id, this.#tokens.get(id)!);
        this.#tokens.delete(id);
      }
    }
  }

  #waste(id: string, tokens: number): void {
    const generations = this.#counted.has(id) ? 0 : 1;
    this.#counted.add(id);
    this.discarded += generations;
    this.wastedTokens += tokens;
    this.#onWaste(tokens, generations);
  }
}
