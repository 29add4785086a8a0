// The activity summary's SQL: five aggregate queries, each served by an index on (org_id, created_at ...),
// run concurrently on the pool. Counters over the window read only index pages (see 070_activity.sql). Agent
// tests' calls are not the organisation's: left out, as from GET /v1/calls and usage (141, partial indexes).
import { erroredSources as kbErroredSources } from '../knowledge-bases/queries.ts';
import type { Db } from '../../db/types.ts';

export interface Window {
  since: Date;
  until: Date;
}

export interface OrgRow {
  id: string;
  name: string;
  created_at: Date;
}

export const orgRow = (db: Db, orgId: string) => db<OrgRow[]>`select id, name, created_at from orgs where id = ${orgId}`;

/** Lifetime counts of what the org holds now; deleted agents and tools and revoked keys are left out. */
export const resourceCounts = (db: Db, orgId: string) => db<
  { users: number; api_keys: number; agents: number; calls: number; phone_numbers: number; knowledge_bases: number; tools: number; credentials: number }[]
>`
  select (select count(*) from users where org_id = ${orgId})::int as users,
         (select count(*) from api_keys where org_id = ${orgId} and revoked_at is null)::int as api_keys,
         (select count(*) from agents where org_id = ${orgId} and deleted_at is null)::int as agents,
         -- Kept by triggers on calls (074_org_call_counts.sql): no scan of a million-call org.
         coalesce((select calls from org_call_counts where org_id = ${orgId}), 0)::int as calls,
         (select count(*) from phone_numbers where org_id = ${orgId})::int as phone_numbers,
         (select count(*) from knowledge_bases where org_id = ${orgId})::int as knowledge_bases,
         (select count(*) from tools where org_id = ${orgId} and deleted_at is null)::int as tools,
         (select count(*) from credentials where org_id = ${orgId})::int as credentials`;

export const auditActions = (db: Db, orgId: string, w: Window) => db<{ action: string; resource_type: string; count: number }[]>`
  select action, resource_type, count(*)::int as count
  from audit_events
  where org_id = ${orgId} and created_at >= ${w.since} and created_at < ${w.until}
  group by action, resource_type
  order by count desc, action, resource_type`;

/**
 * One pass over the window's calls: grouping sets give the total, the three breakdowns and the error
 * counters together. `dim` says which grouping a row belongs to.
 */
export const callGroups = (db: Db, orgId: string, w: Window) => db<{ dim: string; value: string | null; count: number; failed: number; analyses_failed: number }[]>`
  select case grouping(status, outcome, end_reason)
           when 3 then 'status' when 5 then 'outcome' when 6 then 'end_reason' else 'total' end as dim,
         coalesce(status, outcome, end_reason) as value,
         count(*)::int as count,
         count(*) filter (where status = 'failed')::int as failed,
         count(*) filter (where analysis_status = 'failed')::int as analyses_failed
  from calls
  where org_id = ${orgId} and test_run_id is null and created_at >= ${w.since} and created_at < ${w.until}
  group by grouping sets ((status), (outcome), (end_reason), ())`;

export const webhookSignals = (db: Db, orgId: string, w: Window) => db<{ deliveries_failed: number; webhooks_disabled: number }[]>`
  select (select count(*) from webhook_deliveries
          where org_id = ${orgId} and created_at >= ${w.since} and created_at < ${w.until} and status <> 'succeeded')::int as deliveries_failed,
         (select count(*) from webhooks
          where org_id = ${orgId} and disabled_at >= ${w.since} and disabled_at < ${w.until})::int as webhooks_disabled`;

/** Knowledge sources in error: the knowledge-bases resource owns that query. */
export async function erroredSources(db: Db, orgId: string): Promise<{ knowledge_base_id: string; source_id: string; error_message: string | null }[]> {
  return kbErroredSources(db, orgId);
}

/** Calls of the window per UTC bucket and status, from the index alone (calls_org_activity_idx includes status). */
export const statusBuckets = (db: Db, orgId: string, w: Window, bucket: 'hour' | 'day') => db<{ start: Date; status: string; count: number }[]>`
  select date_trunc(${bucket}, created_at, 'UTC') as start, status, count(*)::int as count
  from calls
  where org_id = ${orgId} and test_run_id is null and created_at >= ${w.since} and created_at < ${w.until}
  group by 1, 2`;

