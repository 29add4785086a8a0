// SQL of the webhooks resource: the webhooks, their signing secrets and their delivery records.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/types.ts';
import type { Secrets, Sealed } from '../../crypto/secrets.ts';
import { newSigningSecret } from '../../../../shared/signing.ts';
import { WEBHOOK_CHANNEL } from '../events/emit.ts';
import { TEST_EVENT } from '../../../../shared/events.ts';
import { pageOf, totalColumn, type Counted, type Row } from '../../db/list-page.ts';

/** NOTIFY channel telling every process to abort attempts in flight to a deleted webhook. */
export const WEBHOOK_CANCEL_CHANNEL = 'vap_webhooks_cancel';

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

export async function listWebhooks(db: Db, orgId: string, page: { limit: number; offset: number }) {
  const items = await db`
    select ${columns(db)} from webhooks where org_id = ${orgId}
    order by created_at desc, id limit ${page.limit} offset ${page.offset}`;
  const [c] = await db<{ n: number }[]>`select count(*)::int as n from webhooks where org_id = ${orgId}`;
  return { items, total: c!.n };
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
  f: { limit: number; offset: number; event?: string | undefined; status?: string | undefined; call_id?: string | undefined },
) {
  const where = db`
    org_id = ${orgId} and webhook_id = ${webhookId}
    ${f.call_id ? db`and event_id in (select e.id from events e where e.call_id = ${f.call_id} and e.org_id = ${orgId})` : db``}
    ${f.event ? db`and event = ${f.event}` : db``}
    ${f.status ? db`and status = ${f.status}` : db``}`;
  const from = db`webhook_deliveries where ${where}`;
  const rows = await db<Counted<Row>[]>`select ${deliveryColumns(db)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${f.limit} offset ${f.offset}`;
  return pageOf(db, rows, f.offset, from);
}

/** Every delivery attempt of a call's events: to its own `webhook_url` and to the account's webhooks. */
export async function listCallDeliveries(
  db: Db,
  orgId: string,
  callId: string,
  f: { limit: number; offset: number; event?: string | undefined; status?: string | undefined },
) {
  const where = db`
    d.org_id = ${orgId} and d.event_id in (select e.id from events e where e.call_id = ${callId} and e.org_id = ${orgId})
    ${f.event ? db`and d.event = ${f.event}` : db``}
    ${f.status ? db`and d.status = ${f.status}` : db``}`;
  const from = db`webhook_deliveries d where ${where}`;
  const rows = await db<Counted<Row>[]>`select ${deliveryColumns(db)}, ${totalColumn(db, from)} from ${from} order by d.created_at desc, d.id desc limit ${f.limit} offset ${f.offset}`;
  return pageOf(db, rows, f.offset, from);
}

/** A delivery record of the org's webhook, with what a retry needs; null when there is none. */
export async function deliveryForRetry(db: Db, orgId: string, webhookId: string, deliveryId: string) {
  const [row] = await db<{ event_id: string; event: string; webhook_status: string; event_kept: boolean }[]>`
    select d.event_id, d.event, w.status as webhook_status, exists (select 1 from events e where e.id = d.event_id) as event_kept
    from webhook_deliveries d join webhooks w on w.id = d.webhook_id
    where d.id = ${deliveryId} and d.webhook_id = ${webhookId} and d.org_id = ${orgId} and w.org_id = ${orgId}`;
  return row ?? null;
}

/**
 * Queues one more attempt of an event to a webhook, for the dispatchers (delivered as any other message, with
 * the same event id). Retries of one event to one webhook serialise on a transaction lock; null when a message
 * of it is still waiting or in flight (the caller's 409).
 */
export async function queueRetry(db: Db, orgId: string, webhookId: string, eventId: string, eventType: string, paused: boolean) {
  await db`select pg_advisory_xact_lock(hashtextextended('webhook-retry:' || ${webhookId}::text || ':' || ${eventId}::text, 0))`;
  const [busy] = await db`
    select 1 from webhook_messages
    where event_id = ${eventId} and webhook_id = ${webhookId} and status in ('pending', 'delivering', 'paused')`;
  if (busy) return null;
  // The claim counts the attempt (attempts + 1): the new one follows the last recorded, and a failure follows
  // what is left of the retry schedule (nothing after the last).
  const [row] = await db<{ attempt: number; status: 'pending' | 'paused' }[]>`
    insert into webhook_messages (org_id, event_id, event_type, webhook_id, target, status, attempts)
    select ${orgId}, ${eventId}, ${eventType}, ${webhookId}, ${webhookId}, ${paused ? 'paused' : 'pending'},
           coalesce((select max(attempt) from webhook_deliveries where event_id = ${eventId} and webhook_id = ${webhookId}), 0)
    returning attempts + 1 as attempt, status`;
  return row!;
}

