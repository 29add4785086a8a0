// The campaign scheduler: one pg-boss job per campaign tick (`campaigns.tick`, a stately queue keyed by the
// campaign: at most one tick queued and one running per campaign), each tick one transaction:
//
//  1. the campaign row is locked (FOR UPDATE SKIP LOCKED: a second tick of the same campaign gives way);
//  2. the contacts whose call is live are read with their call: a call that has ended gives its contact a new
//     state (results.ts), and its result feeds the auto-pause rule (`stop_on`);
//  3. the campaign starts (start_at reached), ends (end_at passed), pauses itself (stop_on) or completes
//     (every contact final), emitting campaign.started / paused / completed;
//  4. while it runs, due contacts in an open calling window are claimed (SKIP LOCKED), as many as pacing and
//     max_concurrent allow; each is checked against the do-not-call list and the destination policy, admitted
//     like any outbound call (org limits), and becomes a normal outbound call with its dial job;
//  5. the next tick is queued.
//
// Because the claim, the call row, its dial job and the contact's new state commit together, a scheduler that
// dies mid-tick leaves nothing behind and the next tick claims the same contacts; one that dies after the commit
// has placed each attempt exactly once (the dial job is crash-safe on its own, dial.ts). The attempt's key,
// (contact, attempt number), is unique on calls: no attempt can be placed twice whatever runs concurrently.
//
// Every comparison with time uses `now`, given by the caller (a clock), never the database's: tests move it.
import { randomUUID } from 'node:crypto';
import type { Job, QueueDef } from '../../jobs/boss.ts';
import { inTx } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import type { Db } from '../../db/types.ts';
import { checkDestination } from '../../../../shared/destination-policy.ts';
import type { AttemptResult } from '../../../../schemas/campaigns.ts';
import { admitMany } from '../calls/limits.ts';
import { callerNumber } from '../calls/queries-outbound.ts';
import { roomNameFor } from '../calls/service.ts';
import { DIAL_QUEUE } from '../calls/dial.ts';
import { countRefusal, policyOptionsFor } from '../calls/destinations.ts';
import { carrierFor } from '../phone-numbers/carriers/index.ts';
import { callRateCents, rateTableFor } from '../phone-numbers/rates.ts';
import { destinationPolicyFor } from '../workspace/destination-policy.ts';
import { afterAttempt, resultOf } from './results.ts';
import { windowOpen } from './zones.ts';
import {
  activeCampaignIds,
  claimDue,
  closeOpenContacts,
  insertAttemptCalls,
  liveContacts,
  lockCampaignForTick,
  markScheduled,
  openWork,
  setContactState,
  skipContacts,
  updateCampaign,
  type CampaignRow,
  type CampaignUpdate,
  type DueContact,
  type NewAttempt,
} from './queries.ts';
import { emitCompleted, emitPaused, emitStarted, TICK_QUEUE, wakeScheduler } from './service.ts';

export { TICK_QUEUE };
export const SWEEP_QUEUE = 'campaigns.sweep';

/** Slots that pacing lets accumulate while nothing was due (a short burst after a quiet spell). */
const PACING_BURST_MS = 2000;
/** Calls one tick places at most (the rest go in the next tick, a moment later). */
const MAX_DIALS_PER_TICK = 200;
/** Longest wait between two ticks of a campaign that has nothing to do now (windows are re-read then). */
const IDLE_TICK_SECONDS = 30;
/** Tick interval while calls are live (their ends are read by polling the call rows). */
const LIVE_TICK_SECONDS = 1;

export interface TickResult {
  /** `locked`: another tick or a request holds the campaign; `gone`: no such campaign; `done`: nothing more to schedule. */
  outcome: 'ticked' | 'locked' | 'gone' | 'done';
  dialed: number;
  /** Results of attempts seen ending in this tick. */
  ended: number;
  /** Seconds to the next tick; null when none is needed. */
  next: number | null;
}

