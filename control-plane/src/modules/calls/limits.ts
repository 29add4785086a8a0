// Admission of a new call for an organisation: the daily cap (`max_calls_per_day`) and the number of live
// calls (`max_concurrent_calls`), for web, outbound and inbound calls alike. Web calls started with a
// publishable key have their own pool on top, and are left out when any other call is admitted. For outbound
// calls only, the day's carrier spend (`daily_spend_cap_cents`): inbound calls cost too and count in the spend,
// but a caller is never turned away for it: the cap stops the calls an org (or a stolen key) places, where toll
// fraud lives.
//
// Race-free: `admitCall` runs inside the transaction that inserts the call row and first takes a per-org
// transaction-scoped advisory lock. The next admission of the same org waits for that transaction to end, and
// under READ COMMITTED its count then sees the committed row: 50 concurrent creations against a limit of 5
// admit exactly 5. The lock is held only for the creating transaction (a few milliseconds, no network I/O in
// it), and other orgs never wait on it. The daily counter is the atomic upsert of migration 030.
import type { Db } from '../../db/types.ts';
import { HttpError, tooManyRequests } from '../../http/errors.ts';
import { reserveDailyCall, reserveDailyCalls } from './queries.ts';
import { callLimitsOf, countLiveCalls, lockAdmission, spendTodayCents } from './queries-admission.ts';

export { countLiveCalls };

export type AdmissionReason = 'daily_cap' | 'concurrency' | 'publishable_concurrency' | 'daily_spend_cap';

export type Admission =
  | { ok: true }
  | {
      ok: false;
      reason: AdmissionReason;
      /** The org's setting that was reached (or the operator's limit of publishable keys' web calls). */
      limit: 'max_calls_per_day' | 'max_concurrent_calls' | 'publishable_web_call_concurrency' | 'daily_spend_cap_cents';
      value: number;
      /** A sentence for the API body or a SIP reason header. */
      message: string;
      /** When trying again may succeed: midnight UTC for the daily cap, a few seconds for concurrency. */
      retryAfterSeconds: number;
    };

export interface AdmitOptions {
  /** Take one call from today's allowance (false when it was taken at creation, e.g. a scheduled call). */
  daily?: boolean;
  /** Check the live-call count (false when creating a scheduled call: it is not live until it dials). */
  concurrency?: boolean;
  /** Check the day's spend against `daily_spend_cap_cents` (outbound calls). */
  spend?: boolean;
  /** A call that already exists (a scheduled call being dialled) is not counted against itself. */
  excludeCallId?: string | null;
  /**
   * A web call started with a publishable key: first its own pool (at most `maxConcurrent` such live calls,
   * 0 for no own limit), then the org's limits, with every live call and the whole day counted. Other calls
   * leave such calls out of both counts, so a page's key never takes a phone call's capacity.
   */
  publishable?: { maxConcurrent: number } | undefined;
}

/** How long a caller refused for concurrency is told to wait: calls end at their own pace. */
export const CONCURRENCY_RETRY_AFTER_SECONDS = 5;

/** Seconds until the next 00:00 UTC, when the daily cap resets. */
export function secondsToUtcMidnight(now = new Date()): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.ceil((next - now.getTime()) / 1000);
}

/**
 * Decides whether the org may start one more call. MUST run inside the transaction that then inserts (or
 * activates) the call, so the lock covers the count and the insert; on `ok: false` nothing was taken.
 * Concurrency and spend are checked before the daily counter so a refused call never uses up a daily slot.
 */
