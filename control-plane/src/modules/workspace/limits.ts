// Organisation limits are the operator's to set (the admin command), never an API credential's.
import type { Sql } from 'postgres';
import { writeAudit } from '../audit-events/queries.ts';
import { setDestinationLimits, setLimits, type DestinationLimits, type Limits } from './queries.ts';

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

/** The destination ceiling (countries beyond the org's numbers', unblockable types), audited as the system. */
export async function setOrgDestinationLimits(
  sql: Sql,
  orgId: string,
  limits: { [K in keyof DestinationLimits]?: string[] | undefined },
): Promise<{ org_id: string; limits: DestinationLimits; previous: DestinationLimits } | null> {
  const given = Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)) as Partial<DestinationLimits>;
  return sql.begin(async (tx) => {
    const changed = await setDestinationLimits(tx, orgId, given);
    if (!changed) return null;
    await writeAudit(tx, {
      orgId,
      actorType: 'system',
      actorId: null,
      action: 'org.set_destination_limits',
      resourceType: 'org',
      resourceId: orgId,
      details: { limits: given, previous: changed.before },
    });
    return { org_id: orgId, limits: changed.after, previous: changed.before };
  });
}
