// Organisation creation, used by the admin command and by the first start of a development platform.
import type { Sql } from 'postgres';
import { generateKey, SECRET_PREFIX } from '../../auth/keys.ts';
import { insertApiKey } from '../api-keys/queries.ts';
import { writeAudit } from '../audit-events/queries.ts';
import { anyOrgLocked, insertOrg } from './queries.ts';

export interface CreatedOrg {
  org_id: string;
  org_name: string;
  api_key: string;
}

export async function createOrgWithKey(sql: Sql, name: string, opts: { isDev?: boolean } = {}): Promise<CreatedOrg> {
  return sql.begin(async (tx) => {
    const org = await insertOrg(tx, name, opts.isDev ?? false);
    const key = generateKey(SECRET_PREFIX);
    const row = await insertApiKey(tx, org.id, 'default', key, null, 'admin');
    await writeAudit(tx, { orgId: org.id, actorType: 'system', actorId: null, action: 'org.create', resourceType: 'org', resourceId: org.id });
    await writeAudit(tx, { orgId: org.id, actorType: 'system', actorId: null, action: 'api_key.create', resourceType: 'api_key', resourceId: row.id as string });
    return { org_id: org.id, org_name: org.name, api_key: key.key };
  });
}

/** On a platform with no organisation at all, creates a development one (under an advisory lock). */
export async function ensureDevOrg(sql: Sql): Promise<CreatedOrg | null> {
  return sql.begin(async (tx) => {
    if (await anyOrgLocked(tx)) return null;
    const org = await insertOrg(tx, 'Development', true);
    const key = generateKey(SECRET_PREFIX);
    const row = await insertApiKey(tx, org.id, 'dev', key, null, 'bootstrap');
    await writeAudit(tx, { orgId: org.id, actorType: 'system', actorId: null, action: 'org.create', resourceType: 'org', resourceId: org.id });
    await writeAudit(tx, { orgId: org.id, actorType: 'system', actorId: null, action: 'api_key.create', resourceType: 'api_key', resourceId: row.id as string });
    return { org_id: org.id, org_name: org.name, api_key: key.key };
  });
}