export async function admitCall(tx: Db, orgId: string, opts: AdmitOptions = {}): Promise<Admission> {
  const daily = opts.daily ?? true;
  const concurrency = opts.concurrency ?? true;
  await lockAdmission(tx, orgId);
  const org = await callLimitsOf(tx, orgId);
  if (!org) throw new Error(`admitCall: unknown org ${orgId}`);
  const publishable = opts.publishable;
  if (publishable && publishable.maxConcurrent > 0) {
    const live = await countLiveCalls(tx, orgId, null, 'publishable');
    if (live >= publishable.maxConcurrent) {
      return {
        ok: false,
        reason: 'publishable_concurrency',
        limit: 'publishable_web_call_concurrency',
        value: publishable.maxConcurrent,
        message: `Limit of ${publishable.maxConcurrent} concurrent web calls by publishable key reached; retry when a call ends`,
        retryAfterSeconds: CONCURRENCY_RETRY_AFTER_SECONDS,
      };
    }
  }
  if (concurrency) {
    const live = await countLiveCalls(tx, orgId, opts.excludeCallId ?? null, publishable ? 'all' : 'others');
    if (live >= org.max_concurrent_calls) {
      return {
        ok: false,
        reason: 'concurrency',
        limit: 'max_concurrent_calls',
        value: org.max_concurrent_calls,
        message: `Concurrent call limit of ${org.max_concurrent_calls} reached; retry when a call ends`,
        retryAfterSeconds: CONCURRENCY_RETRY_AFTER_SECONDS,
      };
    }
  }
  if (opts.spend) {
    const spent = await spendTodayCents(tx, orgId);
    if (spent >= org.daily_spend_cap_cents) {
      return {
        ok: false,
        reason: 'daily_spend_cap',
        limit: 'daily_spend_cap_cents',
        value: org.daily_spend_cap_cents,
        message: `Daily spend cap of ${org.daily_spend_cap_cents} cents reached (${spent} cents spent today); it resets at 00:00 UTC`,
        retryAfterSeconds: secondsToUtcMidnight(),
      };
    }
  }
  if (daily && !(await reserveDailyCall(tx, orgId, !!publishable))) {
    return {
      ok: false,
      reason: 'daily_cap',
      limit: 'max_calls_per_day',
      value: org.max_calls_per_day,
      message: `Daily call limit of ${org.max_calls_per_day} reached; it resets at 00:00 UTC`,
      retryAfterSeconds: secondsToUtcMidnight(),
    };
  }
  return { ok: true };
}

/**
 * Admits up to `wanted` new outbound calls of the org at once (a campaign's tick), with the rules of admitCall
 * for each: the live count against `max_concurrent_calls`, the day's spend against its cap, then today's
 * allowance. Returns how many may start, and the first limit that stopped the rest (null when all may). MUST
 * run inside the transaction that then inserts that many calls.
 */
export async function admitMany(tx: Db, orgId: string, wanted: number): Promise<{ admitted: number; refusal: Exclude<Admission, { ok: true }> | null }> {
  if (wanted <= 0) return { admitted: 0, refusal: null };
  await lockAdmission(tx, orgId);
  const org = await callLimitsOf(tx, orgId);
  if (!org) throw new Error(`admitMany: unknown org ${orgId}`);
  const live = await countLiveCalls(tx, orgId, null, 'others');
  let admitted = Math.min(wanted, Math.max(0, org.max_concurrent_calls - live));
  let refusal: Exclude<Admission, { ok: true }> | null =
    admitted < wanted
      ? {
          ok: false,
          reason: 'concurrency',
          limit: 'max_concurrent_calls',
          value: org.max_concurrent_calls,
          message: `Concurrent call limit of ${org.max_concurrent_calls} reached; retry when a call ends`,
          retryAfterSeconds: CONCURRENCY_RETRY_AFTER_SECONDS,
        }
      : null;
  if (admitted === 0) return { admitted, refusal };
  const spent = await spendTodayCents(tx, orgId);
  if (spent >= org.daily_spend_cap_cents) {
    return {
      admitted: 0,
      refusal: {
        ok: false,
        reason: 'daily_spend_cap',
        limit: 'daily_spend_cap_cents',
        value: org.daily_spend_cap_cents,
        message: `Daily spend cap of ${org.daily_spend_cap_cents} cents reached (${spent} cents spent today); it resets at 00:00 UTC`,
        retryAfterSeconds: secondsToUtcMidnight(),
      },
    };
  }
  const reserved = await reserveDailyCalls(tx, orgId, admitted);
  if (reserved < admitted) {
    admitted = reserved;
    refusal = {
      ok: false,
      reason: 'daily_cap',
      limit: 'max_calls_per_day',
      value: org.max_calls_per_day,
      message: `Daily call limit of ${org.max_calls_per_day} reached; it resets at 00:00 UTC`,
      retryAfterSeconds: secondsToUtcMidnight(),
    };
  }
  return { admitted, refusal };
}

/** The API's answer to a refused admission: 429 with Retry-After, `reason` and the `limit` reached. */
export function admissionError(a: Exclude<Admission, { ok: true }>): HttpError {
  return tooManyRequests(a.message, a.retryAfterSeconds, { reason: a.reason, limit: a.limit, limit_value: a.value });
}
