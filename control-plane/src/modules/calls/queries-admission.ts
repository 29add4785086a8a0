// SQL of call admission (limits.ts): the org's limits, its spend of the day and its live calls.
import type { Db } from '../../db/types.ts';

/** Advisory-lock namespace of call admission ('vap1'); the second key is the org. */
const LOCK_NAMESPACE = 0x76617031;

/** Serialises the admissions of one org until the end of the transaction. */
export async function lockAdmission(tx: Db, orgId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(${LOCK_NAMESPACE}::int, hashtext(${orgId}::text))`;
}

export interface CallLimits {
  max_calls_per_day: number;
  max_concurrent_calls: number;
  daily_spend_cap_cents: number;
}

export async function callLimitsOf(db: Db, orgId: string): Promise<CallLimits | undefined> {
  const [org] = await db<CallLimits[]>`
    select max_calls_per_day, max_concurrent_calls, daily_spend_cap_cents from orgs where id = ${orgId}`;
  return org;
}

/**
 * The org's carrier spend of the UTC day, in cents: the cost of phone calls that ended since 00:00 UTC, plus
 * what connected calls have cost so far (rate x minutes begun), which finishCall has not written yet.
 */
export async function spendTodayCents(db: Db, orgId: string): Promise<number> {
  // Warm transfers' second legs are outbound carrier calls too (transfers.ts): one statement sums both, each
  // leg priced from its answer (a call from its start).
  const [row] = await db<{ cents: number }[]>`
    select coalesce(sum(case
             when ended_at is not null then coalesce(cost_cents, 0)
             else ceil(rate_cents_per_minute * greatest(1, ceil(extract(epoch from now() - connected_at) / 60)))
           end), 0)::int as cents
    from (
      select ended_at, cost_cents, rate_cents_per_minute, started_at as connected_at
      from calls
      where org_id = ${orgId} and rate_cents_per_minute is not null
        and (ended_at >= date_trunc('day', now() at time zone 'utc') at time zone 'utc'
             or (ended_at is null and status = 'in_progress' and started_at is not null))
      union all
      select ended_at, cost_cents, rate_cents_per_minute, answered_at
      from call_transfers
      where org_id = ${orgId} and rate_cents_per_minute is not null
        and (ended_at >= date_trunc('day', now() at time zone 'utc') at time zone 'utc'
             or (ended_at is null and status in ('answered', 'joined') and answered_at is not null))
    ) legs`;
  return row!.cents;
}

/**
 * Live calls: dialling, ringing or connected. A queued call with no `scheduled_at` is about to dial, so it
 * counts; a scheduled one counts only once its dial job has admitted it (and moved it to `initiated`).
 * `which`: web calls started with a publishable key have their own pool (`publishable`); the org's
 * `max_concurrent_calls` counts the others (`others`) for every call but those, which see `all`. A voice-mode
 * agent test's call (`test_run_id`) never counts: tests take only the capacity real calls leave (agent-tests).
 */
export async function countLiveCalls(
  db: Db,
  orgId: string,
  excludeCallId: string | null = null,
  which: 'all' | 'others' | 'publishable' = 'all',
): Promise<number> {
  const kind = which === 'all' ? db`` : which === 'others' ? db`and publishable_key_id is null` : db`and publishable_key_id is not null`;
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from calls
    where org_id = ${orgId}
      and status in ('queued', 'initiated', 'in_progress')
      and (status <> 'queued' or scheduled_at is null)
      and test_run_id is null
      ${kind}
      ${excludeCallId ? db`and id <> ${excludeCallId}` : db``}`;
  return row!.n;
}
