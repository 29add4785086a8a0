import { defineRoute } from '../../http/route.ts';
import { AuditEventList, AuditEventQuery } from '../../../../schemas/audit-events.ts';
import { listAudit } from './queries.ts';

export const auditEventRoutes = [
  defineRoute({
    method: 'get',
    path: '/audit-events',
    operationId: 'listAuditEvents',
    tag: 'audit-events',
    summary: 'List audit events',
    description: 'Every mutating request writes one audit event in the same transaction as the change. Newest first.',
    query: AuditEventQuery,
    responses: { 200: { description: 'Audit events, newest first', schema: AuditEventList } },
    handler: async ({ query, auth, db }) => {
      const { items, total } = await listAudit(db, {
        orgId: auth.orgId,
        actorId: query.actor === 'me' ? auth.actorId : undefined,
        resourceType: query.resource_type,
        action: query.action,
        since: query.since,
        until: query.until,
        limit: query.limit,
        offset: query.offset,
      });
      return { items, total, limit: query.limit, offset: query.offset };
    },
  }),
];
