// POST /v1/calls: an outbound phone call, now or at `scheduled_at`. The request only records the call and
// queues its dial job (calls.dial, dial.ts) in one transaction; it never dials inline. An Idempotency-Key makes
// a retried request answer the first response and dial once (Stripe's rules; docs/decisions.md).
import { createHash, randomUUID } from 'node:crypto';
import type { Services } from '../../services.ts';
import type { Auth } from '../../auth/service.ts';
import type { Db } from '../../db/types.ts';
import { invalidField, ValidationFailure } from '../../http/errors.ts';
import { checkUrl, SsrfBlockedError, ssrfOptions } from '../../net/ssrf.ts';
import { sendInTx } from '../../jobs/boss.ts';
import { IVR_DEFAULTS, type CreateCall } from '../../../../schemas/calls.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { resolveCallTarget, setCallSquad } from '../squads/target.ts';
import { writeAudit } from '../audit-events/queries.ts';
import { admissionError, admitCall } from './limits.ts';
import { callerNumber, claimIdempotencyKey, getIdempotencyRecord, insertOutboundCall, purgeIdempotencyKeys as purgeKeys, saveIdempotentAnswer } from './queries-outbound.ts';
import { callView, pinRequested, resolveOverrides, roomNameFor } from './service.ts';
import { DIAL_QUEUE, scheduledDialOptions } from './dial.ts';
import { carrierFor } from '../phone-numbers/carriers/index.ts';
import { callRateCents, rateTableFor } from '../phone-numbers/rates.ts';
import { countRefusal, destinationProblem, doNotCallProblem } from './destinations.ts';

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
            Object.keys(v)
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
  const row = await getIdempotencyRecord(db, orgId, key, IDEMPOTENCY_TTL_HOURS);
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

/** The caller ID: a given number must be one of the org's active numbers; else the agent's own number. */
async function resolveFromNumber(db: Db, orgId: string, agentId: string, given: string | undefined): Promise<{ phone_number: string; provider: string }> {
  if (given) {
    const n = await callerNumber(db, orgId, { number: given });
    if (!n) {
      throw invalidField(
        ['body', 'from_number'],
        'from_number must be one of your active phone numbers (GET /v1/phone-numbers)',
        'phone_number_not_owned',
        given,
      );
    }
    return n;
  }
  const n = await callerNumber(db, orgId, { agentId });
  if (!n) {
    throw new ValidationFailure([
      {
        loc: ['body', 'from_number'],
        msg: 'from_number is required: the agent has no active phone number to call from. Give one of your numbers, or assign one to the agent',
        type: 'missing',
      },
    ]);
  }
  return n;
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
  const ivr = checkIvr(input, problems);
  if (problems.length) throw new ValidationFailure(problems);

  const id = randomUUID();
  try {
    const row = await sql.begin(async (tx) => {
      if (key) {
        // First, so that a concurrent request with the same key waits here and then replays this one's answer
        // (instead of, say, being refused by the concurrency limit this call now holds). An expired record is
        // taken over.
        if (!(await claimIdempotencyKey(tx, auth.orgId, key, hash, IDEMPOTENCY_TTL_HOURS))) throw new KeyTaken();
      }
      const { agent, squad } = await resolveCallTarget(tx, auth.orgId, input);
      const overrides = resolveOverrides(input.overrides, agent);
      const from = await resolveFromNumber(tx, auth.orgId, agent.id, input.from_number);
      const carrier = carrierFor(services);
      // Where the org may call (workspace destination_policy): refused before it takes any allowance.
      const refusal = await destinationProblem(tx, auth.orgId, carrier, input.to_number);
      if (refusal) {
        countRefusal(services, String(refusal.ctx?.reason), 'api');
        throw new ValidationFailure([refusal]);
      }
      const listed = await doNotCallProblem(tx, auth.orgId, input.to_number);
      if (listed) throw new ValidationFailure([listed]);
      // The rate of the destination with the number's carrier, captured now (phone-numbers/rates.ts); none for
      // another carrier's number.
      const rate = from.provider === carrier.name ? callRateCents(carrier, 'outbound', input.to_number, rateTableFor(services.config)) : null;
      // A scheduled call takes today's daily slot now; it counts for concurrency when it dials. The day's spend
      // is checked now and again when it dials.
      const admission = await admitCall(tx, auth.orgId, { concurrency: !scheduledAt, spend: true });
      if (!admission.ok) {
        if (admission.reason === 'daily_spend_cap') countRefusal(services, admission.reason, 'api');
        throw admissionError(admission);
      }
      const outbound = await insertOutboundCall(tx, {
        id,
        org_id: auth.orgId,
        agent_id: agent.id,
        to_number: input.to_number,
        from_number: from.phone_number,
        room_name: roomNameFor(id),
        scheduled_at: scheduledAt,
        variables: input.variables ?? {},
        metadata: input.metadata ?? {},
        overrides,
        webhook_url: input.webhook_url ?? null,
        rate_cents_per_minute: rate,
        ivr,
      });
      const inserted = await setCallSquad(tx, outbound, squad);
      await pinRequested(tx, auth.orgId, inserted, squad, input.agent_version);
      // A scheduled call's job also waits for a free slot if the org is at max_concurrent_calls when it is due.
      const timing = scheduledAt ? { startAfter: scheduledAt, ...scheduledDialOptions(services.config.OUTBOUND_CONCURRENCY_WAIT_SECONDS) } : {};
      await sendInTx(services.boss, tx, DIAL_QUEUE, { call_id: id }, { ...timing, singletonKey: id });
      await writeAudit(tx, {
        orgId: auth.orgId,
        actorType: auth.actorType,
        actorId: auth.actorId,
        action: 'call.create',
        resourceType: 'call',
        resourceId: id,
        requestId: meta.requestId,
        ip: meta.ip,
        details: { type: 'outbound', agent_id: agent.id, ...(squad ? { squad_id: squad.id } : {}), scheduled: scheduledAt !== null, ...(key ? { idempotency_key: key } : {}) },
      });
      // A new call has no transfers yet.
      const body = await callView(services, inserted, { transfers: [] });
      if (key) {
        await saveIdempotentAnswer(tx, auth.orgId, key, id, 201, body);
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

/** Phone-menu navigation: the goal (not blank) with its settings' defaults; `ivr` settings only with a goal. */
function checkIvr(input: CreateCall, problems: ValidationErrorItem[]): { goal: string; max_menus: number } | null {
  if (input.ivr_goal === undefined) {
    if (input.ivr !== undefined) problems.push({ loc: ['body', 'ivr'], msg: 'ivr settings need an ivr_goal', type: 'missing_ivr_goal', input: input.ivr });
    return null;
  }
  const goal = input.ivr_goal.trim();
  if (!goal) {
    problems.push({ loc: ['body', 'ivr_goal'], msg: 'String should have at least 1 character that is not a space', type: 'string_too_short', input: input.ivr_goal });
    return null;
  }
  return { goal, max_menus: input.ivr?.max_menus ?? IVR_DEFAULTS.max_menus };
}

/** Idempotency records older than the TTL; run by the minute sweep. */
export const purgeIdempotencyKeys = (db: Db) => purgeKeys(db, IDEMPOTENCY_TTL_HOURS);
