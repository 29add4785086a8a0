// SQL of outbound calls (outbound.ts, dial.ts): Idempotency-Keys, the caller's number and the dial's marks.
import type { Db } from '../../db/types.ts';
import type { CallRow } from './queries.ts';

export interface IdempotencyRecord {
  request_hash: string;
  response_status: number;
  response_body: unknown;
}

/** The live (younger than `ttlHours`) record of an Idempotency-Key, if any. */
export async function getIdempotencyRecord(db: Db, orgId: string, key: string, ttlHours: number): Promise<IdempotencyRecord | undefined> {
  const [row] = await db<IdempotencyRecord[]>`
    select request_hash, response_status, response_body from idempotency_keys
    where org_id = ${orgId} and key = ${key} and created_at > now() - make_interval(hours => ${ttlHours})`;
  return row;
}

/**
 * Takes the key for this request (an expired record is taken over). False when a live record exists: a
 * concurrent request with the key waits here for the other transaction and then gets false.
 */
export async function claimIdempotencyKey(db: Db, orgId: string, key: string, hash: string, ttlHours: number): Promise<boolean> {
  const rows = await db`
    insert into idempotency_keys (org_id, key, request_hash, response_status, response_body)
    values (${orgId}, ${key}, ${hash}, 0, '{}'::jsonb)
    on conflict (org_id, key) do update set request_hash = excluded.request_hash, call_id = null, response_status = 0,
      response_body = '{}'::jsonb, created_at = now()
    where idempotency_keys.created_at <= now() - make_interval(hours => ${ttlHours})
    returning key`;
  return rows.length > 0;
}

export async function saveIdempotentAnswer(db: Db, orgId: string, key: string, callId: string, status: number, body: unknown): Promise<void> {
  await db`
    update idempotency_keys set call_id = ${callId}, response_status = ${status}, response_body = ${db.json(JSON.parse(JSON.stringify(body)) as never)}
    where org_id = ${orgId} and key = ${key}`;
}

export async function purgeIdempotencyKeys(db: Db, ttlHours: number): Promise<number> {
  const rows = await db`delete from idempotency_keys where created_at < now() - make_interval(hours => ${ttlHours}) returning 1`;
  return rows.length;
}

/**
 * The org's active number that can place calls (wired, with an outbound trunk), by number or, else, the
 * agent's oldest. Purchases still being wired and released numbers cannot place calls.
 */
export async function callerNumber(
  db: Db,
  orgId: string,
  by: { number: string } | { agentId: string },
): Promise<{ phone_number: string; outbound_trunk_id: string; provider: string } | undefined> {
  const live = db`status = 'active' and outbound_trunk_id is not null and deleted_at is null and wiring_state = 'wired'`;
  const [row] =
    'number' in by
      ? await db<{ phone_number: string; outbound_trunk_id: string; provider: string }[]>`
          select phone_number, outbound_trunk_id, provider from phone_numbers
          where org_id = ${orgId} and phone_number = ${by.number} and ${live}`
      : await db<{ phone_number: string; outbound_trunk_id: string; provider: string }[]>`
          select phone_number, outbound_trunk_id, provider from phone_numbers
          where org_id = ${orgId} and agent_id = ${by.agentId} and ${live}
          order by created_at, id limit 1`;
  return row;
}

export interface NewOutboundCall {
  id: string;
  org_id: string;
  agent_id: string;
  to_number: string;
  from_number: string;
  room_name: string;
  scheduled_at: Date | null;
  variables: Record<string, unknown>;
  metadata: Record<string, unknown>;
  overrides: Record<string, unknown>;
  webhook_url: string | null;
  /** The carrier's per-minute rate (cost_cents at the end), or null when it gives none. */
  rate_cents_per_minute: number | null;
  /** A campaign's attempt: (contact, attempt) is unique, so an attempt is placed once (migration 100). */
  campaign?: { id: string; contact_id: string; attempt: number };
  /** Phone-menu navigation (migration 105): the goal and the most menus, or none. */
  ivr?: { goal: string; max_menus: number } | null;
}

export async function insertOutboundCall(db: Db, c: NewOutboundCall): Promise<CallRow> {
  const [row] = await db<CallRow[]>`
    insert into calls (id, org_id, agent_id, type, direction, to_number, from_number, room_name, scheduled_at,
                       variables, metadata, overrides, webhook_url, rate_cents_per_minute, campaign_id, campaign_contact_id, campaign_attempt,
                       ivr_goal, ivr_max_menus)
    values (${c.id}, ${c.org_id}, ${c.agent_id}, 'outbound', 'outbound', ${c.to_number}, ${c.from_number}, ${c.room_name},
            ${c.scheduled_at}, ${db.json(c.variables as never)}, ${db.json(c.metadata as never)}, ${db.json(c.overrides as never)}, ${c.webhook_url},
            ${c.rate_cents_per_minute}, ${c.campaign?.id ?? null}, ${c.campaign?.contact_id ?? null}, ${c.campaign?.attempt ?? null},
            ${c.ivr?.goal ?? null}, ${c.ivr?.max_menus ?? null})
    returning *`;
  return row!;
}

/** Marks the call placed, just before the INVITE; false when it was stopped (or placed) meanwhile. */
export async function markDialed(db: Db, callId: string): Promise<boolean> {
  const rows = await db`update calls set dialed_at = now() where id = ${callId} and dialed_at is null and status = 'initiated' returning id`;
  return rows.length > 0;
}

export async function setCarrierCallSid(db: Db, callId: string, sid: string): Promise<void> {
  await db`update calls set carrier_call_sid = coalesce(carrier_call_sid, ${sid}) where id = ${callId}`;
}

