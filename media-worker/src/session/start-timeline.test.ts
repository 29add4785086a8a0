import { describe, expect, it } from 'vitest';
import { StartTimeline } from './start-timeline.ts';

/** Holds the loop for `ms` of wall time, as synchronous work at a call's start would. */
function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

const tick = () => new Promise((r) => setTimeout(r, 30));

describe('StartTimeline', () => {
  it('records a stall of the event loop over the threshold, with when it began', async () => {
    const t = new StartTimeline({ thresholdMs: 50, windowMs: 60_000 });
    await tick();
    block(200);
    await tick();
    t.finish();
    const s = await t.closed;
    // The stall is at least as long as the block (a loaded machine can only make it longer).
    expect(s.loop_blocks.some((b) => b.ms >= 150)).toBe(true);
    expect(s.loop_blocks.every((b) => b.at_ms >= 0)).toBe(true);
  });

  it('keeps the first mark of each step, in ms from its start', async () => {
    const t = new StartTimeline({ windowMs: 60_000 });
    t.mark('connected');
    await tick();
    t.mark('first_audio');
    t.mark('connected');
    t.finish();
    const s = await t.closed;
    expect(Object.keys(s.steps)).toEqual(['connected', 'first_audio']);
    expect(s.steps.first_audio).toBeGreaterThanOrEqual(s.steps.connected!);
    expect(s.started_at_ms).toBeGreaterThan(1.7e12);
  });

  it('closes by itself when the window has passed', async () => {
    const t = new StartTimeline({ windowMs: 40 });
    const s = await t.closed;
    expect(s.window_ms).toBe(40);
    // Finishing after the window changes nothing.
    t.finish();
  });
});