/**
 * Test-only pause inside a tick's transaction (`VAP_TEST_CAMPAIGN_PAUSE_AFTER_CALLS=N`, honoured only when
 * NODE_ENV=test): once the campaign has N calls, counting the tick's own uncommitted ones, the tick logs
 * `campaign tick paused for a test` and blocks for good, so a test can SIGKILL the process mid-transaction.
 */
async function testPause(services: Services, campaignId: string, calls: number): Promise<void> {
  const at = Number(process.env.VAP_TEST_CAMPAIGN_PAUSE_AFTER_CALLS);
  if (services.config.NODE_ENV !== 'test' || !Number.isFinite(at) || at <= 0 || calls < at) return;
  services.log.warn({ campaign_id: campaignId, calls }, 'campaign tick paused for a test');
  await new Promise<never>(() => {});
}

/** Whether the auto-pause rule trips on these latest results. */
export function failureRateTripped(stopOn: CampaignRow['stop_on'], recent: string[]): { rate: number } | null {
  if (!stopOn || recent.length < stopOn.window) return null;
  const window = recent.slice(-stopOn.window);
  const rate = window.filter((r) => (stopOn.results as string[]).includes(r)).length / window.length;
  return rate > stopOn.failure_rate ? { rate } : null;
}

/** One tick of one campaign at `now`; see the top of this file. */
export async function tickCampaign(services: Services, campaignId: string, now: Date = new Date()): Promise<TickResult> {
  return services.sql.begin(async (tx) => {
    const c = await lockCampaignForTick(tx, campaignId);
    if (!c) return { outcome: 'locked' as const, dialed: 0, ended: 0, next: 1 };
    if (c.status === 'completed') return { outcome: 'done' as const, dialed: 0, ended: 0, next: null };
    const result = await tick(services, tx, c, now);
    if (result.next !== null) await wakeScheduler(services, tx, c.id, result.next);
    return result;
  });
}

async function tick(services: Services, tx: Db, c: CampaignRow, now: Date): Promise<TickResult> {
  const update: CampaignUpdate = {};
  let status = c.status;
  const ended = c.schedule.end_at !== null && Date.parse(c.schedule.end_at) <= now.getTime();

  // 2. What the live calls came to.
  const results: AttemptResult[] = [];
  let live = 0;
  for (const lc of await liveContacts(tx, c.id)) {
    const result = resultOf({ status: lc.call_status, end_reason: lc.end_reason });
    if (!result) {
      live++;
      if (lc.state === 'scheduled' && lc.call_status !== 'queued') await setContactState(tx, lc.id, { state: 'calling' }, now);
      continue;
    }
    const next = afterAttempt(result, lc.attempts, c.retry, { canceled: status === 'canceled' || ended, endReason: lc.end_reason });
    await setContactState(
      tx,
      lc.id,
      {
        state: next.state,
        lastResult: result,
        nextAttemptAt: next.retryInMinutes ? new Date(now.getTime() + next.retryInMinutes * 60_000) : null,
        ...(next.skipReason ? { skipReason: next.skipReason } : {}),
      },
      now,
    );
    results.push(result);
  }
  if (results.length && c.stop_on) update.recent_results = [...c.recent_results, ...results].slice(-c.stop_on.window);

  const save = async () => {
    if (Object.keys(update).length) Object.assign(c, await updateCampaign(tx, c.id, update, now));
  };
  const finish = async (r: Omit<TickResult, 'outcome' | 'ended'>): Promise<TickResult> => {
    await save();
    return { outcome: r.next === null ? 'done' : 'ticked', dialed: r.dialed, ended: results.length, next: r.next };
  };

  if (status === 'canceled') return finish({ dialed: 0, next: live ? LIVE_TICK_SECONDS : null });

  // 3. Start, end, auto-pause.
  if (status === 'scheduled' && (c.schedule.start_at === null || Date.parse(c.schedule.start_at) <= now.getTime())) {
    status = update.status = 'running';
    update.started_at = now;
    const counts = await openWork(tx, c.id);
    await emitStarted(tx, { ...c, ...update }, counts.open);
  }
  if (ended) await closeOpenContacts(tx, c.id, 'ended', now);
  const tripped = status === 'running' ? failureRateTripped(c.stop_on, update.recent_results ?? c.recent_results) : null;
  if (tripped) {
    status = update.status = 'paused';
    update.pause_reason = 'failure_rate';
    update.paused_at = now;
    await emitPaused(tx, c, 'failure_rate', { failure_rate: Math.round(tripped.rate * 1000) / 1000, window: c.stop_on!.window });
  }

  // 4. Calls.
  let dialed = 0;
  let pacingBound = false;
  if (status === 'running' && !ended) {
    const placed = await dial(services, tx, c, now, live);
    dialed = placed.dialed;
    pacingBound = placed.pacingBound;
    live += dialed;
    Object.assign(update, placed.update);
    if (placed.pause) {
      status = update.status = 'paused';
      update.pause_reason = placed.pause;
      update.paused_at = now;
      await emitPaused(tx, c, placed.pause);
    }
  }

  // Completion: every contact final.
  const work = await openWork(tx, c.id);
  if (work.open === 0 && (status === 'running' || status === 'paused')) {
    update.status = 'completed';
    update.completed_at = now;
    await save();
    await emitCompleted(tx, c);
    return { outcome: 'done', dialed, ended: results.length, next: null };
  }

  // 5. When to look again.
  let next: number;
  if (status === 'scheduled') next = Math.min(IDLE_TICK_SECONDS, Math.max(1, (Date.parse(c.schedule.start_at!) - now.getTime()) / 1000));
  else if (status === 'paused') next = live ? LIVE_TICK_SECONDS : IDLE_TICK_SECONDS;
  else if (pacingBound) next = Math.max(0.2, ((update.pace_next_at ?? now).getTime() - now.getTime()) / 1000);
  else if (live) next = LIVE_TICK_SECONDS;
  else if (work.next_retry_at) next = Math.min(IDLE_TICK_SECONDS, Math.max(1, (work.next_retry_at.getTime() - now.getTime()) / 1000));
  else next = work.due ? Math.min(IDLE_TICK_SECONDS, 5) : IDLE_TICK_SECONDS;
  return finish({ dialed, next });
}

