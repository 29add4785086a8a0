import type { Db } from '../../db/types.ts';
import type { NewKey } from '../../auth/keys.ts';
import { pageOf, totalColumn, type Counted, type Row } from '../../db/list-page.ts';

// `key` is the whole key: public by design, it is kept (key_value). Keys from before it was kept have only their
// hash, and answer the masked form (docs/decisions/spec-publishable-keys-whole.md).
const columns = (db: Db) => db`
  id, name, coalesce(key_value, key_prefix || '...' || last4) as key, key_prefix, is_active, allowed_origins, scopes, agent_ids,
  allowed_overrides, last_used_at, revoked_at, created_at, updated_at`;

export interface PublishableKeyInput {
  name: string;
  allowedOrigins: string[];
  scopes: string[];
  agentIds: string[] | null;
  allowedOverrides: string[];
}

export async function insertPublishableKey(db: Db, orgId: string, key: NewKey, k: PublishableKeyInput) {
  const [row] = await db`
    insert into publishable_keys (org_id, name, key_hash, key_value, key_prefix, last4, allowed_origins, scopes, agent_ids, allowed_overrides)
    values (${orgId}, ${k.name}, ${key.hash}, ${key.key}, ${key.prefix}, ${key.last4}, ${k.allowedOrigins}, ${k.scopes}, ${k.agentIds}, ${k.allowedOverrides})
    returning ${columns(db)}`;
  return row!;
}

export async function listPublishableKeys(db: Db, orgId: string, opts: { limit: number; offset: number; includeRevoked: boolean }) {
  const filter = opts.includeRevoked ? db`` : db`and revoked_at is null`;
  const from = db`publishable_keys where org_id = ${orgId} ${filter}`;
  const rows = await db<Counted<Row>[]>`select ${columns(db)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${opts.limit} offset ${opts.offset}`;
  return pageOf(db, rows, opts.offset, from);
}

export async function getPublishableKey(db: Db, orgId: string, id: string) {
  const [row] = await db`select ${columns(db)} from publishable_keys where id = ${id} and org_id = ${orgId}`;
  return row ?? null;
}

/** Locks the row for an update and says whether it is revoked; null when the org has no such key. */
export async function lockPublishableKey(db: Db, orgId: string, id: string): Promise<{ revoked: boolean } | null> {
  const [row] = await db<{ revoked: boolean }[]>`
    select revoked_at is not null as revoked from publishable_keys where id = ${id} and org_id = ${orgId} for update`;
  return row ?? null;
}

export interface PublishableKeyChanges {
  name?: string | undefined;
  allowedOrigins?: string[] | undefined;
  scopes?: string[] | undefined;
  /** undefined: unchanged; null: every agent. */
  agentIds?: string[] | null | undefined;
  allowedOverrides?: string[] | undefined;
  isActive?: boolean | undefined;
}

export async function updatePublishableKey(db: Db, orgId: string, id: string, ch: PublishableKeyChanges) {
  const [row] = await db`
    update publishable_keys set
      ${ch.name !== undefined ? db`name = ${ch.name},` : db``}
      ${ch.allowedOrigins !== undefined ? db`allowed_origins = ${ch.allowedOrigins},` : db``}
      ${ch.scopes !== undefined ? db`scopes = ${ch.scopes},` : db``}
      ${ch.agentIds !== undefined ? db`agent_ids = ${ch.agentIds},` : db``}
      ${ch.allowedOverrides !== undefined ? db`allowed_overrides = ${ch.allowedOverrides},` : db``}
      ${ch.isActive !== undefined ? db`is_active = ${ch.isActive},` : db``}
      updated_at = now()
    where id = ${id} and org_id = ${orgId}
    returning ${columns(db)}`;
  return row ?? null;
}

/** Revokes and keeps the record; returns false when the org has no live key with that id. */
export async function revokePublishableKey(db: Db, orgId: string, id: string): Promise<boolean> {
  const rows = await db`
    update publishable_keys set is_active = false, revoked_at = now(), updated_at = now()
    where id = ${id} and org_id = ${orgId} and revoked_at is null returning id`;
  return rows.length > 0;
}
