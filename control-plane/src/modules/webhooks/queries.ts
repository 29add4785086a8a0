// SQL of the webhooks resource: the webhooks, their signing secrets and their delivery records.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/types.ts';
import type { Secrets, Sealed } from '../../crypto/secrets.ts';
import { newSigningSecret } from '../../../../shared/signing.ts';

/** After a rotation the previous secret keeps signing (as a second signature) for this long. */
export const ROTATION_OVERLAP_HOURS = 24;

const columns = (db: Db) => db`
  id, name, url, events, status, disabled_reason, disabled_at, failing_since, created_at, updated_at`;

// The row id is bound into the ciphertext (AAD), so a sealed secret can't be moved to another row.
const webhookAad = (id: string) => `webhook:${id}`;
const orgAad = (orgId: string) => `webhook-org:${orgId}`;

export async function insertWebhook(db: Db, secrets: Secrets, orgId: string, w: { name: string; url: string; events: string[] }) {
  const id = randomUUID();
  const secret = newSigningSecret();
  const sealed = secrets.seal(secret, webhookAad(id));
  const [row] = await db<{ id: string }[]>`
    insert into webhooks (id, org_id, name, url, events, secret_ciphertext, secret_key_version)
    values (${id}, ${orgId}, ${w.name}, ${w.url}, ${w.events}, ${sealed.ciphertext}, ${sealed.keyVersion})
    returning ${columns(db)}`;
  return { ...row!, secret };
}

export async function listWebhooks(db: Db, orgId: string) {
  return db`select ${columns(db)} from webhooks where org_id = ${orgId} order by created_at desc, id`;
}

/** The org's webhook count, under a transaction-scoped lock so concurrent creations can't pass the cap. */
export async function countWebhooksLocked(db: Db, orgId: string): Promise<number> {
  await db`select pg_advisory_xact_lock(hashtextextended('webhooks:' || ${orgId}::text, 0))`;
  const [c] = await db<{ n: number }[]>`select count(*)::int as n from webhooks where org_id = ${orgId}`;
  return c!.n;
}

export async function getWebhook(db: Db, orgId: string, id: string) {
  const [row] = await db`select ${columns(db)} from webhooks where id = ${id} and org_id = ${orgId}`;
  return row ?? null;
}

export interface WebhookPatch {
  name?: string | undefined;
  url?: string | undefined;
  events?: string[] | undefined;
  status?: 'active' | 'inactive' | undefined;
}

/** Updates the given fields; setting `active` also clears the automatic-disable state. */
export async function updateWebhook(db: Db, orgId: string, id: string, p: WebhookPatch) {
  const reactivate = p.status === 'active';
  const [row] = await db`
    update webhooks set
      name = coalesce(${p.name ?? null}, name),
      url = coalesce(${p.url ?? null}, url),
      events = coalesce(${p.events ?? null}::text[], events),
      status = coalesce(${p.status ?? null}, status),
      disabled_reason = case when ${reactivate} then null else disabled_reason end,
      disabled_at = case when ${reactivate} then null else disabled_at end,
      failing_since = case when ${reactivate} and status = 'inactive' then null else failing_since end,
      updated_at = now()
    where id = ${id} and org_id = ${orgId}
    returning ${columns(db)}`;
  return row ?? null;
}

/** Deletes the webhook; its pending messages and delivery records go with it (foreign keys cascade). */
export async function deleteWebhook(db: Db, orgId: string, id: string): Promise<boolean> {
  const rows = await db`delete from webhooks where id = ${id} and org_id = ${orgId} returning id`;
  return rows.length > 0;
}

export async function rotateWebhookSecret(db: Db, secrets: Secrets, orgId: string, id: string) {
  const secret = newSigningSecret();
  const sealed = secrets.seal(secret, webhookAad(id));
  const [row] = await db`
    update webhooks set
      previous_secret_ciphertext = secret_ciphertext,
      previous_secret_key_version = secret_key_version,
      previous_secret_expires_at = now() + ${ROTATION_OVERLAP_HOURS} * interval '1 hour',
      secret_ciphertext = ${sealed.ciphertext},
      secret_key_version = ${sealed.keyVersion},
      updated_at = now()
    where id = ${id} and org_id = ${orgId}
    returning ${columns(db)}`;
  return row ? { ...row, secret } : null;
}