interface Placed {
  dialed: number;
  /** Every slot pacing gave was used: more may be due at the next slot. */
  pacingBound: boolean;
  update: CampaignUpdate;
  /** The campaign must pause: an org limit or its numbers. */
  pause?: 'daily_call_limit' | 'daily_spend_cap' | 'from_number_unavailable';
}

/**
 * Places the calls pacing and concurrency allow now. Pacing is a virtual schedule: the k-th call of a run of
 * calls is due at pace_next_at + k x (60 s / calls_per_minute); slots not used while nothing was due are not
 * banked beyond PACING_BURST_MS, so a quiet spell never turns into a burst.
 */
async function dial(services: Services, tx: Db, c: CampaignRow, now: Date, live: number): Promise<Placed> {
  const interval = 60_000 / c.pacing.calls_per_minute;
  const start = Math.max(c.pace_next_at?.getTime() ?? 0, now.getTime() - PACING_BURST_MS);
  const slots = start <= now.getTime() ? Math.floor((now.getTime() - start) / interval) + 1 : 0;
  const room = Math.max(0, c.pacing.max_concurrent - live);
  const want = Math.min(slots, room, MAX_DIALS_PER_TICK);
  const paceAt = (n: number) => ({ pace_next_at: new Date(start + n * interval) });
  if (want <= 0) return { dialed: 0, pacingBound: room > 0 && slots === 0, update: paceAt(0) };

  const holidays = new Set(c.schedule.holidays);
  const open = c.zone_keys.filter((k) => windowOpen(k, now, c.schedule.windows, holidays));
  // More than wanted: a contact found listed or refused now is skipped without taking a call's place.
  const due = await claimDue(tx, c.id, open, now, want * 2 + 10);
  if (!due.length) return { dialed: 0, pacingBound: false, update: paceAt(0) };

  const carrier = carrierFor(services);
  const policy = await destinationPolicyFor(tx, c.org_id, policyOptionsFor(carrier));
  const numbers = (await Promise.all(c.from_numbers.map((n) => callerNumber(tx, c.org_id, { number: n })))).filter((n) => !!n);
  if (!numbers.length) return { dialed: 0, pacingBound: false, update: paceAt(0), pause: 'from_number_unavailable' };
  const rates = rateTableFor(services.config);

  // Listed or refused now: skipped without taking a call's place.
  const listed: string[] = [];
  const refused: string[] = [];
  const chosen: DueContact[] = [];
  for (const d of due) {
    if (chosen.length === want) break;
    if (d.listed) listed.push(d.id);
    else {
      // The policy may have changed since the upload.
      const decision = checkDestination(policy, d.to_number);
      if (decision.ok) chosen.push(d);
      else {
        countRefusal(services, decision.reason, 'dial');
        refused.push(d.id);
      }
    }
  }
  await skipContacts(tx, listed, 'do_not_call', now);
  await skipContacts(tx, refused, 'destination_not_allowed', now);

  // Admitted like any outbound call, all at once: at the org's max_concurrent_calls the rest wait for a later
  // tick; at its daily call or spend cap the campaign pauses.
  const { admitted, refusal } = await admitMany(tx, c.org_id, chosen.length);
  let pause: Placed['pause'];
  if (refusal?.reason === 'daily_cap') pause = 'daily_call_limit';
  else if (refusal?.reason === 'daily_spend_cap') {
    countRefusal(services, refusal.reason, 'dial');
    pause = 'daily_spend_cap';
  }
  const attempts: NewAttempt[] = chosen.slice(0, admitted).map((d, i) => {
    const from = numbers[(c.dials + i) % numbers.length]!;
    const id = randomUUID();
    return {
      id,
      contact_id: d.id,
      attempt: d.attempts + 1,
      to_number: d.to_number,
      from_number: from.phone_number,
      room_name: roomNameFor(id),
      variables: { ...c.variables, ...d.variables },
      rate_cents_per_minute: from.provider === carrier.name ? callRateCents(carrier, 'outbound', d.to_number, rates) : null,
    };
  });
  await insertAttemptCalls(tx, c, attempts);
  if (attempts.length) {
    await services.boss.insert(DIAL_QUEUE, attempts.map((a) => ({ data: { call_id: a.id }, singletonKey: a.id })), { db: inTx(tx) });
  }
  await markScheduled(tx, attempts.map((a) => ({ contact_id: a.contact_id, call_id: a.id, attempt: a.attempt })), now);
  const dialed = attempts.length;
  if (dialed) await testPause(services, c.id, c.dials + dialed);
  return {
    dialed,
    pacingBound: dialed === want && want === slots && !pause,
    update: { ...paceAt(dialed), dials: c.dials + dialed },
    ...(pause ? { pause } : {}),
  };
}

export function campaignQueues(services: Services): QueueDef<never>[] {
  return [
    {
      name: TICK_QUEUE,
      // At most one tick of a campaign queued and one running; a tick that fails is retried.
      options: { policy: 'stately', retryLimit: 10, retryDelay: 1, retryBackoff: true, expireInSeconds: 300 },
      // Ticks are delayed jobs (their NOTIFY fires before they are due): poll often, pacing depends on it.
      work: { batchSize: 1, localConcurrency: services.config.CAMPAIGN_TICK_CONCURRENCY, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 },
      handler: async (jobs: Job<{ campaign_id: string }>[]) => {
        for (const job of jobs) {
          const r = await tickCampaign(services, job.data.campaign_id);
          // Held by a request or another tick: look again shortly (outside that transaction).
          if (r.outcome === 'locked') await wakeScheduler(services, services.sql, job.data.campaign_id, 1);
        }
      },
    },
    {
      // A safety net: every campaign that still needs ticks has one queued (after a crash, say).
      name: SWEEP_QUEUE,
      schedule: '* * * * *',
      handler: async () => {
        for (const id of await activeCampaignIds(services.sql)) await wakeScheduler(services, services.sql, id, 0);
      },
    },
  ];
}
