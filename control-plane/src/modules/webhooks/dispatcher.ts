// The hot path of webhook delivery: claims due messages with SKIP LOCKED, woken by the NOTIFY that
// emitEvent sends at commit, and sends them concurrently. pg-boss runs the slow housekeeping (see jobs.ts).
//
// Rules enforced by the claim query:
//  - per call and endpoint, a message waits until every earlier one with its order key is finished
//    (succeeded, finally failed, or coalesced), so ordering holds across retries;
//  - messages of an inactive webhook stay pending (paused) and go out once it is active again;
//  - at most WEBHOOK_ENDPOINT_CONCURRENCY messages per endpoint are in flight in this process, out of
//    WEBHOOK_CONCURRENCY in all, so one slow or hanging receiver can't hold up the others.
// Each claim also prefetches up to as many again per endpoint, started from memory as requests finish, so
// a busy endpoint costs one claim query per batch rather than per delivery.
import type { Services } from '../../services.ts';
import { WEBHOOK_CHANNEL } from '../events/emit.ts';
import { WebhookDeliverer, type ClaimedMessage } from './deliver.ts';
import { claimMessages, nextRetryAt, unclaimMessages, WEBHOOK_CANCEL_CHANNEL } from './queries.ts';
import { WEBHOOK_MAINTENANCE_QUEUE } from './jobs.ts';

/** Aborts the in-flight requests of a deleted webhook in every process. */
export { WEBHOOK_CANCEL_CHANNEL };

/** Extra time a claim stays locked beyond the request timeout before housekeeping hands it out again. */
const LOCK_MARGIN_MS = 30_000;
const MAX_TIMER_MS = 2_147_000_000;

