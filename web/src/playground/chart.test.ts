// The chart's geometry: every reported value becomes a point inside the plot, missing values leave gaps
// rather than zeros, and the axis maximum is a round number at or above the largest value.
import { describe, expect, it } from 'vitest';
import { chartGeometry, HEIGHT, niceMax, WIDTH } from './chart.ts';

describe('chartGeometry', () => {
  it('places one point per reported value, skips nulls, and scales to a round maximum', () => {
    const g = chartGeometry([
      { turn: 1, eou_delay_ms: 400, llm_ttft_ms: 210, tts_ttfb_ms: null, e2e_latency_ms: 1300 },
      { turn: 2, eou_delay_ms: 380, llm_ttft_ms: 190, tts_ttfb_ms: 90, e2e_latency_ms: 1100 },
      { turn: 3, eou_delay_ms: null, llm_ttft_ms: 200, tts_ttfb_ms: 95, e2e_latency_ms: null },
    ]);
    expect(g.maxMs).toBe(2000);
    const by = Object.fromEntries(g.lines.map((l) => [l.cls, l.points]));
    expect(by.eou).toHaveLength(2);
    expect(by.llm).toHaveLength(3);
    expect(by.tts).toHaveLength(2);
    expect(by.e2e).toHaveLength(2);
    for (const [x, y] of g.lines.flatMap((l) => l.points)) {
      expect(x).toBeGreaterThan(0);
      expect(x).toBeLessThan(WIDTH);
      expect(y).toBeGreaterThan(0);
      expect(y).toBeLessThan(HEIGHT);
    }
    // A larger value is drawn higher (a smaller y).
    expect(by.e2e![0]![1]).toBeLessThan(by.llm![0]![1]);
    // Turns run left to right.
    expect(by.llm!.map(([x]) => x)).toEqual([...by.llm!.map(([x]) => x)].sort((a, b) => a - b));
    expect(g.xTicks.map((t) => t.label)).toEqual(['1', '2', '3']);
    expect(g.yTicks.map((t) => t.label)).toEqual(['0', '1000', '2000']);
  });

  it('draws nothing for no turns, and rounds the axis up', () => {
    expect(chartGeometry([]).lines.every((l) => l.points.length === 0)).toBe(true);
    expect([niceMax(0), niceMax(1), niceMax(101), niceMax(450), niceMax(999), niceMax(1000), niceMax(1001)]).toEqual([100, 1, 200, 500, 1000, 1000, 2000]);
  });
});
