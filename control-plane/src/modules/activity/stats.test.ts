// The comparison statistics against published values (erfc tables; Wilson's interval for 5/10 and 0/10; a
// two-proportion z-test worked by hand; scipy's asymptotic Mann-Whitney for fully separated samples).
import { describe, expect, it } from 'vitest';
import { erfc, mannWhitney, percentile, twoProportionZ, wilson } from './stats.ts';

describe('comparison statistics', () => {
  it('erfc matches its table', () => {
    expect(erfc(0)).toBeCloseTo(1, 6);
    expect(erfc(1)).toBeCloseTo(0.157299207, 6);
    expect(erfc(2)).toBeCloseTo(0.004677735, 6);
    expect(erfc(-1)).toBeCloseTo(1.842700793, 6);
  });

  it("Wilson's 95 % interval", () => {
    const half = wilson(5, 10);
    expect(half.rate).toBe(0.5);
    expect(half.ci95![0]).toBeCloseTo(0.2366, 4);
    expect(half.ci95![1]).toBeCloseTo(0.7634, 4);
    const none = wilson(0, 10);
    expect(none.ci95![0]).toBe(0);
    expect(none.ci95![1]).toBeCloseTo(0.2775, 4);
    expect(wilson(0, 0)).toEqual({ count: 0, samples: 0, rate: null, ci95: null });
  });

  it('two-proportion z-test: 45/100 against 60/100 is significant at 5 %, 50/100 against 55/100 is noise, tiny samples are not judged', () => {
    const t = twoProportionZ({ count: 45, samples: 100 }, { count: 60, samples: 100 });
    expect(t.statistic).toBeCloseTo(-2.124, 3);
    expect(t.p_value).toBeCloseTo(0.0337, 3);
    expect(t.verdict).toBe('significant');
    expect(twoProportionZ({ count: 50, samples: 100 }, { count: 55, samples: 100 }).verdict).toBe('within_noise');
    expect(twoProportionZ({ count: 1, samples: 3 }, { count: 2, samples: 4 }).verdict).toBe('insufficient_data');
  });

  it('Mann-Whitney U: separated samples differ, identical ones do not, small ones are not judged', () => {
    const a = [1, 2, 3, 4, 5, 6, 7, 8];
    const b = [9, 10, 11, 12, 13, 14, 15, 16];
    const t = mannWhitney(a, b);
    expect(t.p_value).toBeCloseTo(0.000939, 5);
    expect(t.verdict).toBe('significant');
    expect(mannWhitney(a, [...a].reverse()).verdict).toBe('within_noise');
    expect(mannWhitney(Array(10).fill(3), Array(10).fill(3))).toMatchObject({ p_value: 1, verdict: 'within_noise' });
    expect(mannWhitney([1, 2], [3, 4]).verdict).toBe('insufficient_data');
  });

  it('percentiles interpolate as percentile_cont', () => {
    expect(percentile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(percentile([10], 0.95)).toBe(10);
    expect(percentile([], 0.5)).toBeNull();
  });
});
