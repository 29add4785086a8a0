// POST /v1/calls: an outbound phone call, now or at `scheduled_at`. The request only records the call and
// queues its dial job (calls.dial, dial.ts) in one transaction; it never dials inline. An Idempotency-Key makes
// a retried request answer the first response and dial once (Stripe's rules; docs/decisions.md).
import { createHash, randomUUID } from 'node:crypto';
import type { Services } from '../../services.ts';
import type { Auth } from '../../auth/service.ts';
import type { Db } from '../../db/types.ts';
import { invalidField, ValidationFailure } from '../../http/errors.ts';
import { referenceError } from '../../http/references.ts';
import { checkUrl, SsrfBlockedError, ssrfOptions } from '../../net/ssrf.ts';
import { sendInTx } from '../../jobs/boss.ts';
import type { CreateCall } from '../../../../schemas/calls.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { getAgent } from '../agents/queries.ts';
import { writeAudit } from '../audit-events/queries.ts';
import { admissionError, admitCall } from './limits.ts';
import type { CallRow } from './queries.ts';
import { callView, resolveOverrides, roomNameFor } from './service.ts';
import { DIAL_QUEUE } from './dial.ts';

/** How long an Idempotency-Key names its first request (Stripe: 24 hours). */
export const IDEMPOTENCY_TTL_HOURS = 24;
const KEY_RE = /^[\x21-\x7e]{1,255}$/;

export interface CreateResult {
  status: number;
  body: unknown;
  /** The answer of an earlier request with the same Idempotency-Key. */
  replayed: boolean;
}

/** Raised inside the creating transaction when a concurrent request with the same key committed first. */
class KeyTaken extends Error {}

/** sha256 of the route and the body with keys sorted: the parameters a key is bound to. */
export function requestHash(route: string, body: unknown): string {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v as object)
              .sort()
              .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
          )
        : v;
  return createHash('sha256').update(route).update('\n').update(JSON.stringify(canonical(body))).digest('hex');
}

/** 422 at the header for a malformed key; null when there is none. */
export function parseIdempotencyKey(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  if (!KEY_RE.test(raw)) {
    throw invalidField(['header', 'idempotency-key'], 'Idempotency-Key must be 1 to 255 visible ASCII characters', 'idempotency_key_format', raw.slice(0, 300));
  }
  return raw;
}

async function storedAnswer(db: Db, orgId: string, key: string, hash: string): Promise<CreateResult | null> {
  const [row] = await db<{ request_hash: string; response_status: number; response_body: unknown }[]>`
    select request_hash, response_status, response_body from idempotency_keys
    where org_id = ${orgId} and key = ${key} and created_at > now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`;
  if (!row) return null;
  if (row.request_hash !== hash) {
    throw invalidField(
      ['header', 'idempotency-key'],
      'This Idempotency-Key was already used with different parameters; use a new key for a new request',
      'idempotency_key_reused',
      key,
    );
  }
  return { status: row.response_status, body: row.response_body, replayed: true };
}

interface Resolved {
  fromNumber: string;
}

/** The caller ID: a given number must be one of the org's active numbers; else the agent's own number. */
async function resolveFromNumber(db: Db, orgId: string, agentId: string, given: string | undefined): Promise<Resolved> {
  if (given) {
    const [n] = await db<{ phone_number: string }[]>`
      select phone_number from phone_numbers
      where org_id = ${orgId} and phone_number = ${given} and status = 'active' and outbound_trunk_id is not null
        and ${activeNumber(db)}`;
    if (!n) {
      throw invalidField(
        ['body', 'from_number'],
        'from_number must be one of your active phone numbers (GET /v1/phone-numbers)',
        'phone_number_not_owned',
        given,
      );
    }
    return { fromNumber: n.phone_number };
  }
  const [n] = await db<{ phone_number: string }[]>`
    select phone_number from phone_numbers
    where org_id = ${orgId} and agent_id = ${agentId} and status = 'active' and outbound_trunk_id is not null and ${activeNumber(db)}
    order by created_at, id limit 1`;
  if (!n) {
    throw new ValidationFailure([
      {
        loc: ['body', 'from_number'],
        msg: 'from_number is required: the agent has no active phone number to call from. Give one of your numbers, or assign one to the agent',
        type: 'missing',
      },
    ]);
  }
  return { fromNumber: n.phone_number };
}

/**
 * Live numbers only: purchases still being wired and released numbers cannot place calls. The phone-numbers
 * module adds `deleted_at` and `wiring_state` (migration 040); before it, every row is live.
 */
let hasWiringColumns: boolean | null = null;
function activeNumber(db: Db) {
  return hasWiringColumns ? db`deleted_at is null and wiring_state = 'wired'` : db`true`;
}
async function detectWiringColumns(db: Db): Promise<void> {
  if (hasWiringColumns !== null) return;
  const [r] = await db<{ n: number }[]>`
    select count(*)::int as n from information_schema.columns
    where table_name = 'phone_numbers' and column_name in ('deleted_at', 'wiring_state') and table_schema = current_schema()`;
  hasWiringColumns = r!.n === 2;
}

