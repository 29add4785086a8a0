// False cut-offs and the latency they are traded against, from the worker's own commits (its per-turn trace), in
// the terms of LiveKit's eot-bench (docs/benchmarks.md, "Turn-taking", the metrics). An utterance's mid-turn
// pauses are its hold points, the end of its last segment its true end:
//   - a commit before the end of the last segment is premature (whether or not the agent was heard over the caller);
//   - a pause is a false cut-off when the worker committed in it, or in the speech that followed it before the next
//     pause (a commit decided in the pause can land after the caller went on: the STT's final comes late). Pauses
//     after an utterance's first premature commit are not scored: the call is no longer in the state the pause
//     tests (the agent is answering, the caller talking over it), where eot-bench scores every pause on its own;
//   - the latency at a true end is the worker's EOU delay (its last speech to the commit), on utterances with no
//     premature commit.
// One configuration is one operating point (a false cut-off rate, a mean latency). The budget figures need several:
// the lowest cut-off rate among the points within a latency budget, the lowest mean latency among the points within
// a cut-off budget (a sweep of the delays; a single point answers only whether it is inside the budget).
import { percentile } from '../../shared/latency.ts';

/** A commit of a user turn: when the worker logged it, and its EOU delay. */
export interface Commit {
  call_id: string;
  at: number;
  eou_delay_ms: number;
}

/** One utterance spoken as a turn, on the client's clock (wall-clock ms, as the worker's log). */
export interface SpokenTurn {
  call_id: string;
  kind: string;
  speech_start_at: number;
  speech_end_at: number;
  /** Its pauses as [start, end) wall-clock ms, in order. */
  pauses_at: [number, number][];
}

/** A commit logged up to this long before the client's end of speech is the true end's (as rig.ts's eouOf). */
export const END_SLACK_MS = 100;
/** The true end's commit comes within this long of the end of speech. */
export const END_WINDOW_MS = 5000;

export interface ScoredTurn {
  /** Commits before the end of the last segment. */
  premature: number;
  /** Per pause: held (no commit in its window), cut (a false cut-off), or not scored (after an earlier commit). */
  pauses: ('held' | 'cut' | 'unscored')[];
  /** The commit at the true end (the first within its window), if any. */
  end: Commit | undefined;
}

/** Scores one spoken turn against the worker's commits (of any call: they are filtered by call and time). */
export function scoreTurn(turn: SpokenTurn, commits: Commit[]): ScoredTurn {
  const endAt = turn.speech_end_at - END_SLACK_MS;
  const mine = commits.filter((c) => c.call_id === turn.call_id).sort((a, b) => a.at - b.at);
  const early = mine.filter((c) => c.at >= turn.speech_start_at && c.at < endAt);
  const end = mine.find((c) => c.at >= endAt && c.at <= turn.speech_end_at + END_WINDOW_MS);
  const firstEarly = early[0]?.at ?? Infinity;
  const pauses = turn.pauses_at.map(([from], i): 'held' | 'cut' | 'unscored' => {
    if (firstEarly < from) return 'unscored';
    const until = turn.pauses_at[i + 1]?.[0] ?? endAt;
    return firstEarly < until ? 'cut' : 'held';
  });
  return { premature: early.length, pauses, end };
}

export interface Stats {
  n: number;
  mean: number;
  /** p50 with 30 samples or more, p95 with 100 or more; NaN otherwise (printed n/a). */
  p50: number;
  p95: number;
  median_any_n: number;
}

const round1 = (x: number) => Math.round(x * 10) / 10;

export function latencyStats(xs: number[]): Stats {
  return {
    n: xs.length,
    mean: xs.length ? round1(xs.reduce((a, b) => a + b, 0) / xs.length) : NaN,
    p50: xs.length >= 30 ? round1(percentile(xs, 50)) : NaN,
    p95: xs.length >= 100 ? round1(percentile(xs, 95)) : NaN,
    median_any_n: xs.length ? round1(percentile(xs, 50)) : NaN,
  };
}

export interface CutOffSummary {
  /** Mid-turn pauses scored, and how many of them the worker committed in. */
  pauses_scored: number;
  false_cut_offs: number;
  false_cut_off_rate: number;
  pauses_unscored: number;
  premature_commits: {
    utterances: number;
    commits: number;
    per_utterance: number;
    utterances_with_any: number;
    by_kind: Record<string, { utterances: number; commits: number; per_utterance: number }>;
  };
  /** The worker's EOU delay at true ends of utterances with no premature commit. */
  end_latency_ms: Stats;
  /** The scored pauses by length (ms): how many, how many cut, the rate. */
  by_pause_ms: Record<PauseBucket, { scored: number; cut: number; rate: number }>;
  /**
   * The share of scored pauses longer than the floor (min_delay_ms): a commit after the floor can only cut those,
   * so a rate is read beside it (a corpus without pauses over the floor gives 0 % whatever the rules do).
   */
  share_longer_than_floor: number | null;
}