export async function getDelivery(db: Db, id: string) {
  const [row] = await db`select ${deliveryColumns(db)} from webhook_deliveries where id = ${id}`;
  return row ?? null;
}

// ---- Delivery: the outbox of messages, claimed by the dispatchers ----------------------------------------

/** A message the caller has claimed (status `delivering`), with what is needed to send it. */
export interface ClaimedMessage {
  id: string;
  org_id: string;
  event_id: string;
  event_type: string;
  webhook_id: string | null;
  target: string;
  /** Endpoint + call: later messages with this key wait for this one. */
  order_key: string | null;
  /** The attempt number being made (1-based). */
  attempts: number;
  body: string;
  endpoint: string;
  secret_ciphertext: Buffer | null;
  secret_key_version: number | null;
  previous_secret_ciphertext: Buffer | null;
  previous_secret_key_version: number | null;
  previous_secret_expires_at: Date | null;
}


/** What one attempt ended with, as recorded. */
export interface AttemptRecord {
  outcome: 'succeeded' | 'retrying' | 'failed';
  status: number | null;
  responseBody: string | null;
  error: string | null;
  startedAt: Date;
  completedAt: Date;
  nextAttemptAt: Date | null;
}

/**
 * One statement: records the attempt, moves the message on (deleted when done, back to pending at its next
 * retry time otherwise) and tracks the endpoint's failures. Failure tracking touches the webhook row only when
 * its state changes, so steady successful traffic never writes (or locks) it. A retried message holds back the
 * later messages of its call: they are not due before it is.
 */
export async function recordAttempt(sql: Db, m: ClaimedMessage, r: AttemptRecord): Promise<{ id: string | null; failing_since: Date | null; unblocks: boolean } | undefined> {
  const done = r.outcome !== 'retrying';
    const holdBack =
      r.outcome === 'retrying' && m.order_key
        ? sql`, hold as (
            update webhook_messages set next_attempt_at = ${r.nextAttemptAt}
            where order_key = ${m.order_key} and id > ${m.id} and status in ('pending', 'paused') and next_attempt_at < ${r.nextAttemptAt})`
        : sql``;
    const tracking = !m.webhook_id
      ? sql``
      : r.outcome === 'succeeded'
        ? sql`, ok as (update webhooks set failing_since = null where id = ${m.webhook_id} and failing_since is not null)`
        : sql`, ko as (update webhooks set failing_since = ${r.completedAt} where id = ${m.webhook_id} and failing_since is null)`;
  const [row] = await sql<{ id: string | null; failing_since: Date | null; unblocks: boolean }[]>`
    with msg as (
      ${
        done
          ? // Finished messages leave the table (the attempts stay in webhook_deliveries): the queue stays
            // small, and a delete writes no index entries.
            sql`delete from webhook_messages where id = ${m.id} and status = 'delivering' returning id`
          : sql`
            -- A webhook set inactive while this attempt was in flight holds the message (paused), as its others.
            update webhook_messages
            set status = case when exists (select 1 from webhooks w where w.id = webhook_messages.webhook_id and w.status = 'inactive')
                              then 'paused' else 'pending' end,
                next_attempt_at = ${r.nextAttemptAt}, locked_until = null
            where id = ${m.id} and status = 'delivering'
            returning id`
      }
    ),
    rec as (
      insert into webhook_deliveries (org_id, webhook_id, event_id, event, url, status, attempt, response_status, response_body,
                                      error, duration_ms, next_retry_at, completed_at, created_at)
      select ${m.org_id}, ${m.webhook_id}, ${m.event_id}, ${m.event_type}, ${m.endpoint}, ${r.outcome}, ${m.attempts}, ${r.status},
             ${r.responseBody}, ${r.error}, ${r.completedAt.getTime() - r.startedAt.getTime()}, ${r.nextAttemptAt},
             ${r.completedAt}, ${r.startedAt}
      from msg
      returning id
    )
    ${holdBack}
    ${tracking}
    select (select id from rec) as id,
           ${m.webhook_id ? sql`(select failing_since from webhooks where id = ${m.webhook_id})` : sql`null::timestamptz`} as failing_since,
           ${
             done && m.order_key
               ? sql`exists (select 1 from webhook_messages n where n.order_key = ${m.order_key} and n.id > ${m.id} and n.status = 'pending')`
               : sql`false`
           } as unblocks`;
  return row;
}

