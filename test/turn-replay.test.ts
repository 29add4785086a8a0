// The replay of the worker's end-of-turn decision (bench/turn-taking/replay.ts) on items built by hand: a pause is
// cut off when the wait it gets is shorter than the pause, the latency at a true end is that wait, and the adaptive
// wait learns a caller's long pauses within a call.
import { describe, expect, it } from 'vitest';
import type { CorpusItem } from '../bench/turn-taking/corpus.ts';
import { replay, type ReplayMode } from '../bench/turn-taking/replay.ts';

const RATE = 1000; // one sample a millisecond
/** Segments of 1000 ms of speech with the given pauses between them. */
function item(id: string, segments: string[], pauses: number[]): CorpusItem {
  let at = 0;
  const segments_at = segments.map((text, i) => {
    const s = { text, start: at, end: at + 1000 };
    at += 1000 + (pauses[i] ?? 0);
    return s;
  });
  const pauses_at = pauses.map((p, i): [number, number] => [segments_at[i]!.end, segments_at[i]!.end + p]);
  return { id, corpus: 't', category: pauses.length ? 'pause' : 'complete', voice: 'en-us', rate: 175, segments, pauses_ms: pauses, text: segments.join(' '), sample_rate: RATE, length: at, segments_at, speech_end: segments_at.at(-1)!.end, pauses_at, wav: '' };
}

const fixed = (min: number, max = Math.max(min, 1500)): ReplayMode => ({ name: `f${min}`, detection: 'vad', endpointing: 'fixed', min_delay_ms: min, max_delay_ms: max });

describe('the turn-taking replay', () => {
  const long = Array.from({ length: 10 }, (_, i) => item(`u${i}`, ['my card number is four four', 'five five six six'], [1800]));

  it('cuts a pause the wait is shorter than, holds one it is longer than, and reports the wait at the true end', () => {
    const short = replay(long, fixed(1000));
    expect(short.false_cut_offs).toBe(10);
    expect(short.by_pause_ms['>1500']).toEqual({ scored: 10, cut: 10, rate: 1 });
    // Every utterance was cut before its end: no clean true end.
    expect(short.ends).toBe(0);
    const patient = replay(long, fixed(2000));
    expect(patient.false_cut_offs).toBe(0);
    expect(patient.mean_eou_ms).toBe(2000);
    expect(patient.share_longer_than_floor).toBe(0);
  });

  it('the adaptive wait learns the long pauses of a call and cuts fewer of them than its fixed floor', () => {
    const adaptive = replay(long, { name: 'd', detection: 'vad', endpointing: 'dynamic', min_delay_ms: 1000, max_delay_ms: 2500 });
    const fixedFloor = replay(long, fixed(1000));
    expect(adaptive.false_cut_offs).toBeLessThan(fixedFloor.false_cut_offs);
    expect(adaptive.false_cut_offs).toBeGreaterThan(0);
  });
});
