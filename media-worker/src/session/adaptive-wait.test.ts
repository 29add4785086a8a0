import { describe, expect, it } from 'vitest';
import { AdaptiveWait, CUT_IN_MS, LONGEST_PAUSE_MS, MARGIN_MS, WINDOW } from './adaptive-wait.ts';

const wait = () => new AdaptiveWait({ minDelay: 500, maxDelay: 2500, vadEndMs: 300 });
/** The caller stops at `at` and goes on after a silence the VAD reports as `gap` ms. */
const pause = (w: AdaptiveWait, at: number, gap: number) => {
  w.onSpeechEnd(at);
  return w.onSpeechStart(at + gap);
};

describe('adaptive waiting within a call', () => {
  it('starts at min_delay_ms and stays there for a brisk caller', () => {
    const w = wait();
    expect(w.minDelay).toBe(500);
    for (let i = 0; i < 5; i++) pause(w, i * 10_000, 0);
    // 300 ms pauses (the VAD's 300 ms end silence and no more): the wait stays at the floor.
    expect(w.pauses).toEqual([300, 300, 300, 300, 300]);
    expect(w.minDelay).toBe(500);
  });

  it("waits longer for a caller who pauses long, within max_delay_ms", () => {
    const w = wait();
    pause(w, 0, 900);
    expect(w.minDelay).toBe(1200 + MARGIN_MS);
    pause(w, 10_000, 3500);
    expect(w.minDelay).toBe(2500);
  });

  it('learns nothing from a caller who heard the agent out, nor from a silence too long to be a pause', () => {
    const w = wait();
    w.onSpeechEnd(0);
    w.onAgentSpeaking(100);
    expect(w.onSpeechStart(100 + CUT_IN_MS + 1)).toBe(false);
    expect(pause(w, 10_000, LONGEST_PAUSE_MS)).toBe(false);
    expect(w.onSpeechStart(30_000)).toBe(false);
    expect(w.minDelay).toBe(500);
  });

  it('learns from a pause the agent answered into and the caller talked over (a false cut-off)', () => {
    const w = wait();
    w.onSpeechEnd(0);
    w.onAgentSpeaking(700);
    w.onAgentSpeaking(900);
    expect(w.onSpeechStart(1200)).toBe(true);
    expect(w.pauses).toEqual([1500]);
  });

  it('forgets old pauses: a caller who settles down gets quicker answers again', () => {
    const w = wait();
    for (let i = 0; i < 3; i++) pause(w, i * 10_000, 1700);
    expect(w.minDelay).toBe(2000 + MARGIN_MS);
    for (let i = 0; i < WINDOW; i++) pause(w, 100_000 + i * 10_000, 200);
    expect(w.minDelay).toBe(650);
  });
});