/** Messages a dispatcher stops holding go back to pending, their claim undone. */
export async function unclaimMessages(db: Db, ids: string[]): Promise<void> {
  await db`
    update webhook_messages set status = 'pending', attempts = attempts - 1, locked_until = null
    where id = any (${ids}::bigint[]) and status = 'delivering'`;
}

/** The earliest scheduled retry, if any. */
export async function nextRetryAt(db: Db): Promise<Date | null> {
  const [row] = await db<{ at: Date | null }[]>`
    select min(next_attempt_at) as at from webhook_messages where status = 'pending' and next_attempt_at > now()`;
  return row?.at ?? null;
}

/**
 * Claims up to `limit` due messages (status `delivering`, attempt counted, locked for lockMs), at most `cap`
 * per endpoint counting the `busy` ones a dispatcher already holds; endpoints in `full` are left out.
 */
export async function claimMessages(
  sql: Db,
  o: { full: string[]; busy: [string, number][]; cap: number; lockMs: number; limit: number },
): Promise<ClaimedMessage[]> {
  const { full, busy, cap, lockMs, limit } = o;
  return sql<ClaimedMessage[]>`
      with scan as (
        -- Due messages in index order, bounded: the filters below only ever look at this window. Paused
        -- messages, messages held behind a retry of their call, and endpoints at their cap are already out.
        select m.id, m.target, m.next_attempt_at, m.webhook_id, m.order_key
        from webhook_messages m
        where m.status = 'pending' and m.next_attempt_at <= now()
          and m.target <> all (${full}::text[])
        order by m.next_attempt_at, m.id
        limit ${Math.max(100, limit * 4)}
      ),
      due as (
        select m.id, m.target, m.next_attempt_at
        from scan m
        left join webhooks w on w.id = m.webhook_id
        where (m.webhook_id is null or w.status = 'active')
          and (m.order_key is null or not exists (
            select 1 from webhook_messages p
            where p.order_key = m.order_key and p.id < m.id and p.status in ('pending', 'delivering', 'paused')))
      ),
      ranked as (
        select d.id, d.next_attempt_at,
               row_number() over (partition by d.target order by d.next_attempt_at, d.id) as rn,
               ${cap} - coalesce(b.n, 0) as room
        from due d
        left join unnest(${busy.map((b) => b[0])}::text[], ${busy.map((b) => b[1])}::int[]) as b (target, n) on b.target = d.target
      ),
      picked as (
        select m.id from webhook_messages m
        where m.id in (select id from ranked where rn <= room order by next_attempt_at, id limit ${limit})
          and m.status = 'pending'
        for update of m skip locked
      ),
      claimed as (
        update webhook_messages m
        set status = 'delivering', attempts = m.attempts + 1, locked_until = now() + ${lockMs} * interval '1 millisecond'
        from picked where m.id = picked.id
        returning m.id, m.org_id, m.event_id, m.event_type, m.webhook_id, m.url, m.target, m.order_key, m.attempts
      )
      select c.id, c.org_id, c.event_id, c.event_type, c.webhook_id, c.target, c.order_key, c.attempts,
             e.payload::text as body, coalesce(w.url, c.url) as endpoint,
             w.secret_ciphertext, w.secret_key_version, w.previous_secret_ciphertext, w.previous_secret_key_version,
             w.previous_secret_expires_at
      from claimed c
      join events e on e.id = c.event_id
      left join webhooks w on w.id = c.webhook_id
      order by c.id`;
}

/** Sets an active webhook inactive for `reason`; null when it was not active (already disabled, or deleted). */
export async function setInactive(db: Db, webhookId: string, reason: string) {
  const [w] = await db<{ id: string; org_id: string }[]>`
    update webhooks set status = 'inactive', disabled_reason = ${reason}, disabled_at = now(), updated_at = now()
    where id = ${webhookId} and status = 'active'
    returning id, org_id`;
  return w ?? null;
}

