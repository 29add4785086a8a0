// GET /v1/usage: consumption against the org's limits. Daily figures are for the current UTC day (reset at
// 00:00 UTC); monthly figures for the current UTC calendar month.
import { defineRoute } from '../../http/route.ts';
import { Usage } from '../../../../schemas/calls.ts';
import { usageOf } from './queries.ts';

export const usageRoutes = [
  defineRoute({
    method: 'get',
    path: '/usage',
    operationId: 'getUsage',
    tag: 'usage',
    summary: 'Usage snapshot',
    description:
      '`calls_made_today` counts calls created today (UTC), including ones that failed to connect; ' +
      '`minutes_used_this_month` is the billed credit total (1 credit = 1 active minute, duration_seconds / 60). ' +
      '`test_minutes_this_month` is the conversation time of agent test runs, which are not calls and not billed as calls.',
    responses: { 200: { description: 'Usage', schema: Usage } },
    handler: async ({ auth, db }) => {
      const row = await usageOf(db, auth.orgId);
      const r = row!;
      return {
        calls_made_today: r.calls_made_today,
        max_calls_per_day: r.max_calls_per_day,
        calls_remaining_today: Math.max(0, r.max_calls_per_day - r.calls_made_today),
        calls_this_month: r.calls_this_month,
        minutes_used_this_month: Math.round((r.seconds_this_month / 60) * 100) / 100,
        cost_cents_this_month: r.cost_cents_this_month,
        kb_token_budget: r.kb_token_budget,
        test_minutes_this_month: Math.round((r.test_ms_this_month / 60000) * 100) / 100,
        period_start: r.period_start,
      };
    },
  }),
];
