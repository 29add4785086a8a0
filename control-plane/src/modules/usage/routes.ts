// GET /v1/usage: consumption against the org's limits. Daily figures are for the current UTC day (reset at
// 00:00 UTC); monthly figures for the current UTC calendar month.
import { defineRoute } from '../../http/route.ts';
import { Usage } from '../../../../schemas/calls.ts';

export const usageRoutes = [
  defineRoute({
    method: 'get',
    path: '/usage',
    operationId: 'getUsage',
    tag: 'usage',
    summary: 'Usage snapshot',
    description:
      '`calls_made_today` counts calls created today (UTC), including ones that failed to connect; ' +
      '`minutes_used_this_month` is the billed credit total (1 credit = 1 active minute, duration_seconds / 60).',
    responses: { 200: { description: 'Usage', schema: Usage } },
    handler: async ({ auth, db }) => {
      const [row] = await db<{
        max_calls_per_day: number;
        kb_token_budget: number;
        calls_made_today: number;
        calls_this_month: number;
        seconds_this_month: number;
        cost_cents_this_month: number;
        period_start: Date;
      }[]>`
        with bounds as (select date_trunc('month', now() at time zone 'utc') at time zone 'utc' as month_start)
        select o.max_calls_per_day, o.kb_token_budget,
               coalesce((select calls from org_daily_calls d where d.org_id = o.id and d.day = (now() at time zone 'utc')::date), 0)::int as calls_made_today,
               (select count(*) from calls c, bounds b where c.org_id = o.id and c.created_at >= b.month_start)::int as calls_this_month,
               (select coalesce(sum(duration_seconds), 0) from calls c, bounds b where c.org_id = o.id and c.created_at >= b.month_start)::int as seconds_this_month,
               (select coalesce(sum(cost_cents), 0) from calls c, bounds b where c.org_id = o.id and c.created_at >= b.month_start)::int as cost_cents_this_month,
               (select month_start from bounds) as period_start
        from orgs o where o.id = ${auth.orgId}`;
      const r = row!;
      return {
        calls_made_today: r.calls_made_today,
        max_calls_per_day: r.max_calls_per_day,
        calls_remaining_today: Math.max(0, r.max_calls_per_day - r.calls_made_today),
        calls_this_month: r.calls_this_month,
        minutes_used_this_month: Math.round((r.seconds_this_month / 60) * 100) / 100,
        cost_cents_this_month: r.cost_cents_this_month,
        kb_token_budget: r.kb_token_budget,
        period_start: r.period_start,
      };
    },
  }),
];
