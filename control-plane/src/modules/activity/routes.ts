import { defineRoute } from '../../http/route.ts';
import { ActivityQuery, ActivitySummary, ActivityTimeseries, ActivityTimeseriesQuery, MAX_BUCKETS } from '../../../../schemas/activity.ts';
import { activitySummary, activityTimeseries, resolveWindow } from './service.ts';
import { versionComparison } from './version-comparison.ts';

export const activityRoutes = [
  defineRoute({
    method: 'get',
    path: '/activity/summary',
    operationId: 'getActivitySummary',
    tag: 'activity',
    summary: 'Organisation activity summary',
    description:
      'Lifetime resource counts, and for the window [`since`, `until`): audit actions grouped by action and resource type, ' +
      'calls by status, outcome and end reason, and error signals taken from stored records only. `until` defaults to now and ' +
      '`since` to 30 days before `until` (so 30 days before now, the spec\'s default, without `until`); `since` after `until` is a 422. With `agent_id`, ' +
      '`version_comparison` compares that agent\'s versions over the window: calls, completion, end reasons, analysis outcomes, transfers, ' +
      'duration, latency p50/p95 and test results, each with its sample size, and each version against the baseline (the published one) with a ' +
      'test that says whether the difference is `significant`, `within_noise` or has `insufficient_data`.',
    query: ActivityQuery,
    responses: { 200: { description: 'Activity summary', schema: ActivitySummary } },
    handler: async ({ query, auth, db }) => {
      const window = resolveWindow(query);
      const summary = await activitySummary(db, auth.orgId, window);
      return query.agent_id ? { ...summary, version_comparison: await versionComparison(db, auth.orgId, query.agent_id, window) } : summary;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/activity/timeseries',
    operationId: 'getActivityTimeseries',
    tag: 'activity',
    summary: 'Calls and latency over time',
    description:
      'For each hour or day (UTC) of the window [`since`, `until`): the calls created by status, and the p50 and p95 of ' +
      "the ended calls' per-turn latency (`eou_delay`, `llm_ttft`, `tts_ttfb`, `e2e`), taken over each call's median turn " +
      '(null when no call of the bucket has a sample). Every bucket is listed, empty ones too. The window defaults as ' +
      `the summary's (30 days to now); more than ${MAX_BUCKETS} buckets is a 422 on \`bucket\`.`,
    query: ActivityTimeseriesQuery,
    responses: { 200: { description: 'Buckets', schema: ActivityTimeseries } },
    handler: async ({ query, auth, db }) => activityTimeseries(db, auth.orgId, resolveWindow(query), query.bucket),
  }),
];
