// GET /v1/activity/summary: the spec's "Organisation activity summary", field for field. Two extra counters in
// `error_signals` (`webhooks_disabled`, `analyses_failed`) are additions; see docs/decisions.md ("Activity summary").
import { Type, DateTime, Uuid, Nullable, StringEnum, type Static } from './common.ts';
import { CALL_STATUSES } from './calls.ts';

const Count = Type.Integer({ minimum: 0 });
const ValueCount = Type.Object({ value: Type.String(), count: Count }, { additionalProperties: false });

// ---- Version comparison (GET /v1/activity/summary?agent_id=...) ----------------------------------------------

const Rate = Type.Object(
  {
    count: Count,
    samples: Count,
    rate: Nullable(Type.Number({ description: 'count / samples; null without samples' })),
    ci95: Nullable(Type.Array(Type.Number(), { minItems: 2, maxItems: 2, description: 'Wilson score interval at 95 %' })),
  },
  { title: 'ComparisonRate', additionalProperties: false },
);
const Distribution = Type.Object(
  { samples: Count, p50: Nullable(Type.Number()), p95: Nullable(Type.Number()), mean: Nullable(Type.Number()) },
  { title: 'ComparisonDistribution', additionalProperties: false },
);
const LabelledRate = Type.Object({ value: Type.String(), ...Rate.properties }, { additionalProperties: false });
export const VERDICTS = ['significant', 'within_noise', 'insufficient_data'] as const;

export const VersionComparison = Type.Object(
  {
    agent_id: Uuid(),
    baseline_version: Nullable(Type.Integer({ description: 'The version the others are compared against: the published one (or, without calls, the one with most)' })),
    methods: Type.Object(
      {
        rates: Type.String(),
        distributions: Type.String(),
        alpha: Type.Number(),
      },
      { additionalProperties: false, description: 'How differences are judged (docs/decisions/038-agent-versions.md, "Comparison statistics")' },
    ),
    max_calls: Type.Integer({ description: 'At most this many of the newest calls of the window are compared per version' }),
    versions: Type.Array(
      Type.Object(
        {
          version: Type.Integer(),
          calls: Count,
          ended_calls: Count,
          completed: Rate,
          transferred: Rate,
          end_reasons: Type.Array(LabelledRate, { description: 'How ended calls ended, as a share of them' }),
          outcomes: Type.Array(LabelledRate, { description: 'Analysis outcomes, as a share of the ended calls' }),
          duration_seconds: Distribution,
          latency_e2e_ms: Distribution,
          latency_llm_ttft_ms: Distribution,
          tests: Type.Object(
            { runs: Count, scenarios: Rate },
            { additionalProperties: false, description: 'Completed test runs against the version in the window, and the share of their scenarios that passed' },
          ),
          against_baseline: Type.Array(
            Type.Object(
              {
                metric: Type.String({ description: 'completed, transferred, end_reason:<value>, outcome:<value>, duration_seconds, latency_e2e_ms, latency_llm_ttft_ms, tests' }),
                baseline: Nullable(Type.Number({ description: 'The baseline rate or median' })),
                value: Nullable(Type.Number({ description: "This version's rate or median" })),
                test: StringEnum(['two_proportion_z', 'mann_whitney_u'] as const),
                statistic: Nullable(Type.Number()),
                p_value: Nullable(Type.Number()),
                verdict: StringEnum(VERDICTS, {
                  description: '`significant` (p < alpha), `within_noise` (p >= alpha: the difference may be chance), `insufficient_data` (too few samples for the test)',
                }),
              },
              { additionalProperties: false },
            ),
            { description: 'Empty for the baseline itself' },
          ),
        },
        { additionalProperties: false },
      ),
      { description: 'Versions with calls or test runs in the window, newest first' },
    ),
  },
  { title: 'VersionComparison', additionalProperties: false },
);
export type VersionComparison = Static<typeof VersionComparison>;