export class WebhookDispatcher {
  readonly deliverer: WebhookDeliverer;
  private readonly services: Services;
  /** Claimed messages per endpoint: sending, plus a prefetch queue of up to as many again. */
  private readonly held = new Map<string, number>();
  private readonly sending = new Map<string, number>();
  private readonly queues = new Map<string, ClaimedMessage[]>();
  private readonly controllers = new Map<string, Set<AbortController>>();
  private running = 0;
  private heldTotal = 0;
  private claiming = false;
  private again = false;
  /** The last claim left due work behind (no room, or endpoints at their cap): a finished attempt re-claims. */
  private saturated = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private nextWake = Infinity;
  private poll: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>)[] = [];
  private idle: (() => void)[] = [];

  constructor(services: Services, deliverer = new WebhookDeliverer(services)) {
    this.services = services;
    this.deliverer = deliverer;
  }

  async start(): Promise<void> {
    const { sql } = this.services;
    const wake = await sql.listen(WEBHOOK_CHANNEL, () => this.kick(), () => this.kick());
    const cancel = await sql.listen(WEBHOOK_CANCEL_CHANNEL, (id) => this.cancel(id));
    this.unlisten.push(() => wake.unlisten(), () => cancel.unlisten());
    // A safety net for lost notifications and for retries scheduled by another (or a previous) process.
    this.poll = setInterval(() => this.kick(), this.services.config.WEBHOOK_POLL_INTERVAL_MS);
    this.poll.unref();
    this.kick();
    await this.armTimer();
  }

  /** Stops claiming, hands back what was prefetched, waits for attempts in flight (bounded by the timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.poll) clearInterval(this.poll);
    if (this.timer) clearTimeout(this.timer);
    for (const u of this.unlisten) await u().catch(() => {});
    while (this.claiming) await new Promise<void>((r) => this.idle.push(r));
    const queued = [...this.queues.values()].flat();
    this.queues.clear();
    if (queued.length) {
      await unclaimMessages(this.services.sql, queued.map((m) => m.id)).catch(() => {});
    }
    while (this.running > 0) await new Promise<void>((r) => this.idle.push(r));
    await this.deliverer.close();
  }

  /** Claims and starts whatever is due, now or as soon as the current claim finishes. */
  kick(): void {
    if (this.stopped) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    this.claiming = true;
    void this.claimLoop()
      .catch((err: unknown) => this.services.log.error({ err }, 'webhook claim failed'))
      .finally(() => {
        this.claiming = false;
        this.settle();
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async claimLoop(): Promise<void> {
    const { config } = this.services;
    for (;;) {
      this.again = false;
      // Up to twice the concurrency is held: what is sending plus a prefetch, so that a busy endpoint is fed
      // from memory as its requests finish instead of with a claim query per delivery.
      const room = 2 * config.WEBHOOK_CONCURRENCY - this.heldTotal;
      if (room <= 0 || this.stopped) {
        this.saturated = true;
        return;
      }
      const limit = Math.min(room, 50);
      const heldBefore = new Map(this.held);
      const { rows, capped } = await this.claim(limit);
      for (const m of rows) this.hold(m);
      this.pump();
      if (rows.length < limit) {
        // An endpoint that got all the room it had may have more due: claim again when its queue runs low.
        const cap = 2 * config.WEBHOOK_ENDPOINT_CONCURRENCY;
        const got = new Map<string, number>();
        for (const m of rows) got.set(m.target, (got.get(m.target) ?? 0) + 1);
        this.saturated = capped || [...got].some(([t, n]) => n >= cap - (heldBefore.get(t) ?? 0));
        return;
      }
    }
  }

  private hold(m: ClaimedMessage): void {
    this.heldTotal++;
    this.held.set(m.target, (this.held.get(m.target) ?? 0) + 1);
    const q = this.queues.get(m.target);
    if (q) q.push(m);
    else this.queues.set(m.target, [m]);
  }

  /** Starts queued messages while there are free workers and their endpoint is under its cap. */
  private pump(): void {
    const { config } = this.services;
    for (const [target, q] of this.queues) {
      while (q.length && this.running < config.WEBHOOK_CONCURRENCY && (this.sending.get(target) ?? 0) < config.WEBHOOK_ENDPOINT_CONCURRENCY) {
        this.launch(q.shift()!);
      }
      if (!q.length) this.queues.delete(target);
      if (this.running >= config.WEBHOOK_CONCURRENCY) return;
    }
  }

  private launch(m: ClaimedMessage): void {
    this.running++;
    this.sending.set(m.target, (this.sending.get(m.target) ?? 0) + 1);
    const ac = new AbortController();
    const key = m.webhook_id ?? '';
    if (key) {
      if (!this.controllers.has(key)) this.controllers.set(key, new Set());
      this.controllers.get(key)!.add(ac);
    }
    void this.deliverer
      .attempt(m, { signal: ac.signal })
      .then((o) => {
        if (o.nextAttemptAt) this.wakeAt(o.nextAttemptAt.getTime());
        if (o.unblocks) this.saturated = true;
      })
      .catch((err: unknown) => this.services.log.error({ err, message_id: m.id }, 'webhook attempt crashed'))
      .finally(() => {
        this.running--;
        this.heldTotal--;
        decrement(this.sending, m.target);
        decrement(this.held, m.target);
        this.controllers.get(key)?.delete(ac);
        this.pump();
        // Claim again only when something is known to wait (the next message of this call, or due work that
        // found no room) and the prefetch runs low. Otherwise the next NOTIFY (or the poll) brings new work.
        if (this.saturated && (this.queues.get(m.target)?.length ?? 0) <= this.services.config.WEBHOOK_ENDPOINT_CONCURRENCY / 2) {
          this.saturated = false;
          this.kick();
        }
        this.settle();
      });
  }

  private cancel(webhookId: string): void {
    const q = this.queues.get(webhookId);
    if (q) {
      this.queues.delete(webhookId);
      this.heldTotal -= q.length;
      this.held.delete(webhookId);
    }
    for (const ac of this.controllers.get(webhookId) ?? []) ac.abort();
  }

  private settle(): void {
    if ((this.running === 0 || this.stopped) && !this.claiming) for (const r of this.idle.splice(0)) r();
  }

  /** Sleeps until the earliest scheduled retry (the poll interval covers other processes' schedules). */
  private async armTimer(): Promise<void> {
    const at = await nextRetryAt(this.services.sql);
    if (at) this.wakeAt(at.getTime());
  }

  private wakeAt(at: number): void {
    if (this.stopped || at >= this.nextWake) return;
    if (this.timer) clearTimeout(this.timer);
    this.nextWake = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.nextWake = Infinity;
      this.kick();
    }, Math.min(Math.max(0, at - Date.now()) + 5, MAX_TIMER_MS));
    this.timer.unref();
  }

  private async claim(limit: number): Promise<{ rows: ClaimedMessage[]; capped: boolean }> {
    const { sql, config } = this.services;
    // Per endpoint: as many sending as its cap, and as many again waiting in the prefetch queue.
    const cap = 2 * config.WEBHOOK_ENDPOINT_CONCURRENCY;
    const busy = [...this.held.entries()];
    // Endpoints already at their cap are left out of the scan, so their backlog can't fill it.
    const full = busy.filter(([, n]) => n >= cap).map(([t]) => t);
    // A prefetched message may wait for one round of its endpoint's requests before its own.
    const lockMs = 2 * config.WEBHOOK_TIMEOUT_MS + LOCK_MARGIN_MS;
    const rows = await claimMessages(sql, { full, busy, cap, lockMs, limit });
    return { rows, capped: full.length > 0 };
  }
}

/** Starts the dispatcher of this process (when jobs are enabled), and schedules the minute housekeeping. */
export async function startWebhookDispatcher(services: Services): Promise<WebhookDispatcher> {
  await services.boss?.schedule(WEBHOOK_MAINTENANCE_QUEUE, '* * * * *');
  const d = new WebhookDispatcher(services);
  await d.start();
  return d;
}

function decrement(map: Map<string, number>, key: string): void {
  const n = (map.get(key) ?? 1) - 1;
  if (n > 0) map.set(key, n);
  else map.delete(key);
}
