// SQL of the campaigns resource: campaigns, their contacts, and the scheduler's claims. Every time the scheduler
// compares with is passed in (its clock), never read from the database's now(), so tests can move time.
import type { Db } from '../../db/types.ts';
import { pageOf, totalColumn, type Counted } from '../../db/list-page.ts';
import type { CallingWindow, CampaignStatus, ContactState, RetryableResult } from '../../../../schemas/campaigns.ts';

export interface StoredSchedule {
  start_at: string | null;
  end_at: string | null;
  windows: CallingWindow[];
  holidays: string[];
}

export interface CampaignRow {
  id: string;
  org_id: string;
  name: string;
  agent_id: string;
  /** The agent version every call runs (migration 150); null follows the published one. */
  agent_version: number | null;
  from_numbers: string[];
  status: CampaignStatus;
  pause_reason: string | null;
  schedule: StoredSchedule;
  pacing: { calls_per_minute: number; max_concurrent: number };
  retry: { on: RetryableResult[]; max_retries: number; delay_minutes: number };
  stop_on: { failure_rate: number; window: number; results: RetryableResult[] } | null;
  webhook_url: string | null;
  variables: Record<string, unknown>;
  metadata: Record<string, unknown>;
  variable_columns: string[];
  zone_keys: string[];
  pace_next_at: Date | null;
  dials: number;
  recent_results: string[];
  started_at: Date | null;
  paused_at: Date | null;
  completed_at: Date | null;
  canceled_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface ContactRow {
  id: string;
  campaign_id: string;
  org_id: string;
  row_number: number;
  to_number: string;
  timezone: string | null;
  zone_key: string | null;
  variables: Record<string, unknown>;
  state: ContactState;
  skip_reason: string | null;
  attempts: number;
  next_attempt_at: Date | null;
  last_call_id: string | null;
  last_result: string | null;
  first_attempt_at: Date | null;
  last_attempt_at: Date | null;
  updated_at: Date;
}

export type NewCampaign = Pick<
  CampaignRow,
  'id' | 'org_id' | 'name' | 'agent_id' | 'agent_version' | 'from_numbers' | 'status' | 'schedule' | 'pacing' | 'retry' | 'stop_on' | 'webhook_url' | 'variables' | 'metadata' | 'variable_columns' | 'zone_keys'
> & { started_at: Date | null; created_at: Date };

export async function insertCampaign(db: Db, c: NewCampaign): Promise<CampaignRow> {
  const [row] = await db<CampaignRow[]>`
    insert into campaigns (id, org_id, name, agent_id, agent_version, from_numbers, status, schedule, pacing, retry, stop_on, webhook_url,
                           variables, metadata, variable_columns, zone_keys, started_at, created_at, updated_at)
    values (${c.id}, ${c.org_id}, ${c.name}, ${c.agent_id}, ${c.agent_version}, ${db.array(c.from_numbers)}, ${c.status}, ${db.json(c.schedule as never)},
            ${db.json(c.pacing)}, ${db.json(c.retry)}, ${c.stop_on ? db.json(c.stop_on) : null}, ${c.webhook_url},
            ${db.json(c.variables as never)}, ${db.json(c.metadata as never)}, ${db.array(c.variable_columns)}, ${db.array(c.zone_keys)},
            ${c.started_at}, ${c.created_at}, ${c.created_at})
    returning *`;
  return row!;
}

export interface NewContact {
  row_number: number;
  to_number: string;
  timezone: string | null;
  zone_key: string | null;
  variables: Record<string, unknown>;
  state: 'pending' | 'skipped';
  skip_reason: string | null;
}

/** All of a campaign's contacts in one statement per 5,000 (arrays unnested: one parameter per column). */
export async function insertContacts(db: Db, campaignId: string, orgId: string, contacts: NewContact[], at: Date): Promise<void> {
  for (let i = 0; i < contacts.length; i += 5000) {
    const chunk = contacts.slice(i, i + 5000);
    await db`
      insert into campaign_contacts (campaign_id, org_id, row_number, to_number, timezone, zone_key, variables, state, skip_reason, updated_at)
      select ${campaignId}, ${orgId}, r, n, tz, z, v::jsonb, s, why, ${at}
      from unnest(${chunk.map((c) => c.row_number)}::int[], ${chunk.map((c) => c.to_number)}::text[], ${chunk.map((c) => c.timezone) as string[]}::text[],
                  ${chunk.map((c) => c.zone_key) as string[]}::text[], ${chunk.map((c) => JSON.stringify(c.variables))}::text[],
                  ${chunk.map((c) => c.state)}::text[], ${chunk.map((c) => c.skip_reason) as string[]}::text[]) as t(r, n, tz, z, v, s, why)`;
  }
}

export async function getCampaign(db: Db, orgId: string, id: string, opts: { lock?: boolean } = {}): Promise<CampaignRow | undefined> {
  const [row] = opts.lock
    ? await db<CampaignRow[]>`select * from campaigns where id = ${id} and org_id = ${orgId} for update`
    : await db<CampaignRow[]>`select * from campaigns where id = ${id} and org_id = ${orgId}`;
  return row;
}

/** The scheduler's hold on a campaign for one tick; undefined when another tick (or a request) holds it. */
export async function lockCampaignForTick(db: Db, id: string): Promise<CampaignRow | undefined> {
  const [row] = await db<CampaignRow[]>`select * from campaigns where id = ${id} for update skip locked`;
  return row;
}

export async function campaignExists(db: Db, id: string): Promise<boolean> {
  const rows = await db`select 1 from campaigns where id = ${id}`;
  return rows.length > 0;
}

export async function listCampaigns(db: Db, orgId: string, f: { status?: string | undefined; limit: number; offset: number }): Promise<{ rows: CampaignRow[]; total: number }> {
  const where = db`org_id = ${orgId} ${f.status ? db`and status = ${f.status}` : db``}`;
  const from = db`campaigns where ${where}`;
  const rows = await db<Counted<CampaignRow>[]>`select *, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${f.limit} offset ${f.offset}`;
  const { items, total } = await pageOf(db, rows, f.offset, from);
  return { rows: items, total };
}

/** Contacts by state, per campaign. */
export async function contactCounts(db: Db, campaignIds: string[]): Promise<Map<string, Record<string, number>>> {
  const out = new Map<string, Record<string, number>>(campaignIds.map((id) => [id, {}]));
  if (!campaignIds.length) return out;
  const rows = await db<{ campaign_id: string; state: string; n: number }[]>`
    select campaign_id, state, count(*)::int as n from campaign_contacts where campaign_id = any(${campaignIds}::uuid[]) group by campaign_id, state`;
  for (const r of rows) out.get(r.campaign_id)![r.state] = r.n;
  return out;
}

export interface CampaignUpdate {
  name?: string;
  status?: CampaignStatus;
  pause_reason?: string | null;
  schedule?: StoredSchedule;
  pacing?: CampaignRow['pacing'];
  retry?: CampaignRow['retry'];
  stop_on?: CampaignRow['stop_on'];
  pace_next_at?: Date | null;
  dials?: number;
  recent_results?: string[];
  started_at?: Date | null;
  paused_at?: Date | null;
  completed_at?: Date | null;
  canceled_at?: Date | null;
}

const JSON_COLUMNS = new Set(['schedule', 'pacing', 'retry', 'stop_on']);

/** Sets the given columns (and updated_at to `at`). */
export async function updateCampaign(db: Db, id: string, u: CampaignUpdate, at: Date): Promise<CampaignRow> {
  const values: Record<string, unknown> = { updated_at: at };
  for (const [k, v] of Object.entries(u)) {
    if (v === undefined) continue;
    values[k] = JSON_COLUMNS.has(k) && v !== null ? db.json(v as never) : k === 'recent_results' ? db.array(v as string[]) : v;
  }
  const [row] = await db<CampaignRow[]>`update campaigns set ${db(values)} where id = ${id} returning *`;
  return row!;
}

export interface ContactPageRow extends ContactRow {
  call_ids: string[];
  outcome: string | null;
}

export async function listContacts(db: Db, campaignId: string, f: { state?: string | undefined; limit: number; offset: number }): Promise<{ rows: ContactPageRow[]; total: number }> {
  const where = db`ct.campaign_id = ${campaignId} ${f.state ? db`and ct.state = ${f.state}` : db``}`;
  const from = db`campaign_contacts ct where ${where}`;
  const rows = await db<Counted<ContactPageRow>[]>`
    select ct.*,
           coalesce((select array_agg(c.id order by c.campaign_attempt) from calls c where c.campaign_contact_id = ct.id), '{}') as call_ids,
           (select c.outcome from calls c where c.id = ct.last_call_id) as outcome,
           ${totalColumn(db, from)}
    from ${from}
    order by ct.row_number, ct.id limit ${f.limit} offset ${f.offset}`;
  const { items, total } = await pageOf(db, rows, f.offset, from);
  return { rows: items, total };
}

export interface ExportRow {
  id: string;
  row_number: number;
  to_number: string;
  timezone: string | null;
  zone_key: string | null;
  state: string;
  skip_reason: string | null;
  attempts: number;
  last_result: string | null;
  first_attempt_at: Date | null;
  last_attempt_at: Date | null;
  variables: Record<string, unknown>;
  outcome: string | null;
  /** Its calls in attempt order: id, status and end reason of each. */
  calls: { id: string; status: string; end_reason: string | null }[] | null;
}

/** A page of the export in row order, after `afterRow` (keyset). */
export async function exportPage(db: Db, campaignId: string, after: { row: number; id: string } | null, limit: number): Promise<ExportRow[]> {
  return db<ExportRow[]>`
    select ct.id, ct.row_number, ct.to_number, ct.timezone, ct.zone_key, ct.state, ct.skip_reason, ct.attempts, ct.last_result,
           ct.first_attempt_at, ct.last_attempt_at, ct.variables, lc.outcome, a.calls
    from campaign_contacts ct
    left join calls lc on lc.id = ct.last_call_id
    left join lateral (
      select json_agg(json_build_object('id', c.id, 'status', c.status, 'end_reason', c.end_reason) order by c.campaign_attempt) as calls
      from calls c where c.campaign_contact_id = ct.id
    ) a on true
    where ct.campaign_id = ${campaignId}
      ${after ? db`and (ct.row_number, ct.id) > (${after.row}, ${after.id}::uuid)` : db``}
    order by ct.row_number, ct.id
    limit ${limit}`;
}

// ---- The scheduler (scheduler.ts) ---------------------------------------------------------------------------

export interface LiveContact {
  id: string;
  state: ContactState;
  attempts: number;
  call_id: string;
  call_status: 'queued' | 'initiated' | 'in_progress' | 'completed' | 'failed';
  end_reason: string | null;
}

/** The contacts whose call is live or has just ended, with that call's state; locked for the tick. */
export async function liveContacts(db: Db, campaignId: string): Promise<LiveContact[]> {
  return db<LiveContact[]>`
    select ct.id, ct.state, ct.attempts, c.id as call_id, c.status as call_status, c.end_reason
    from campaign_contacts ct join calls c on c.id = ct.last_call_id
    where ct.campaign_id = ${campaignId} and ct.state in ('scheduled', 'calling')
    for update of ct`;
}

export async function setContactState(
  db: Db,
  id: string,
  s: { state: ContactState; lastResult?: string | null; nextAttemptAt?: Date | null; skipReason?: string | null },
  at: Date,
): Promise<void> {
  await db`
    update campaign_contacts set
      state = ${s.state},
      last_result = ${s.lastResult === undefined ? db`last_result` : s.lastResult},
      next_attempt_at = ${s.nextAttemptAt === undefined ? db`next_attempt_at` : s.nextAttemptAt},
      skip_reason = ${s.skipReason === undefined ? db`skip_reason` : s.skipReason},
      updated_at = ${at}
    where id = ${id}`;
}

export interface DueContact {
  id: string;
  to_number: string;
  attempts: number;
  variables: Record<string, unknown>;
  /** On the org's do-not-call list now. */
  listed: boolean;
}

/**
 * Up to `limit` contacts due now in an open window: retries whose delay is over first (oldest first), then
 * contacts never tried, in row order. Locked for the tick and skipped if another transaction holds them, so two
 * schedulers never take the same contact. The do-not-call list is read in the same statement.
 */
export async function claimDue(db: Db, campaignId: string, openZones: string[], now: Date, limit: number): Promise<DueContact[]> {
  if (!openZones.length || limit <= 0) return [];
  return db<DueContact[]>`
    select ct.id, ct.to_number, ct.attempts, ct.variables,
           exists (select 1 from do_not_call d where d.org_id = ct.org_id and d.phone_number = ct.to_number) as listed
    from campaign_contacts ct
    where ct.campaign_id = ${campaignId}
      and (ct.state = 'pending' or (ct.state = 'retrying' and ct.next_attempt_at <= ${now}))
      and ct.zone_key = any(${openZones}::text[])
    order by (ct.state = 'retrying') desc, ct.next_attempt_at, ct.row_number
    limit ${limit}
    for update of ct skip locked`;
}

export interface NewAttempt {
  id: string;
  contact_id: string;
  attempt: number;
  to_number: string;
  from_number: string;
  room_name: string;
  variables: Record<string, unknown>;
  rate_cents_per_minute: number | null;
}

/**
 * A tick's attempts as ordinary outbound calls (`queued`, as POST /v1/calls inserts them), in one statement.
 * (campaign_contact_id, campaign_attempt) is unique: an attempt placed twice fails the whole tick.
 */
export async function insertAttemptCalls(
  db: Db,
  c: Pick<CampaignRow, 'id' | 'org_id' | 'agent_id' | 'metadata' | 'webhook_url'> & { agent_version?: number | null },
  rows: NewAttempt[],
): Promise<void> {
  if (!rows.length) return;
  // A campaign that pins a version pins each of its calls to it.
  const version = c.agent_version ?? null;
  await db`
    insert into calls (id, org_id, agent_id, type, direction, to_number, from_number, room_name, variables, metadata, overrides,
                       webhook_url, rate_cents_per_minute, campaign_id, campaign_contact_id, campaign_attempt, agent_version, agent_version_source)
    select id, ${c.org_id}, ${c.agent_id}, 'outbound', 'outbound', t, f, r, v::jsonb, ${db.json(c.metadata as never)}, '{}'::jsonb,
           ${c.webhook_url}, rate, ${c.id}, contact, attempt, ${version}::int, ${version === null ? null : 'pinned'}
    from unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.to_number)}::text[], ${rows.map((r) => r.from_number)}::text[],
                ${rows.map((r) => r.room_name)}::text[], ${rows.map((r) => JSON.stringify(r.variables))}::text[],
                ${rows.map((r) => r.rate_cents_per_minute) as number[]}::numeric[], ${rows.map((r) => r.contact_id)}::uuid[],
                ${rows.map((r) => r.attempt)}::int[]) as x(id, t, f, r, v, rate, contact, attempt)`;
}

/** The contacts' attempts are placed: their calls are queued for the dial. */
export async function markScheduled(db: Db, rows: { contact_id: string; call_id: string; attempt: number }[], at: Date): Promise<void> {
  if (!rows.length) return;
  await db`
    update campaign_contacts ct set state = 'scheduled', attempts = x.attempt, last_call_id = x.call_id, next_attempt_at = null,
      first_attempt_at = coalesce(ct.first_attempt_at, ${at}), last_attempt_at = ${at}, updated_at = ${at}
    from unnest(${rows.map((r) => r.contact_id)}::uuid[], ${rows.map((r) => r.call_id)}::uuid[], ${rows.map((r) => r.attempt)}::int[]) as x(contact_id, call_id, attempt)
    where ct.id = x.contact_id`;
}

/** Contacts that will not be called (the do-not-call list, the destination policy), with why. */
export async function skipContacts(db: Db, ids: string[], reason: string, at: Date): Promise<void> {
  if (!ids.length) return;
  await db`update campaign_contacts set state = 'skipped', skip_reason = ${reason}, next_attempt_at = null, updated_at = ${at} where id = any(${ids}::uuid[])`;
}

/** Contacts that can no longer be tried once the campaign has ended: never tried -> skipped, waiting for a retry -> failed. */
export async function closeOpenContacts(db: Db, campaignId: string, how: 'ended' | 'canceled', at: Date): Promise<number> {
  const rows =
    how === 'ended'
      ? await db`
          update campaign_contacts set
            state = case when state = 'pending' then 'skipped' else 'failed' end,
            skip_reason = case when state = 'pending' then 'campaign_ended' else skip_reason end,
            next_attempt_at = null, updated_at = ${at}
          where campaign_id = ${campaignId} and state in ('pending', 'retrying') returning 1`
      : await db`
          update campaign_contacts set state = 'canceled', next_attempt_at = null, updated_at = ${at}
          where campaign_id = ${campaignId} and state in ('pending', 'retrying') returning 1`;
  return rows.length;
}

/** Whether any contact is not final yet, and the earliest retry due. */
export async function openWork(db: Db, campaignId: string): Promise<{ open: number; due: number; next_retry_at: Date | null }> {
  const [row] = await db<{ open: number; due: number; next_retry_at: Date | null }[]>`
    select count(*) filter (where state in ('pending', 'scheduled', 'calling', 'retrying'))::int as open,
           count(*) filter (where state = 'pending')::int as due,
           min(next_attempt_at) filter (where state = 'retrying') as next_retry_at
    from campaign_contacts where campaign_id = ${campaignId}`;
  return row!;
}

/** The calls of contacts whose attempt is still queued for the dial (a cancel stops them). */
export async function queuedCallIds(db: Db, campaignId: string): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select c.id from campaign_contacts ct join calls c on c.id = ct.last_call_id
    where ct.campaign_id = ${campaignId} and ct.state = 'scheduled' and c.status = 'queued'`;
  return rows.map((r) => r.id);
}

/** Campaigns that still need the scheduler: not completed, and canceled ones while calls of theirs are live. */
export async function activeCampaignIds(db: Db): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select c.id from campaigns c
    where c.status in ('scheduled', 'running', 'paused')
       or (c.status = 'canceled' and exists (select 1 from campaign_contacts ct where ct.campaign_id = c.id and ct.state in ('scheduled', 'calling')))`;
  return rows.map((r) => r.id);
}

/** Serialises one org's campaign creations (their cap), apart from call admissions' lock. */
export async function lockCampaignCreation(db: Db, orgId: string): Promise<void> {
  await db`select pg_advisory_xact_lock(hashtext(${`campaigns:${orgId}`}))`;
}

/** The org's campaigns not yet over: scheduled, running or paused. */
export async function countActiveCampaigns(db: Db, orgId: string): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from campaigns where org_id = ${orgId} and status in ('scheduled', 'running', 'paused')`;
  return row!.n;
}
