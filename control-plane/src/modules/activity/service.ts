// Builds the organisation activity summary from stored records only (no logs, no metrics).
import type { Db } from '../../db/types.ts';
import { invalidField } from '../../http/errors.ts';
import type { ActivitySummary } from '../../../../schemas/activity.ts';
import { auditActions, callGroups, erroredSources, orgRow, resourceCounts, webhookSignals, type Window } from './queries.ts';

const DEFAULT_DAYS = 30;

/**
 * The spec's defaults: `until` now, `since` 30 days before now (not before `until`). A window that ends before it
 * starts is a 422, on `until` when only `until` was given (it lies more than 30 days back).
 */
export function resolveWindow(q: { since?: string | undefined; until?: string | undefined }, now = new Date()): Window {
  const until = q.until ? new Date(q.until) : now;
  const since = q.since ? new Date(q.since) : new Date(now.getTime() - DEFAULT_DAYS * 86_400_000);
  if (since.getTime() > until.getTime()) {
    throw q.since
      ? invalidField(['query', 'since'], 'since must not be after until', 'value_error', q.since)
      : invalidField(['query', 'until'], 'until must not be before since', 'value_error', q.until);
  }
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