export const LATENCY_FIGURES = ['eou_delay', 'llm_ttft', 'tts_ttfb', 'e2e'] as const;
export type LatencyBucketRow = { start: Date } & Record<(typeof LATENCY_FIGURES)[number], number[] | null>;

/**
 * p50 and p95 per UTC bucket of each ended call's median per-turn latency (`latency.<figure>.p50_ms`, what the
 * worker reports); a call without samples of a figure is left out of it. null when no call of the bucket has one.
 */
export const latencyBuckets = (db: Db, orgId: string, w: Window, bucket: 'hour' | 'day') => db<LatencyBucketRow[]>`
  select date_trunc(${bucket}, created_at, 'UTC') as start,
    percentile_cont(array[0.5, 0.95]) within group (order by (latency->'eou_delay'->>'p50_ms')::float8)
      filter (where (latency->'eou_delay'->>'samples')::int > 0) as eou_delay,
    percentile_cont(array[0.5, 0.95]) within group (order by (latency->'llm_ttft'->>'p50_ms')::float8)
      filter (where (latency->'llm_ttft'->>'samples')::int > 0) as llm_ttft,
    percentile_cont(array[0.5, 0.95]) within group (order by (latency->'tts_ttfb'->>'p50_ms')::float8)
      filter (where (latency->'tts_ttfb'->>'samples')::int > 0) as tts_ttfb,
    percentile_cont(array[0.5, 0.95]) within group (order by (latency->'e2e'->>'p50_ms')::float8)
      filter (where (latency->'e2e'->>'samples')::int > 0) as e2e
  from calls
  where org_id = ${orgId} and test_run_id is null and created_at >= ${w.since} and created_at < ${w.until} and latency is not null
  group by 1`;

// ---- Version comparison (version-comparison.ts) -------------------------------------------------------------

/** The newest calls compared per version: the ranks of the test are held in memory. */
export const MAX_COMPARED_CALLS = 20_000;

export interface CallSample {
  version: number;
  ended: boolean;
  completed: boolean;
  transferred: boolean;
  end_reason: string | null;
  outcome: string | null;
  duration: number | null;
  e2e: number | null;
  ttft: number | null;
}

export const callSamples = (db: Db, orgId: string, agentId: string, w: Window) => db<CallSample[]>`
  select agent_version as version,
    status in ('completed', 'failed') as ended,
    status = 'completed' as completed,
    (end_reason = 'transferred' or exists (select 1 from call_transfers t where t.call_id = c.id)) as transferred,
    end_reason, outcome,
    duration_seconds::float8 as duration,
    case when (latency->'e2e'->>'samples')::int > 0 then (latency->'e2e'->>'p50_ms')::float8 end as e2e,
    case when (latency->'llm_ttft'->>'samples')::int > 0 then (latency->'llm_ttft'->>'p50_ms')::float8 end as ttft
  from (
    select *, row_number() over (partition by agent_version order by created_at desc) as n
    from calls
    where org_id = ${orgId} and agent_id = ${agentId} and agent_version is not null and test_run_id is null
      and created_at >= ${w.since} and created_at < ${w.until}
  ) c
  where n <= ${MAX_COMPARED_CALLS}`;

export const testTotals = (db: Db, orgId: string, agentId: string, w: Window) => db<{ version: number; runs: number; passed: number; scenarios: number }[]>`
  select agent_version as version, count(*)::int as runs, sum(passed)::int as passed, sum(passed + failed + errored)::int as scenarios
  from agent_test_runs
  where org_id = ${orgId} and agent_id = ${agentId} and agent_version is not null and status = 'completed'
    and created_at >= ${w.since} and created_at < ${w.until}
  group by agent_version`;


export async function publishedVersionOf(db: Db, orgId: string, agentId: string): Promise<{ published_version: number | null } | null> {
  const [row] = await db<{ published_version: number | null }[]>`
    select published_version from agents where id = ${agentId} and org_id = ${orgId} and deleted_at is null`;
  return row ?? null;
}
