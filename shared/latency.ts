// The per-call latency summary, shared by the worker (which computes it) and the control plane (which may
// recompute or aggregate it). Input values are milliseconds; outputs are integers (the spec's `latency`).
// This module owns the shapes: shared/ helpers do not import schemas/ (only the internal API client does), and
// schemas/internal.ts (the wire contract) asserts at compile time that its schemas have exactly these types.

/** One latency figure of a call, in integer milliseconds. */
export interface LatencySummary {
  avg_ms: number;
  p50_ms: number;
  min_ms: number;
  max_ms: number;
  samples: number;
}

/** The four latency figures a worker reports for a call. */
export interface CallLatency {
  llm_ttft: LatencySummary;
  tts_ttfb: LatencySummary;
  eou_delay: LatencySummary;
  e2e: LatencySummary;
}

export const EMPTY_SUMMARY: LatencySummary = Object.freeze({ avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 });

/**
 * Summarise samples in milliseconds. The median is the mean of the two middle values for an even count
 * (so [100, 200] gives 150). Non-finite and negative samples are dropped. No samples: all zeros.
 */
export function summarize(valuesMs: readonly number[]): LatencySummary {
  const v = valuesMs.filter((x) => Number.isFinite(x) && x >= 0).sort((a, b) => a - b);
  const n = v.length;
  if (n === 0) return { ...EMPTY_SUMMARY };
  const mid = n >> 1;
  const median = n % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
  const sum = v.reduce((a, b) => a + b, 0);
  return {
    avg_ms: Math.round(sum / n),
    p50_ms: Math.round(median),
    min_ms: Math.round(v[0]!),
    max_ms: Math.round(v[n - 1]!),
    samples: n,
  };
}

/** A percentile (0-100) by linear interpolation between closest ranks; NaN for no samples. */
export function percentile(valuesMs: readonly number[], p: number): number {
  const v = [...valuesMs].sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const rank = (p / 100) * (v.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return v[lo]! + (v[hi]! - v[lo]!) * (rank - lo);
}

export interface LatencySamples {
  llm_ttft: number[];
  tts_ttfb: number[];
  eou_delay: number[];
  e2e: number[];
}

export const summarizeCall = (s: LatencySamples): CallLatency => ({
  llm_ttft: summarize(s.llm_ttft),
  tts_ttfb: summarize(s.tts_ttfb),
  eou_delay: summarize(s.eou_delay),
  e2e: summarize(s.e2e),
});
