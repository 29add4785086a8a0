import type { Db } from '../../db/types.ts';
import type { Sealed } from '../../crypto/secrets.ts';
import type { CredentialProvider } from '../../../../schemas/credentials.ts';
import { pageOf, totalColumn, type Counted, type Row } from '../../db/list-page.ts';

export interface KeyHints {
  key_prefix: string | null;
  last4: string | null;
}

/** The newest sealed key of each provider of an org. */
export async function newestKeyPerProvider(db: Db, orgId: string) {
  return db<{ id: string; provider: CredentialProvider; ciphertext: Buffer; key_version: number }[]>`
    select distinct on (provider) id, provider, ciphertext, key_version
    from credentials where org_id = ${orgId}
    order by provider, created_at desc, id desc`;
}

// Never selects the ciphertext: API answers have no business near it.
const columns = (db: Db) => db`
  id, name, provider,
  case when key_prefix is not null and last4 is not null then key_prefix || '...' || last4 else '****' end as masked_key,
  metadata, created_at, updated_at`;

export interface NewCredential {
  id: string;
  orgId: string;
  name: string;
  provider: string;
  sealed: Sealed;
  hints: KeyHints;
  metadata: Record<string, unknown>;
}

export async function insertCredential(db: Db, c: NewCredential) {
  const [row] = await db`
    insert into credentials (id, org_id, name, provider, ciphertext, key_version, key_prefix, last4, metadata)
    values (${c.id}, ${c.orgId}, ${c.name}, ${c.provider}, ${c.sealed.ciphertext}, ${c.sealed.keyVersion},
            ${c.hints.key_prefix}, ${c.hints.last4}, ${db.json(c.metadata as never)})
    returning ${columns(db)}`;
  return row!;
}

export async function listCredentials(db: Db, orgId: string, opts: { limit: number; offset: number; provider?: string | undefined }) {
  const filter = opts.provider ? db`and provider = ${opts.provider}` : db``;
  const from = db`credentials where org_id = ${orgId} ${filter}`;
  const rows = await db<Counted<Row>[]>`select ${columns(db)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${opts.limit} offset ${opts.offset}`;
  return pageOf(db, rows, opts.offset, from);
}

export async function getCredential(db: Db, orgId: string, id: string) {
  const [row] = await db`select ${columns(db)} from credentials where id = ${id} and org_id = ${orgId}`;
  return row ?? null;
}

export interface CredentialChanges {
  name?: string | undefined;
  sealed?: Sealed | undefined;
  hints?: KeyHints | undefined;
  metadata?: Record<string, unknown> | undefined;
}

export async function updateCredential(db: Db, orgId: string, id: string, ch: CredentialChanges) {
  const [row] = await db`
    update credentials set
      ${ch.name !== undefined ? db`name = ${ch.name},` : db``}
      ${ch.sealed ? db`ciphertext = ${ch.sealed.ciphertext}, key_version = ${ch.sealed.keyVersion},` : db``}
      ${ch.hints ? db`key_prefix = ${ch.hints.key_prefix}, last4 = ${ch.hints.last4},` : db``}
      ${ch.metadata !== undefined ? db`metadata = ${db.json(ch.metadata as never)},` : db``}
      updated_at = now()
    where id = ${id} and org_id = ${orgId}
    returning ${columns(db)}`;
  return row ?? null;
}

export async function deleteCredential(db: Db, orgId: string, id: string): Promise<{ name: string; provider: string } | null> {
  const [row] = await db<{ name: string; provider: string }[]>`
    delete from credentials where id = ${id} and org_id = ${orgId} returning name, provider`;
  return row ?? null;
}
