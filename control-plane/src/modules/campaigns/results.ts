// What an attempt's call came to, and what that makes of its contact (docs/decisions/022-campaigns-and-do-not-call.md):
//
//   pending ──► scheduled ──► calling ──► completed
//      ▲            │            │    └──► failed
//      │            └────────────┴──────► retrying ──(its delay, then its window)──► scheduled ...
//      └─ (resume)                        skipped: invalid number, destination policy, do-not-call, unknown
//                                                  zone, not reached before end_at
//                                         canceled: the campaign was canceled before the contact was done
//
// `scheduled`: its call is queued for the dial; `calling`: the call rings or is connected.
import type { AttemptResult, CampaignRetry, ContactState, RetryableResult } from '../../../../schemas/campaigns.ts';

export interface CallEnd {
  status: 'queued' | 'initiated' | 'in_progress' | 'completed' | 'failed';
  end_reason: string | null;
}

export interface RetryRules {
  on: RetryableResult[];
  max_retries: number;
  delay_minutes: number;
}

export const DEFAULT_RETRY: RetryRules = { on: ['no_answer', 'busy'], max_retries: 2, delay_minutes: 60 };

export const retryRules = (r: CampaignRetry | undefined, base: RetryRules = DEFAULT_RETRY): RetryRules => ({
  on: r?.on ?? base.on,
  max_retries: r?.max_retries ?? base.max_retries,
  delay_minutes: r?.delay_minutes ?? base.delay_minutes,
});

/** The end result of a call that has ended; null while it has not. */
export function resultOf(call: CallEnd): AttemptResult | null {
  if (call.status === 'completed') {
    if (call.end_reason === 'voicemail') return 'voicemail';
    // Calls stopped before they connected by earlier versions completed `canceled`.
    if (call.end_reason === 'canceled') return 'canceled';
    return 'completed';
  }
  if (call.status === 'failed') {
    // Stopped before it connected (POST /v1/calls/{id}/stop, or the campaign's cancel).
    if (call.end_reason === 'canceled') return 'canceled';
    if (call.end_reason === 'busy') return 'busy';
    if (call.end_reason === 'no_answer') return 'no_answer';
    // The destination policy changed, or the number was listed, after the upload: the dial job refused it.
    if (call.end_reason === 'destination_not_allowed' || call.end_reason === 'do_not_call') return 'not_allowed';
    return 'failed';
  }
  return null;
}

export interface Next {
  state: ContactState;
  /** A retry is due this long after the end was seen (then its window). */
  retryInMinutes?: number;
  skipReason?: string;
}

/**
 * The contact's state after an attempt (its `attempts`-th) ended with `result`. A retryable result with
 * retries left waits for its retry, unless the campaign is no longer dialling (canceled): then it is final.
 * A retryable result with none left is `failed` (voicemail included: a customer who retries voicemail wants
 * a person), an answered call or a voicemail not retried is `completed`.
 */
export function afterAttempt(result: AttemptResult, attempts: number, rules: RetryRules, opts: { canceled?: boolean; endReason?: string | null } = {}): Next {
  if (result === 'canceled') return { state: 'canceled' };
  if (result === 'not_allowed') return { state: 'skipped', skipReason: opts.endReason === 'do_not_call' ? 'do_not_call' : 'destination_not_allowed' };
  if (result !== 'completed' && rules.on.includes(result)) {
    if (!opts.canceled && attempts <= rules.max_retries) return { state: 'retrying', retryInMinutes: rules.delay_minutes };
    return { state: 'failed' };
  }
  return { state: result === 'completed' || result === 'voicemail' ? 'completed' : 'failed' };
}

/** States a contact never leaves. */
export const FINAL_STATES: readonly ContactState[] = ['completed', 'failed', 'skipped', 'canceled'];
/** States whose call is live (queued for the dial, ringing or connected). */
export const LIVE_STATES: readonly ContactState[] = ['scheduled', 'calling'];