export const ActivitySummary = Type.Object(
  {
    org_id: Uuid(),
    org_name: Type.String(),
    signup_date: DateTime({ description: 'When the organisation was created' }),
    window: Type.Object(
      {
        since: DateTime({ description: 'Inclusive lower bound of the window' }),
        until: DateTime({ description: 'Exclusive upper bound of the window' }),
      },
      { additionalProperties: false },
    ),
    resource_counts: Type.Object(
      {
        users: Count,
        api_keys: Count,
        agents: Count,
        calls: Count,
        phone_numbers: Count,
        knowledge_bases: Count,
        tools: Count,
        credentials: Count,
      },
      { additionalProperties: false, description: 'Lifetime totals (not bounded by the window) of the records the organisation holds now: deleted agents and tools and revoked API keys are not counted' },
    ),
    audit_actions: Type.Array(Type.Object({ action: Type.String(), resource_type: Type.String(), count: Count }, { additionalProperties: false }), {
      description: 'Audit events of the window grouped by action and resource type, most frequent first',
    }),
    call_summary: Type.Object(
      {
        total: Count,
        by_status: Type.Array(ValueCount),
        by_outcome: Type.Array(ValueCount, { description: 'Calls without an outcome are not listed' }),
        by_end_reason: Type.Array(ValueCount, { description: 'Calls without an end reason are not listed' }),
      },
      { additionalProperties: false, description: 'Calls created within the window' },
    ),
    error_signals: Type.Object(
      {
        calls_ended_in_error: Type.Integer({ minimum: 0, description: 'Calls of the window whose status is `failed`' }),
        kb_sources_errored: Type.Array(
          Type.Object({ knowledge_base_id: Uuid(), source_id: Uuid(), error_message: Nullable(Type.String()) }, { additionalProperties: false }),
          { description: 'Knowledge sources whose ingestion is in error now (at most 100, newest first)' },
        ),
        webhook_deliveries_failed: Type.Integer({ minimum: 0, description: 'Delivery attempts of the window that failed (retried or given up)' }),
        webhooks_disabled: Type.Integer({ minimum: 0, description: 'Webhooks the platform disabled within the window after failing too long' }),
        analyses_failed: Type.Integer({ minimum: 0, description: 'Calls of the window whose post-call analysis failed' }),
      },
      { additionalProperties: false, description: 'Derived from stored records only; log-derived errors are excluded' },
    ),
    version_comparison: Type.Optional(VersionComparison),
  },
  { title: 'ActivitySummary', additionalProperties: false },
);
export type ActivitySummary = Static<typeof ActivitySummary>;

export const ActivityQuery = Type.Object(
  {
    since: Type.Optional(DateTime({ description: 'Start of the window (default: 30 days before `until`, so 30 days before now without `until`)' })),
    until: Type.Optional(DateTime({ description: 'End of the window (default: now)' })),
    agent_id: Type.Optional(
      Uuid({ description: "Adds `version_comparison`: this agent's versions side by side over the window (another organisation's agent is a 404)" }),
    ),
  },
  { additionalProperties: false },
);

/** GET /v1/activity/timeseries answers at most this many buckets (31 days of hours; two years of days). */
export const MAX_BUCKETS = 744;
export const BUCKETS = ['hour', 'day'] as const;

export const ActivityTimeseriesQuery = Type.Object(
  {
    since: Type.Optional(DateTime({ description: 'Start of the window (default: 30 days before `until`, so 30 days before now without `until`)' })),
    until: Type.Optional(DateTime({ description: 'End of the window, exclusive (default: now)' })),
    bucket: StringEnum(BUCKETS, { default: 'day', description: `Bucket width, aligned to UTC; at most ${MAX_BUCKETS} buckets per window` }),
  },
  { additionalProperties: false },
);

const Ms = Nullable(Type.Integer({ minimum: 0, description: 'Milliseconds; null when no call of the bucket has a sample' }));
const Percentiles = Type.Object({ p50: Ms, p95: Ms }, { additionalProperties: false });

export const ActivityTimeseries = Type.Object(
  {
    window: Type.Object(
      {
        since: DateTime({ description: 'Inclusive lower bound of the window' }),
        until: DateTime({ description: 'Exclusive upper bound of the window' }),
      },
      { additionalProperties: false },
    ),
    bucket: StringEnum(BUCKETS),
    buckets: Type.Array(
      Type.Object(
        {
          start: DateTime({ description: 'Start of the bucket (UTC); the first bucket starts at `since` rounded down, and counts only calls from `since` on' }),
          calls_by_status: Type.Object(Object.fromEntries(CALL_STATUSES.map((st) => [st, Type.Integer({ minimum: 0 })])), {
            additionalProperties: false,
            description: 'Calls created in the bucket, by their status now; every status is present (0 when none)',
          }),
          latency: Type.Object(
            { eou_delay: Percentiles, llm_ttft: Percentiles, tts_ttfb: Percentiles, e2e: Percentiles },
            {
              additionalProperties: false,
              description:
                "Percentiles across the bucket's ended calls of each call's median per-turn latency (the `p50_ms` of the call's `latency`); calls without a sample of a figure are left out of it",
            },
          ),
        },
        { additionalProperties: false },
      ),
      { description: 'Every bucket of the window, oldest first, empty ones included' },
    ),
  },
  {
    title: 'ActivityTimeseries',
    additionalProperties: false,
    examples: [
      {
        window: { since: '2026-11-20T00:00:00.000Z', until: '2026-11-21T00:00:00.000Z' },
        bucket: 'day',
        buckets: [
          {
            start: '2026-11-20T00:00:00.000Z',
            calls_by_status: { queued: 0, initiated: 0, in_progress: 1, completed: 40, failed: 2 },
            latency: {
              eou_delay: { p50: 510, p95: 720 },
              llm_ttft: { p50: 300, p95: 450 },
              tts_ttfb: { p50: 115, p95: 190 },
              e2e: { p50: 930, p95: 1300 },
            },
          },
        ],
      },
    ],
  },
);
export type ActivityTimeseries = Static<typeof ActivityTimeseries>;
