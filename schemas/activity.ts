// GET /v1/activity/summary: the spec's "Organisation activity summary", field for field. Two extra counters in
// `error_signals` (`webhooks_disabled`, `analyses_failed`) are additions; see docs/decisions.md ("Activity summary").
import { Type, DateTime, Uuid, Nullable, type Static } from './common.ts';

const Count = Type.Integer({ minimum: 0 });
const ValueCount = Type.Object({ value: Type.String(), count: Count }, { additionalProperties: false });

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
  },
  { title: 'ActivitySummary', additionalProperties: false },
);
export type ActivitySummary = Static<typeof ActivitySummary>;

export const ActivityQuery = Type.Object(
  {
    since: Type.Optional(DateTime({ description: 'Start of the window (default: 30 days before `until`)' })),
    until: Type.Optional(DateTime({ description: 'End of the window (default: now)' })),
  },
  { additionalProperties: false },
);
