import { describe, expect, it, vi } from 'vitest';
import { deferPrewarm } from './deferred-prewarm.ts';

function model() {
  const m = { calls: 0, prewarm(): void {} };
  m.prewarm = () => {
    m.calls++;
  };
  return m;
}

describe('deferPrewarm', () => {
  it('holds the warm-up until the release, then runs it once', () => {
    const m = model();
    const release = deferPrewarm(m, 60_000);
    m.prewarm();
    m.prewarm();
    expect(m.calls).toBe(0);
    release();
    expect(m.calls).toBe(1);
    release();
    expect(m.calls).toBe(1);
    m.prewarm();
    expect(m.calls).toBe(2);
  });

  it('runs nothing at the release when nobody asked', () => {
    const m = model();
    deferPrewarm(m, 60_000)();
    expect(m.calls).toBe(0);
  });

  it('lets go after maxMs when the release never comes (no greeting plays)', () => {
    vi.useFakeTimers();
    try {
      const m = model();
      deferPrewarm(m, 2000);
      m.prewarm();
      vi.advanceTimersByTime(1999);
      expect(m.calls).toBe(0);
      vi.advanceTimersByTime(1);
      expect(m.calls).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