/** The pause-length buckets every cut-off rate is also reported in. */
export const PAUSE_BUCKETS = ['<500', '500-1000', '1000-1500', '>1500'] as const;
export type PauseBucket = (typeof PAUSE_BUCKETS)[number];
export const pauseBucket = (ms: number): PauseBucket => (ms < 500 ? '<500' : ms < 1000 ? '500-1000' : ms <= 1500 ? '1000-1500' : '>1500');

const ratio = (a: number, n: number) => (n ? Math.round((a / n) * 1e4) / 1e4 : NaN);

export function summarizeCutOffs(turns: SpokenTurn[], commits: Commit[], floorMs: number | null = null): CutOffSummary {
  const scored = turns.map((t) => ({ t, s: scoreTurn(t, commits) }));
  const pauses = scored.flatMap(({ s }) => s.pauses);
  const lengths = scored.flatMap(({ t, s }) => s.pauses.map((p, i) => ({ p, ms: t.pauses_at[i]![1] - t.pauses_at[i]![0] }))).filter((x) => x.p !== 'unscored');
  const by_pause_ms = Object.fromEntries(
    PAUSE_BUCKETS.map((b) => {
      const inB = lengths.filter((x) => pauseBucket(x.ms) === b);
      const c = inB.filter((x) => x.p === 'cut').length;
      return [b, { scored: inB.length, cut: c, rate: ratio(c, inB.length) }];
    }),
  ) as CutOffSummary['by_pause_ms'];
  const cut = pauses.filter((p) => p === 'cut').length;
  const scoredPauses = pauses.filter((p) => p !== 'unscored').length;
  const kinds = [...new Set(turns.map((t) => t.kind))].sort();
  const by_kind = Object.fromEntries(
    kinds.map((k) => {
      const of = scored.filter(({ t }) => t.kind === k);
      const commitsOf = of.reduce((n, { s }) => n + s.premature, 0);
      return [k, { utterances: of.length, commits: commitsOf, per_utterance: ratio(commitsOf, of.length) }];
    }),
  );
  const premature = scored.reduce((n, { s }) => n + s.premature, 0);
  const latencies = scored.filter(({ s }) => s.premature === 0 && s.end).map(({ s }) => s.end!.eou_delay_ms);
  return {
    pauses_scored: scoredPauses,
    false_cut_offs: cut,
    false_cut_off_rate: ratio(cut, scoredPauses),
    pauses_unscored: pauses.length - scoredPauses,
    premature_commits: {
      utterances: turns.length,
      commits: premature,
      per_utterance: ratio(premature, turns.length),
      utterances_with_any: scored.filter(({ s }) => s.premature > 0).length,
      by_kind,
    },
    end_latency_ms: latencyStats(latencies),
    by_pause_ms,
    share_longer_than_floor: floorMs === null ? null : ratio(lengths.filter((x) => x.ms > floorMs).length, lengths.length),
  };
}

/** One configuration's point on the latency / false cut-off plane. */
export interface OperatingPoint {
  name: string;
  min_delay_ms: number | null;
  max_delay_ms: number | null;
  false_cut_off_rate: number;
  pauses_scored: number;
  mean_latency_ms: number;
  ends: number;
}

export function operatingPoint(name: string, delays: { min_delay_ms: number; max_delay_ms: number } | null, s: CutOffSummary): OperatingPoint {
  return {
    name,
    min_delay_ms: delays?.min_delay_ms ?? null,
    max_delay_ms: delays?.max_delay_ms ?? null,
    false_cut_off_rate: s.false_cut_off_rate,
    pauses_scored: s.pauses_scored,
    mean_latency_ms: s.end_latency_ms.mean,
    ends: s.end_latency_ms.n,
  };
}

/** The budgets eot-bench reports: false cut-offs within 300 ms of mean latency, latency within 5 % of false cut-offs. */
export const LATENCY_BUDGET_MS = 300;
export const CUT_OFF_BUDGET = 0.05;

const measured = (p: OperatingPoint) => Number.isFinite(p.false_cut_off_rate) && Number.isFinite(p.mean_latency_ms);

/** The lowest false cut-off rate among the points whose mean latency is within the budget (null: none is). */
export function cutOffRateAtLatencyBudget(points: OperatingPoint[], budgetMs = LATENCY_BUDGET_MS): { value: number; at: string } | null {
  const within = points.filter((p) => measured(p) && p.mean_latency_ms <= budgetMs).sort((a, b) => a.false_cut_off_rate - b.false_cut_off_rate);
  return within[0] ? { value: within[0].false_cut_off_rate, at: within[0].name } : null;
}

/** The lowest mean latency among the points whose false cut-off rate is within the budget (null: none is). */
export function latencyAtCutOffBudget(points: OperatingPoint[], budget = CUT_OFF_BUDGET): { value: number; at: string } | null {
  const within = points.filter((p) => measured(p) && p.false_cut_off_rate <= budget).sort((a, b) => a.mean_latency_ms - b.mean_latency_ms);
  return within[0] ? { value: within[0].mean_latency_ms, at: within[0].name } : null;
}
