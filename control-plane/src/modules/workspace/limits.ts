// Organisation limits are the operator's to set (the admin command), never an API credential's.
import type { Sql } from 'postgres';
import { writeAudit } from '../audit-events/queries.ts';
import { setLimits, type Limits } from './queries.ts';

export interface SetLimitsResult {
  org_id: string;
  limits: Limits;
  previous: Limits;
}

/** Sets the given limits (others unchanged), audited as the system; null when the organisation does not exist. */
export async function setOrgLimits(sql: Sql, orgId: string, limits: Partial<Record<keyof Limits, number | undefined>>): Promise<SetLimitsResult | null> {
  const given = Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)) as Partial<Limits>;
  return sql.begin(async (tx) => {
    const changed = await setLimits(tx, orgId, given);
    if (!changed) return null;
    await writeAudit(tx, {
      orgId,
      actorType: 'system',
      actorId: null,
      action: 'org.set_limits',
      resourceType: 'org',
      resourceId: orgId,
      details: { limits: given, previous: changed.before },
    });
    return { org_id: orgId, limits: changed.after, previous: changed.before };
  });
}
