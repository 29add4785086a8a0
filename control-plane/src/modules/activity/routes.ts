import { defineRoute } from '../../http/route.ts';
import { ActivityQuery, ActivitySummary } from '../../../../schemas/activity.ts';
import { activitySummary, resolveWindow } from './service.ts';

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
      '`since` to 30 days before now (the spec\'s default, whatever `until` is); `since` after `until` is a 422.',
    query: ActivityQuery,
    responses: { 200: { description: 'Activity summary', schema: ActivitySummary } },
    handler: async ({ query, auth, db }) => activitySummary(db, auth.orgId, resolveWindow(query)),
  }),
];