/** Sets inactive the active webhooks (or the one given) failing for longer than limitMs. */
export async function setFailingInactive(db: Db, webhookId: string | null, limitMs: number) {
  return db<{ id: string; org_id: string; failing_since: Date }[]>`
    update webhooks set status = 'inactive', disabled_reason = 'failing', disabled_at = now(), updated_at = now()
    where status = 'active' and failing_since < now() - ${limitMs} * interval '1 millisecond'
      ${webhookId ? db`and id = ${webhookId}` : db``}
    returning id, org_id, failing_since`;
}

/** An inactive webhook's waiting messages are `paused`: out of the dispatcher's scan until it is active again. */
export async function pauseMessages(db: Db, webhookId: string): Promise<void> {
  await db`update webhook_messages set status = 'paused' where webhook_id = ${webhookId} and status = 'pending'`;
}

export async function resumeMessages(db: Db, webhookId: string): Promise<void> {
  await db`update webhook_messages set status = 'pending' where webhook_id = ${webhookId} and status = 'paused'`;
}

/** Claims left `delivering` by a process that died go back to pending; the dispatchers are woken. */
export async function releaseExpiredClaims(db: Db): Promise<number> {
  const released = await db`
    update webhook_messages set status = 'pending', locked_until = null
    where status = 'delivering' and locked_until < now()
    returning id`;
  if (released.length) await notifyDispatchers(db);
  return released.length;
}

/** A message routed while its webhook was being set inactive may have been written as pending. */
export async function pauseInactiveMessages(db: Db): Promise<void> {
  await db`
    update webhook_messages m set status = 'paused'
    from webhooks w where w.id = m.webhook_id and w.status = 'inactive' and m.status = 'pending'`;
}

/** Deletes delivery records, and events no message still waits on, older than the retention; returns events purged. */
export async function purgeOld(db: Db, retentionDays: number): Promise<number> {
  const cutoff = db`now() - ${retentionDays} * interval '1 day'`;
  await db`delete from webhook_deliveries where created_at < ${cutoff}`;
  const purged = await db`
    delete from events e
    where e.created_at < ${cutoff}
      and not exists (select 1 from webhook_messages m where m.event_id = e.id and m.status in ('pending', 'delivering'))
    returning id`;
  return purged.length;
}

/** Wakes every process's dispatcher (at the commit of the surrounding transaction). */
export async function notifyDispatchers(db: Db): Promise<void> {
  await db`select pg_notify(${WEBHOOK_CHANNEL}, '')`;
}

/** Tells every process to abort the attempts in flight to this webhook (it was deleted). */
export async function notifyCancel(db: Db, webhookId: string): Promise<void> {
  await db`select pg_notify(${WEBHOOK_CANCEL_CHANNEL}, ${webhookId})`;
}

/**
 * The event and message of a test delivery, claimed from the start (`delivering`, attempt 1) so the dispatcher
 * never picks it up; null when the org has no such webhook.
 */
export async function insertTestMessage(
  tx: Db,
  t: { orgId: string; webhookId: string; eventId: string; body: string; createdAt: string; lockMs: number },
): Promise<ClaimedMessage | null> {
  const [w] = await tx<(SecretColumns & { url: string })[]>`
    select id, url, secret_ciphertext, secret_key_version, previous_secret_ciphertext, previous_secret_key_version,
           previous_secret_expires_at
    from webhooks where id = ${t.webhookId} and org_id = ${t.orgId}`;
  if (!w) return null;
  await tx`insert into events (id, org_id, type, payload, created_at) values (${t.eventId}, ${t.orgId}, ${TEST_EVENT}, ${t.body}::text::json, ${t.createdAt})`;
  const [m] = await tx<{ id: string }[]>`
    insert into webhook_messages (org_id, event_id, event_type, webhook_id, target, status, attempts, locked_until)
    values (${t.orgId}, ${t.eventId}, ${TEST_EVENT}, ${t.webhookId}, ${t.webhookId}, 'delivering', 1,
            now() + ${t.lockMs} * interval '1 millisecond')
    returning id`;
  return {
    id: m!.id,
    org_id: t.orgId,
    event_id: t.eventId,
    event_type: TEST_EVENT,
    webhook_id: t.webhookId,
    target: t.webhookId,
    order_key: null,
    attempts: 1,
    body: t.body,
    endpoint: w.url,
    secret_ciphertext: w.secret_ciphertext,
    secret_key_version: w.secret_key_version,
    previous_secret_ciphertext: w.previous_secret_ciphertext,
    previous_secret_key_version: w.previous_secret_key_version,
    previous_secret_expires_at: w.previous_secret_expires_at,
  };
}