function checkSchedule(services: Services, scheduledAt: string | undefined, problems: ValidationErrorItem[]): Date | null {
  if (!scheduledAt) return null;
  const at = new Date(scheduledAt);
  const horizonDays = services.config.OUTBOUND_SCHEDULE_HORIZON_DAYS;
  if (at.getTime() <= Date.now()) {
    problems.push({ loc: ['body', 'scheduled_at'], msg: 'Input should be in the future', type: 'datetime_future', input: scheduledAt });
  } else if (at.getTime() > Date.now() + horizonDays * 86400_000) {
    problems.push({
      loc: ['body', 'scheduled_at'],
      msg: `Input should be at most ${horizonDays} days ahead`,
      type: 'datetime_horizon',
      input: scheduledAt,
      ctx: { horizon_days: horizonDays },
    });
  }
  return at;
}

export async function createOutboundCall(
  services: Services,
  auth: Auth,
  input: CreateCall,
  meta: { requestId: string; ip: string | null; idempotencyKey: string | null },
): Promise<CreateResult> {
  const { sql } = services;
  const key = meta.idempotencyKey;
  const hash = requestHash('POST /v1/calls', input);
  if (key) {
    const earlier = await storedAnswer(sql, auth.orgId, key, hash);
    if (earlier) return earlier;
  }

  // Checks that need no database: all problems at once, as for schema errors.
  const problems: ValidationErrorItem[] = [];
  const scheduledAt = checkSchedule(services, input.scheduled_at, problems);
  if (input.webhook_url) {
    try {
      checkUrl(input.webhook_url, ssrfOptions(services.config));
    } catch (err) {
      if (!(err instanceof SsrfBlockedError)) throw err;
      problems.push({ loc: ['body', 'webhook_url'], msg: `URL is not allowed: ${err.message}`, type: 'url_not_allowed', input: input.webhook_url });
    }
  }
  if (problems.length) throw new ValidationFailure(problems);
  await detectWiringColumns(sql);

  const id = randomUUID();
  try {
    const row = await sql.begin(async (tx) => {
      if (key) {
        // First, so that a concurrent request with the same key waits here and then replays this one's answer
        // (instead of, say, being refused by the concurrency limit this call now holds). An expired record is
        // taken over.
        const [claimed] = await tx`
          insert into idempotency_keys (org_id, key, request_hash, response_status, response_body)
          values (${auth.orgId}, ${key}, ${hash}, 0, '{}'::jsonb)
          on conflict (org_id, key) do update set request_hash = excluded.request_hash, call_id = null, response_status = 0,
            response_body = '{}'::jsonb, created_at = now()
          where idempotency_keys.created_at <= now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
          returning key`;
        if (!claimed) throw new KeyTaken();
      }
      const agent = await getAgent(tx, auth.orgId, input.agent_id);
      if (!agent) throw new ValidationFailure([referenceError(['body', 'agent_id'], 'agent', input.agent_id)]);
      const overrides = resolveOverrides(input.overrides, agent);
      const { fromNumber } = await resolveFromNumber(tx, auth.orgId, agent.id, input.from_number);
      // A scheduled call takes today's daily slot now; it counts for concurrency when it dials.
      const admission = await admitCall(tx, auth.orgId, { concurrency: !scheduledAt });
      if (!admission.ok) throw admissionError(admission);
      const [inserted] = await tx<CallRow[]>`
        insert into calls (id, org_id, agent_id, type, direction, to_number, from_number, room_name, scheduled_at,
                           variables, metadata, overrides, webhook_url)
        values (${id}, ${auth.orgId}, ${agent.id}, 'outbound', 'outbound', ${input.to_number}, ${fromNumber}, ${roomNameFor(id)},
                ${scheduledAt}, ${tx.json((input.variables ?? {}) as never)}, ${tx.json((input.metadata ?? {}) as never)},
                ${tx.json(overrides as never)}, ${input.webhook_url ?? null})
        returning *`;
      await sendInTx(services.boss, tx, DIAL_QUEUE, { call_id: id }, { ...(scheduledAt ? { startAfter: scheduledAt } : {}), singletonKey: id });
      await writeAudit(tx, {
        orgId: auth.orgId,
        actorType: auth.actorType,
        actorId: auth.actorId,
        action: 'call.create',
        resourceType: 'call',
        resourceId: id,
        requestId: meta.requestId,
        ip: meta.ip,
        details: { type: 'outbound', agent_id: agent.id, scheduled: scheduledAt !== null, ...(key ? { idempotency_key: key } : {}) },
      });
      const body = await callView(services, inserted!);
      if (key) {
        await tx`
          update idempotency_keys set call_id = ${id}, response_status = 201, response_body = ${tx.json(JSON.parse(JSON.stringify(body)) as never)}
          where org_id = ${auth.orgId} and key = ${key}`;
      }
      return body;
    });
    return { status: 201, body: row, replayed: false };
  } catch (err) {
    if (!(err instanceof KeyTaken)) throw err;
    const earlier = await storedAnswer(sql, auth.orgId, key!, hash);
    if (earlier) return earlier;
    // The record expired between the two reads: extremely unlikely; the client may retry.
    throw err;
  }
}

/** Idempotency records older than the TTL; run by the hourly maintenance job. */
export async function purgeIdempotencyKeys(db: Db): Promise<number> {
  const rows = await db`delete from idempotency_keys where created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS}) returning 1`;
  return rows.length;
}
