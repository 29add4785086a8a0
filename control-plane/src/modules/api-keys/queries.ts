import type { Db } from '../../db/types.ts';
import type { NewKey } from '../../auth/keys.ts';
import { pageOf, totalColumn, type Counted, type Row } from '../../db/list-page.ts';

const columns = (db: Db) => db`
  id, name, key_prefix, last4, key_prefix || '...' || last4 as masked_key, expires_at, revoked_at, last_used_at, created_at`;

export async function insertApiKey(db: Db, orgId: string, name: string, key: NewKey, expiresAt: string | null, createdBy: string | null) {
  const [row] = await db`
    insert into api_keys (org_id, name, key_hash, key_prefix, last4, expires_at, created_by)
    values (${orgId}, ${name}, ${key.hash}, ${key.prefix}, ${key.last4}, ${expiresAt}, ${createdBy})
    returning ${columns(db)}`;
  return row!;
}

export async function listApiKeys(db: Db, orgId: string, opts: { limit: number; offset: number; includeRevoked: boolean }) {
  const filter = opts.includeRevoked ? db`` : db`and revoked_at is null`;
  const from = db`api_keys where org_id = ${orgId} ${filter}`;
  const rows = await db<Counted<Row>[]>`select ${columns(db)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id limit ${opts.limit} offset ${opts.offset}`;
  return pageOf(db, rows, opts.offset, from);
}

/** Revokes; returns false when no live key of the org has that id. */
export async function revokeApiKey(db: Db, orgId: string, id: string): Promise<boolean> {
  const rows = await db`update api_keys set revoked_at = now() where id = ${id} and org_id = ${orgId} and revoked_at is null returning id`;
  return rows.length > 0;
}