interface SecretColumns {
  secret_ciphertext: Buffer | null;
  secret_key_version: number | null;
  previous_secret_ciphertext: Buffer | null;
  previous_secret_key_version: number | null;
  previous_secret_expires_at: Date | null;
}

/** The secrets that sign a delivery: the current one, plus the previous one during a rotation's overlap. */
function openSecrets(secrets: Secrets, row: SecretColumns, aad: string): string[] {
  const out: string[] = [];
  if (row.secret_ciphertext) out.push(secrets.open({ ciphertext: row.secret_ciphertext, keyVersion: row.secret_key_version! } satisfies Sealed, aad));
  if (row.previous_secret_ciphertext && row.previous_secret_expires_at && row.previous_secret_expires_at.getTime() > Date.now())
    out.push(secrets.open({ ciphertext: row.previous_secret_ciphertext, keyVersion: row.previous_secret_key_version! }, aad));
  return out;
}

export const openWebhookSecrets = (secrets: Secrets, webhookId: string, row: SecretColumns) => openSecrets(secrets, row, webhookAad(webhookId));

/** The organisation's secret for deliveries to calls' own `webhook_url`, created on first use. */
export async function orgSigningSecrets(db: Db, secrets: Secrets, orgId: string): Promise<{ secrets: string[]; previousExpiresAt: Date | null }> {
  let [row] = await db<(SecretColumns & { previous_secret_expires_at: Date | null })[]>`
    select secret_ciphertext, secret_key_version, previous_secret_ciphertext, previous_secret_key_version, previous_secret_expires_at
    from webhook_org_secrets where org_id = ${orgId}`;
  if (!row) {
    const sealed = secrets.seal(newSigningSecret(), orgAad(orgId));
    await db`
      insert into webhook_org_secrets (org_id, secret_ciphertext, secret_key_version)
      values (${orgId}, ${sealed.ciphertext}, ${sealed.keyVersion})
      on conflict (org_id) do nothing`;
    [row] = await db<SecretColumns[]>`
      select secret_ciphertext, secret_key_version, previous_secret_ciphertext, previous_secret_key_version, previous_secret_expires_at
      from webhook_org_secrets where org_id = ${orgId}`;
  }
  const live = row!.previous_secret_expires_at && row!.previous_secret_expires_at.getTime() > Date.now() ? row!.previous_secret_expires_at : null;
  return { secrets: openSecrets(secrets, row!, orgAad(orgId)), previousExpiresAt: live };
}

export async function rotateOrgSigningSecret(db: Db, secrets: Secrets, orgId: string) {
  await orgSigningSecrets(db, secrets, orgId);
  const sealed = secrets.seal(newSigningSecret(), orgAad(orgId));
  await db`
    update webhook_org_secrets set
      previous_secret_ciphertext = secret_ciphertext,
      previous_secret_key_version = secret_key_version,
      previous_secret_expires_at = now() + ${ROTATION_OVERLAP_HOURS} * interval '1 hour',
      secret_ciphertext = ${sealed.ciphertext},
      secret_key_version = ${sealed.keyVersion},
      updated_at = now()
    where org_id = ${orgId}`;
  return orgSigningSecrets(db, secrets, orgId);
}

const deliveryColumns = (db: Db) => db`
  id, webhook_id, event_id, event, url, status, attempt, response_status, response_body, error, duration_ms,
  next_retry_at, completed_at, created_at`;

export async function listDeliveries(
  db: Db,
  orgId: string,
  webhookId: string,
  f: { limit: number; offset: number; event?: string | undefined; status?: string | undefined },
) {
  const where = db`
    org_id = ${orgId} and webhook_id = ${webhookId}
    ${f.event ? db`and event = ${f.event}` : db``}
    ${f.status ? db`and status = ${f.status}` : db``}`;
  const [items, [c]] = await Promise.all([
    db`select ${deliveryColumns(db)} from webhook_deliveries where ${where} order by created_at desc, id desc limit ${f.limit} offset ${f.offset}`,
    db<{ total: number }[]>`select count(*)::int as total from webhook_deliveries where ${where}`,
  ]);
  return { items, total: c!.total };
}

export async function getDelivery(db: Db, id: string) {
  const [row] = await db`select ${deliveryColumns(db)} from webhook_deliveries where id = ${id}`;
  return row ?? null;
}
