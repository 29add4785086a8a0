// The statistics of the version comparison (docs/decisions/038-agent-versions.md, "Comparison statistics"): Wilson score intervals
// for rates, the pooled two-proportion z-test for a difference of rates, and the Mann-Whitney U test (normal
// approximation with tie correction and continuity correction) for distributions such as durations and
// latencies, which are skewed and rarely normal. No statistics package is installed; these are the textbook
// formulas, checked against published values in stats.test.ts.

/** Two-sided 95 %. */
export const Z95 = 1.959963984540054;
export const ALPHA = 0.05;

/** Complementary error function, fractional error under 1.2e-7 (Numerical Recipes' erfcc, Chebyshev fit). */
export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

/** Two-sided p-value of a standard normal statistic. */
export const twoSidedP = (z: number) => Math.min(1, erfc(Math.abs(z) / Math.SQRT2));

export interface Rate {
  count: number;
  samples: number;
  /** count / samples; null without samples. */
  rate: number | null;
  /** Wilson score interval at 95 %; null without samples. */
  ci95: [number, number] | null;
}

export function wilson(count: number, samples: number, z = Z95): Rate {
  if (samples === 0) return { count, samples, rate: null, ci95: null };
  const p = count / samples;
  const z2 = z * z;
  const denom = 1 + z2 / samples;
  const centre = (p + z2 / (2 * samples)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / samples + z2 / (4 * samples * samples))) / denom;
  return { count, samples, rate: p, ci95: [Math.max(0, centre - half), Math.min(1, centre + half)] };
}

export type Verdict = 'significant' | 'within_noise' | 'insufficient_data';

export interface TestResult {
  test: 'two_proportion_z' | 'mann_whitney_u';
  statistic: number | null;
  p_value: number | null;
  verdict: Verdict;
}

/**
 * Pooled two-proportion z-test of a against b. The normal approximation needs at least 5 expected successes and
 * failures in each group (under the pooled rate): below that the verdict is `insufficient_data`.
 */
export function twoProportionZ(a: { count: number; samples: number }, b: { count: number; samples: number }): TestResult {
  const none: TestResult = { test: 'two_proportion_z', statistic: null, p_value: null, verdict: 'insufficient_data' };
  if (!a.samples || !b.samples) return none;
  const pooled = (a.count + b.count) / (a.samples + b.samples);
  const expected = [a.samples * pooled, a.samples * (1 - pooled), b.samples * pooled, b.samples * (1 - pooled)];
  if (expected.some((e) => e < 5)) return none;
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / a.samples + 1 / b.samples));
  const z = (a.count / a.samples - b.count / b.samples) / se;
  const p = twoSidedP(z);
  return { test: 'two_proportion_z', statistic: z, p_value: p, verdict: p < ALPHA ? 'significant' : 'within_noise' };
}

/** Fewest samples per group for the Mann-Whitney normal approximation. */
export const MIN_RANK_SAMPLES = 8;

/** Mann-Whitney U test of a against b (two-sided); `statistic` is the z of U for a. */
export function mannWhitney(a: number[], b: number[]): TestResult {
  const none: TestResult = { test: 'mann_whitney_u', statistic: null, p_value: null, verdict: 'insufficient_data' };
  const n1 = a.length;
  const n2 = b.length;
  if (n1 < MIN_RANK_SAMPLES || n2 < MIN_RANK_SAMPLES) return none;
  const all = [...a.map((v) => ({ v, g: 0 })), ...b.map((v) => ({ v, g: 1 }))].sort((x, y) => x.v - y.v);
  const n = n1 + n2;
  let rankA = 0;
  let ties = 0;
  for (let i = 0; i < n; ) {
    let j = i;
    while (j + 1 < n && all[j + 1]!.v === all[i]!.v) j++;
    const rank = (i + j) / 2 + 1;
    const t = j - i + 1;
    ties += t * t * t - t;
    for (let k = i; k <= j; k++) if (all[k]!.g === 0) rankA += rank;
    i = j + 1;
  }
  const u = rankA - (n1 * (n1 + 1)) / 2;
  const mu = (n1 * n2) / 2;
  const sigma = Math.sqrt(((n1 * n2) / 12) * (n + 1 - ties / (n * (n - 1))));
  if (sigma === 0) return { test: 'mann_whitney_u', statistic: 0, p_value: 1, verdict: 'within_noise' };
  // Continuity correction towards the mean.
  const z = (u - mu - Math.sign(u - mu) * 0.5) / sigma;
  const p = twoSidedP(z);
  return { test: 'mann_whitney_u', statistic: z, p_value: p, verdict: p < ALPHA ? 'significant' : 'within_noise' };
}

/** Nearest-rank-interpolated percentile (as PostgreSQL's percentile_cont) of sorted values; null when empty. */
export function percentile(sorted: number[], q: number): number | null {
  if (!sorted.length) return null;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}
