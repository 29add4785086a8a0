import { describe, expect, it } from 'vitest';
import { percentile, summarize, summarizeCall } from './latency.ts';

describe('latency summary', () => {
  it('summarises known delays', () => {
    expect(summarize([300, 100, 200, 400])).toEqual({ avg_ms: 250, p50_ms: 250, min_ms: 100, max_ms: 400, samples: 4 });
    expect(summarize([120.4, 80.6, 99.5])).toEqual({ avg_ms: 100, p50_ms: 100, min_ms: 81, max_ms: 120, samples: 3 });
  });
  it('gives zeros for no samples and drops invalid ones', () => {
    expect(summarize([])).toEqual({ avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 });
    expect(summarize([Number.NaN, -5, 50])).toEqual({ avg_ms: 50, p50_ms: 50, min_ms: 50, max_ms: 50, samples: 1 });
  });
  it('summarises each measure of a call', () => {
    const s = summarizeCall({ llm_ttft: [200, 200], tts_ttfb: [100], eou_delay: [], e2e: [900, 1100, 1000] });
    expect(s.llm_ttft.p50_ms).toBe(200);
    expect(s.eou_delay.samples).toBe(0);
    expect(s.e2e).toEqual({ avg_ms: 1000, p50_ms: 1000, min_ms: 900, max_ms: 1100, samples: 3 });
  });
  it('computes percentiles by interpolation', () => {
    expect(percentile([1, 2, 3, 4, 5], 50)).toBe(3);
    expect(percentile([10, 20], 95)).toBeCloseTo(19.5);
  });
});
