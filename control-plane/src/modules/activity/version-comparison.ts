// An agent's versions side by side over the summary's window (GET /v1/activity/summary?agent_id=): per version the
// calls, how they ended, analysis outcomes, transfers, duration, latency and test results, each against the
// baseline with a test that says whether the difference is within noise (stats.ts; docs/decisions/038-agent-versions.md,
// "Comparison statistics"). From stored records only, as the rest of the summary.
import type { Db } from '../../db/types.ts';
import { notFound } from '../../http/errors.ts';
import type { VersionComparison } from '../../../../schemas/activity.ts';
import { mannWhitney, percentile, twoProportionZ, wilson, ALPHA, type Rate, type TestResult } from './stats.ts';
import { callSamples, MAX_COMPARED_CALLS, publishedVersionOf, testTotals, type CallSample, type Window } from './queries.ts';

function distribution(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    samples: sorted.length,
    p50: percentile(sorted, 0.5),
    p95: percentile(sorted, 0.95),
    mean: sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null,
  };
}

const present = <T>(v: T | null): v is T => v !== null;

interface Stats {
  version: number;
  calls: CallSample[];
  ended: CallSample[];
  series: Record<'duration_seconds' | 'latency_e2e_ms' | 'latency_llm_ttft_ms', number[]>;
  tests: { runs: number; scenarios: Rate };
}

function statsOf(version: number, calls: CallSample[], tests: { runs: number; passed: number; scenarios: number } | undefined): Stats {
  const ended = calls.filter((c) => c.ended);
  return {
    version,
    calls,
    ended,
    series: {
      duration_seconds: ended.map((c) => c.duration).filter(present),
      latency_e2e_ms: ended.map((c) => c.e2e).filter(present),
      latency_llm_ttft_ms: ended.map((c) => c.ttft).filter(present),
    },
    tests: { runs: tests?.runs ?? 0, scenarios: wilson(tests?.passed ?? 0, tests?.scenarios ?? 0) },
  };
}

const count = (rows: CallSample[], f: (c: CallSample) => boolean) => rows.filter(f).length;

function labelled(ended: CallSample[], key: 'end_reason' | 'outcome', values: string[]) {
  return values.map((value) => ({ value, ...wilson(count(ended, (c) => c[key] === value), ended.length) }));
}

function against(base: Stats, s: Stats, endReasons: string[], outcomes: string[]) {
  const rate = (metric: string, f: (c: CallSample) => boolean) => {
    const a = { count: count(s.ended, f), samples: s.ended.length };
    const b = { count: count(base.ended, f), samples: base.ended.length };
    return row(metric, b.samples ? b.count / b.samples : null, a.samples ? a.count / a.samples : null, twoProportionZ(a, b));
  };
  const dist = (metric: keyof Stats['series']) =>
    row(metric, distribution(base.series[metric]).p50, distribution(s.series[metric]).p50, mannWhitney(s.series[metric], base.series[metric]));
  const tests = row('tests', base.tests.scenarios.rate, s.tests.scenarios.rate, twoProportionZ(s.tests.scenarios, base.tests.scenarios));
  return [
    rate('completed', (c) => c.completed),
    rate('transferred', (c) => c.transferred),
    ...endReasons.map((v) => rate(`end_reason:${v}`, (c) => c.end_reason === v)),
    ...outcomes.map((v) => rate(`outcome:${v}`, (c) => c.outcome === v)),
    dist('duration_seconds'),
    dist('latency_e2e_ms'),
    dist('latency_llm_ttft_ms'),
    tests,
  ];
}

const row = (metric: string, baseline: number | null, value: number | null, t: TestResult) => ({ metric, baseline, value, ...t });

export async function versionComparison(db: Db, orgId: string, agentId: string, w: Window): Promise<VersionComparison> {
  const agent = await publishedVersionOf(db, orgId, agentId);
  if (!agent) throw notFound('Agent');
  const [calls, tests] = await Promise.all([callSamples(db, orgId, agentId, w), testTotals(db, orgId, agentId, w)]);
  const numbers = [...new Set([...calls.map((c) => c.version), ...tests.map((t) => t.version)])].sort((a, b) => b - a);
  const stats = numbers.map((v) =>
    statsOf(
      v,
      calls.filter((c) => c.version === v),
      tests.find((t) => t.version === v),
    ),
  );
  const base =
    stats.find((s) => s.version === agent.published_version && s.calls.length) ?? [...stats].sort((a, b) => b.calls.length - a.calls.length)[0] ?? null;
  const endReasons = [...new Set(calls.map((c) => c.end_reason).filter(present))].sort();
  const outcomes = [...new Set(calls.map((c) => c.outcome).filter(present))].sort();
  return {
    agent_id: agentId,
    baseline_version: base?.version ?? null,
    methods: {
      rates: 'Wilson score interval (95 %) per version; pooled two-proportion z-test against the baseline, judged only with at least 5 expected successes and failures per group',
      distributions: `Mann-Whitney U test (normal approximation with tie and continuity corrections) against the baseline, judged only with at least 8 samples per group; latency is each call's median turn`,
      alpha: ALPHA,
    },
    max_calls: MAX_COMPARED_CALLS,
    versions: stats.map((s) => ({
      version: s.version,
      calls: s.calls.length,
      ended_calls: s.ended.length,
      completed: wilson(count(s.ended, (c) => c.completed), s.ended.length),
      transferred: wilson(count(s.ended, (c) => c.transferred), s.ended.length),
      end_reasons: labelled(s.ended, 'end_reason', endReasons),
      outcomes: labelled(s.ended, 'outcome', outcomes),
      duration_seconds: distribution(s.series.duration_seconds),
      latency_e2e_ms: distribution(s.series.latency_e2e_ms),
      latency_llm_ttft_ms: distribution(s.series.latency_llm_ttft_ms),
      tests: s.tests,
      against_baseline: base && s !== base ? against(base, s, endReasons, outcomes) : [],
    })),
  };
}
