import type { Db } from '../../db/types.ts';
import type { ToolType } from '../../../../schemas/tools.ts';
import { pageOf, totalColumn, type Counted } from '../../db/list-page.ts';

export interface SealedColumn {
  ciphertext: Buffer;
  keyVersion: number;
}

/** A tool row as stored . */
export interface ToolRow {
  id: string;
  type: ToolType;
  name: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
  url: string | null;
  method: string | null;
  headers_ciphertext: Buffer | null;
  headers_key_version: number | null;
  timeout_ms: number | null;
  destination: string | null;
  transfer_mode: string | null;
  signing_secret_ciphertext: Buffer | null;
  signing_secret_key_version: number | null;
  previous_secret_ciphertext: Buffer | null;
  previous_secret_key_version: number | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Live tools of an org among `ids` (any order). */
export async function liveToolsByIds(db: Db, orgId: string, ids: string[]): Promise<ToolRow[]> {
  return db<ToolRow[]>`select * from tools where org_id = ${orgId} and id = any(${ids}::uuid[]) and deleted_at is null`;
}

const columns = (db: Db) => db`
  id, type, name, description, parameters, url, method, headers_ciphertext, headers_key_version, timeout_ms, destination, transfer_mode,
  signing_secret_ciphertext, signing_secret_key_version, previous_secret_ciphertext, previous_secret_key_version,
  previous_secret_expires_at, created_at, updated_at`;

export interface ToolWrite {
  name: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
  url: string | null;
  method: string | null;
  headers: SealedColumn | null;
  timeout_ms: number | null;
  destination: string | null;
  transfer_mode: string | null;
}

export async function insertTool(db: Db, orgId: string, id: string, type: ToolType, t: ToolWrite, signing: SealedColumn | null): Promise<ToolRow> {
  const [row] = await db<ToolRow[]>`
    insert into tools (id, org_id, type, name, description, parameters, url, method, headers_ciphertext, headers_key_version,
                       timeout_ms, destination, transfer_mode, signing_secret_ciphertext, signing_secret_key_version)
    values (${id}, ${orgId}, ${type}, ${t.name}, ${t.description}, ${t.parameters ? db.json(t.parameters as never) : null}, ${t.url}, ${t.method},
            ${t.headers?.ciphertext ?? null}, ${t.headers?.keyVersion ?? null}, ${t.timeout_ms}, ${t.destination}, ${t.transfer_mode},
            ${signing?.ciphertext ?? null}, ${signing?.keyVersion ?? null})
    returning ${columns(db)}`;
  return row!;
}

export async function getTool(db: Db, orgId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<ToolRow | null> {
  const [row] = await db<ToolRow[]>`
    select ${columns(db)} from tools where id = ${id} and org_id = ${orgId} and deleted_at is null ${opts.forUpdate ? db`for update` : db``}`;
  return row ?? null;
}

export async function listTools(db: Db, orgId: string, q: { limit: number; offset: number; type?: string | undefined }) {
  const where = db`org_id = ${orgId} and deleted_at is null ${q.type ? db`and type = ${q.type}` : db``}`;
  const from = db`tools where ${where}`;
  const rows = await db<Counted<ToolRow>[]>`select ${columns(db)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`;
  return pageOf(db, rows, q.offset, from);
}

export async function updateTool(db: Db, orgId: string, id: string, t: ToolWrite): Promise<ToolRow> {
  const [row] = await db<ToolRow[]>`
    update tools set
      name = ${t.name}, description = ${t.description}, parameters = ${t.parameters ? db.json(t.parameters as never) : null},
      url = ${t.url}, method = ${t.method}, headers_ciphertext = ${t.headers?.ciphertext ?? null},
      headers_key_version = ${t.headers?.keyVersion ?? null}, timeout_ms = ${t.timeout_ms}, destination = ${t.destination}, transfer_mode = ${t.transfer_mode},
      updated_at = now()
    where id = ${id} and org_id = ${orgId} and deleted_at is null
    returning ${columns(db)}`;
  return row!;
}

/** Installs a new signing secret; the current one becomes the previous one until `graceHours` have passed. */
export async function rotateSigningSecret(db: Db, orgId: string, id: string, sealed: SealedColumn, graceHours: number): Promise<ToolRow> {
  const [row] = await db<ToolRow[]>`
    update tools set
      previous_secret_ciphertext = signing_secret_ciphertext,
      previous_secret_key_version = signing_secret_key_version,
      previous_secret_expires_at = now() + make_interval(hours => ${graceHours}),
      signing_secret_ciphertext = ${sealed.ciphertext},
      signing_secret_key_version = ${sealed.keyVersion},
      updated_at = now()
    where id = ${id} and org_id = ${orgId} and deleted_at is null
    returning ${columns(db)}`;
  return row!;
}

export async function softDeleteTool(db: Db, orgId: string, id: string): Promise<void> {
  await db`update tools set deleted_at = now(), updated_at = now() where id = ${id} and org_id = ${orgId} and deleted_at is null`;
}
