// Builds the organisation activity summary from stored records only (no logs, no metrics).
import type { Db } from '../../db/types.ts';
import { invalidField } from '../../http/errors.ts';
import { MAX_BUCKETS, type ActivitySummary, type ActivityTimeseries } from '../../../../schemas/activity.ts';
import { CALL_STATUSES } from '../../../../schemas/calls.ts';
import { auditActions, callGroups, erroredSources, LATENCY_FIGURES, latencyBuckets, orgRow, resourceCounts, statusBuckets, webhookSignals, type Window } from './queries.ts';

const DEFAULT_DAYS = 30;

/**
 * Defaults: `until` now, `since` 30 days before `until` — the spec's "30 days before now" when `until` is absent,
 * and a 30-day window ending at `until` when only `until` is given (docs/decisions/spec-activity-window.md). Only
 * an explicit `since` after `until` is a 422.
 */
export function resolveWindow(q: { since?: string | undefined; until?: string | undefined }, now = new Date()): Window {
  const until = q.until ? new Date(q.until) : now;
  const since = q.since ? new Date(q.since) : new Date(until.getTime() - DEFAULT_DAYS * 86_400_000);
  if (since.getTime() > until.getTime()) throw invalidField(['query', 'since'], 'since must not be after until', 'value_error', q.since);
  return { since, until };
}

export async function activitySummary(db: Db, orgId: string, w: Window): Promise<ActivitySummary> {
  const [[org], [counts], audit, groups, [hooks], sources] = await Promise.all([
    orgRow(db, orgId),
    resourceCounts(db, orgId),
    auditActions(db, orgId, w),
    callGroups(db, orgId, w),
    webhookSignals(db, orgId, w),
    erroredSources(db, orgId),
  ]);
  const pick = (dim: string) =>
    groups
      .filter((g) => g.dim === dim && g.value !== null)
      .map((g) => ({ value: g.value!, count: g.count }))
      .sort((a, b) => b.count - a.count || a.value.localeCompare(b.value));
  const total = groups.find((g) => g.dim === 'total');
  return {
    org_id: org!.id,
    org_name: org!.name,
    signup_date: org!.created_at.toISOString(),
    window: { since: w.since.toISOString(), until: w.until.toISOString() },
    resource_counts: counts!,
    audit_actions: audit.map((a) => ({ action: a.action, resource_type: a.resource_type, count: a.count })),
    call_summary: { total: total?.count ?? 0, by_status: pick('status'), by_outcome: pick('outcome'), by_end_reason: pick('end_reason') },
    error_signals: {
      calls_ended_in_error: total?.failed ?? 0,
      kb_sources_errored: sources.map((s) => ({ knowledge_base_id: s.knowledge_base_id, source_id: s.source_id, error_message: s.error_message })),
      webhook_deliveries_failed: hooks!.deliveries_failed,
      webhooks_disabled: hooks!.webhooks_disabled,
      analyses_failed: total?.analyses_failed ?? 0,
    },
  };
}

const BUCKET_MS = { hour: 3_600_000, day: 86_400_000 } as const;

/** Bucket starts of the window: `since` rounded down to the UTC hour or day, then every bucket before `until`. */
export function bucketStarts(w: Window, bucket: 'hour' | 'day'): Date[] {
  const size = BUCKET_MS[bucket];
  const first = Math.floor(w.since.getTime() / size) * size;
  const n = Math.max(1, Math.ceil((w.until.getTime() - first) / size));
  if (n > MAX_BUCKETS) {
    throw invalidField(['query', 'bucket'], `The window holds ${n} buckets of a ${bucket}; at most ${MAX_BUCKETS}: narrow the window or use a wider bucket`, 'value_error', bucket);
  }
  return Array.from({ length: n }, (_, i) => new Date(first + i * size));
}

const round = (v: number | null | undefined) => (v === null || v === undefined ? null : Math.round(v));

/** GET /v1/activity/timeseries: calls by status and latency percentiles per bucket, empty buckets included. */
export async function activityTimeseries(db: Db, orgId: string, w: Window, bucket: 'hour' | 'day'): Promise<ActivityTimeseries> {
  const starts = bucketStarts(w, bucket);
  const [statuses, latencies] = await Promise.all([statusBuckets(db, orgId, w, bucket), latencyBuckets(db, orgId, w, bucket)]);
  const byStart = new Map(starts.map((s) => [s.getTime(), { counts: Object.fromEntries(CALL_STATUSES.map((st) => [st, 0])), latency: null as (typeof latencies)[number] | null }]));
  for (const r of statuses) {
    const b = byStart.get(r.start.getTime());
    if (b) b.counts[r.status] = r.count;
  }
  for (const r of latencies) {
    const b = byStart.get(r.start.getTime());
    if (b) b.latency = r;
  }
  return {
    window: { since: w.since.toISOString(), until: w.until.toISOString() },
    bucket,
    buckets: starts.map((s) => {
      const b = byStart.get(s.getTime())!;
      return {
        start: s.toISOString(),
        calls_by_status: b.counts,
        latency: Object.fromEntries(
          LATENCY_FIGURES.map((f) => [f, { p50: round(b.latency?.[f]?.[0]), p95: round(b.latency?.[f]?.[1]) }]),
        ) as ActivityTimeseries['buckets'][number]['latency'],
      };
    }),
  };
}
