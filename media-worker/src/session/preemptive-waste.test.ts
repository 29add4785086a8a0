// Discarded preemptive generations and their tokens, from speech handles and LLM metrics as agents-js emits them.
import type { metrics as agentsMetrics, voice } from '@livekit/agents';
import { describe, expect, it } from 'vitest';
import { PreemptiveWaste } from './preemptive-waste.ts';

function handle(id: string) {
  const h = { id, scheduled: false, interrupted: false, finished: false, done: () => h.finished };
  return h;
}
const asHandle = (h: ReturnType<typeof handle>) => h as unknown as voice.SpeechHandle;
const llm = (speechId: string, completionTokens: number) => ({ type: 'llm_metrics', speechId, completionTokens }) as agentsMetrics.LLMMetrics;

describe('PreemptiveWaste', () => {
  it('counts the tokens of a reply cancelled before it was scheduled, not of replies that played', () => {
    const seen: [number, number][] = [];
    const w = new PreemptiveWaste((tokens, generations) => seen.push([tokens, generations]));
    const used = handle('used');
    const discarded = handle('discarded');
    const say = handle('say');
    for (const h of [used, discarded, say]) w.onSpeechCreated(asHandle(h));
    w.onLlmMetrics(llm('discarded', 12));
    w.onLlmMetrics(llm('used', 9));
    used.scheduled = true;
    discarded.interrupted = true;
    say.scheduled = true;
    w.settle();
    expect(w.discarded).toBe(1);
    expect(w.wastedTokens).toBe(12);
    // Metrics of the played reply arriving late change nothing.
    w.onLlmMetrics(llm('used', 30));
    expect(w.wastedTokens).toBe(12);
    expect(seen).toEqual([[12, 1]]);
  });

  it('counts a stream whose metrics come after it was cancelled, once', () => {
    const w = new PreemptiveWaste();
    const h = handle('late');
    w.onSpeechCreated(asHandle(h));
    h.interrupted = true;
    w.settle();
    expect(w.discarded).toBe(0); // no LLM behind it yet
    w.onLlmMetrics(llm('late', 5));
    w.onLlmMetrics(llm('late', 2));
    expect(w.discarded).toBe(1);
    expect(w.wastedTokens).toBe(7);
  });

  it('never counts a cancelled speech without LLM metrics (say)', () => {
    const w = new PreemptiveWaste();
    const h = handle('say');
    w.onSpeechCreated(asHandle(h));
    h.finished = true;
    w.settle();
    expect(w).toMatchObject({ discarded: 0, wastedTokens: 0 });
  });
});
