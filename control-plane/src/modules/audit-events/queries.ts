import type { Db } from '../../db/types.ts';
import type { ActorType } from '../../auth/service.ts';

export interface AuditWrite {
  orgId: string;
  actorType: ActorType;
  actorId: string | null;
  action: string;
  resourceType: string;
  resourceId: string | null;
  requestId?: string | null;
  ip?: string | null;
  details?: Record<string, unknown>;
}

export async function writeAudit(db: Db, e: AuditWrite): Promise<void> {
  await db`
    insert into audit_events (org_id, actor_type, actor_id, action, resource_type, resource_id, request_id, ip, details)
    values (${e.orgId}, ${e.actorType}, ${e.actorId}, ${e.action}, ${e.resourceType}, ${e.resourceId},
            ${e.requestId ?? null}, ${e.ip ?? null}, ${db.json((e.details ?? {}) as never)})`;
}

export interface AuditFilter {
  orgId: string;
  actorId?: string | undefined;
  resourceType?: string | undefined;
  action?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit: number;
  offset: number;
}

export async function listAudit(db: Db, f: AuditFilter) {
  const where = db`
    org_id = ${f.orgId}
    ${f.actorId ? db`and actor_id = ${f.actorId}` : db``}
    ${f.resourceType ? db`and resource_type = ${f.resourceType}` : db``}
    ${f.action ? db`and action = ${f.action}` : db``}
    ${f.since ? db`and created_at >= ${f.since}` : db``}
    ${f.until ? db`and created_at < ${f.until}` : db``}`;
  // One round trip: the window count sees every row the filter matches, before LIMIT applies.
  const rows = await db`
    select id, actor_type, actor_id, action, resource_type, resource_id, request_id, host(ip) as ip, details, created_at,
           count(*) over () as total_count
    from audit_events where ${where}
    order by created_at desc, id desc
    limit ${f.limit} offset ${f.offset}`;
  let total: number;
  if (rows.length) total = Number(rows[0]!.total_count);
  else if (f.offset === 0) total = 0;
  else {
    const [c] = await db<{ total: number }[]>`select count(*)::int as total from audit_events where ${where}`;
    total = c!.total;
  }
  const items = rows.map(({ total_count: _, ...rest }) => rest);
  return { items, total };
}
