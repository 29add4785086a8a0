import type { Db } from '../../db/types.ts';

/** Today's and this month's (UTC) consumption of an org, with its limits. */
export async function usageOf(db: Db, orgId: string) {
  const [row] = await db<{
    max_calls_per_day: number;
    kb_token_budget: number;
    calls_made_today: number;
    calls_this_month: number;
    seconds_this_month: number;
    cost_cents_this_month: number;
    test_ms_this_month: number;
    period_start: Date;
  }[]>`
    with bounds as (select date_trunc('month', now() at time zone 'utc') at time zone 'utc' as month_start)
    select o.max_calls_per_day, o.kb_token_budget,
           coalesce((select calls from org_daily_calls d where d.org_id = o.id and d.day = (now() at time zone 'utc')::date), 0)::int as calls_made_today,
           (select count(*) from calls c, bounds b where c.org_id = o.id and c.created_at >= b.month_start and c.test_run_id is null)::int as calls_this_month,
           ((select coalesce(sum(duration_seconds), 0) from calls c, bounds b where c.org_id = o.id and c.created_at >= b.month_start and c.test_run_id is null)
            -- A warm transfer's second leg is billed too (docs/decisions/036-warm-transfer.md).
            + (select coalesce(sum(t.duration_seconds), 0) from call_transfers t join calls c on c.id = t.call_id, bounds b
                where t.org_id = o.id and c.created_at >= b.month_start and c.test_run_id is null))::int as seconds_this_month,
           ((select coalesce(sum(cost_cents), 0) from calls c, bounds b where c.org_id = o.id and c.created_at >= b.month_start and c.test_run_id is null)
            + (select coalesce(sum(t.cost_cents), 0) from call_transfers t join calls c on c.id = t.call_id, bounds b
                where t.org_id = o.id and c.created_at >= b.month_start and c.test_run_id is null))::int as cost_cents_this_month,
           (select coalesce(sum(duration_ms), 0) from agent_test_results r, bounds b
             where r.org_id = o.id and r.duration_ms is not null and r.ended_at >= b.month_start)::float8 as test_ms_this_month,
           (select month_start from bounds) as period_start
    from orgs o where o.id = ${orgId}`;
  return row;
}
