// The hot path of webhook delivery: claims due messages with SKIP LOCKED, woken by the NOTIFY that
// emitEvent sends at commit, and sends them concurrently. pg-boss runs the slow housekeeping (see jobs.ts).
//
// Rules enforced by the claim query:
//  - per call and endpoint, a message waits until every earlier one with its order key is finished
//    (succeeded, finally failed, or coalesced), so ordering holds across retries;
//  - messages of an inactive webhook stay pending (paused) and go out once it is active again;
//  - at most WEBHOOK_ENDPOINT_CONCURRENCY messages per endpoint are in flight in this process, out of
//    WEBHOOK_CONCURRENCY in all, so one slow or hanging receiver can't hold up the others.
import type { Services } from '../../services.ts';
import { WEBHOOK_CHANNEL } from '../events/emit.ts';
import { WebhookDeliverer, type ClaimedMessage } from './deliver.ts';

/** Aborts the in-flight requests of a deleted webhook in every process. */
export const WEBHOOK_CANCEL_CHANNEL = 'vap_webhooks_cancel';

/** Extra time a claim stays locked beyond the request timeout before housekeeping hands it out again. */
const LOCK_MARGIN_MS = 30_000;
const MAX_TIMER_MS = 2_147_000_000;

export class WebhookDispatcher {
  readonly deliverer: WebhookDeliverer;
  private readonly services: Services;
  private readonly inflight = new Map<string, number>();
  private readonly controllers = new Map<string, Set<AbortController>>();
  private running = 0;
  private claiming = false;
  private again = false;
  /** The last claim left due work behind (no free slot, or endpoints at their cap): a finished attempt re-claims. */
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

  /** Stops claiming, waits for attempts in flight (they are bounded by the request timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.poll) clearInterval(this.poll);
    if (this.timer) clearTimeout(this.timer);
    for (const u of this.unlisten) await u().catch(() => {});
    while (this.running > 0 || this.claiming) await new Promise<void>((r) => this.idle.push(r));
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
      .catch((err) => this.services.log.error({ err }, 'webhook claim failed'))
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
      const free = config.WEBHOOK_CONCURRENCY - this.running;
      if (free <= 0 || this.stopped) {
        this.saturated = true;
        return;
      }
      const { rows, capped } = await this.claim(Math.min(free, 50));
      for (const m of rows) this.launch(m);
      if (rows.length === 0) {
        this.saturated = capped;
        return;
      }
    }
  }

  private launch(m: ClaimedMessage): void {
    this.running++;
    this.inflight.set(m.target, (this.inflight.get(m.target) ?? 0) + 1);
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
      .catch((err) => this.services.log.error({ err, message_id: m.id }, 'webhook attempt crashed'))
      .finally(() => {
        this.running--;
        const n = (this.inflight.get(m.target) ?? 1) - 1;
        if (n > 0) this.inflight.set(m.target, n);
        else this.inflight.delete(m.target);
        this.controllers.get(key)?.delete(ac);
        // Claim again only when something is known to wait: the next message of this call, or due work that
        // found no free slot. Otherwise the next NOTIFY (or the poll) brings new work.
        if (this.saturated) {
          this.saturated = false;
          this.kick();
        }
        this.settle();
      });
  }

  private cancel(webhookId: string): void {
    for (const ac of this.controllers.get(webhookId) ?? []) ac.abort();
  }

  private settle(): void {
    if (this.running === 0 && !this.claiming) for (const r of this.idle.splice(0)) r();
  }

  /** Sleeps until the earliest scheduled retry (the poll interval covers other processes' schedules). */
  private async armTimer(): Promise<void> {
    const [row] = await this.services.sql<{ at: Date | null }[]>`
      select min(next_attempt_at) as at from webhook_messages where status = 'pending' and next_attempt_at > now()`;
    if (row?.at) this.wakeAt(row.at.getTime());
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
    const cap = config.WEBHOOK_ENDPOINT_CONCURRENCY;
    const busy = [...this.inflight.entries()];
    // Endpoints already at their cap are left out of the scan, so their backlog can't fill it.
    const full = busy.filter(([, n]) => n >= cap).map(([t]) => t);
    const lockMs = config.WEBHOOK_TIMEOUT_MS + LOCK_MARGIN_MS;
    const rows = await sql<ClaimedMessage[]>`
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
    return { rows, capped: full.length > 0 };
  }
}

/** Starts the dispatcher of this process (when jobs are enabled). */
export async function startWebhookDispatcher(services: Services): Promise<WebhookDispatcher> {
  const d = new WebhookDispatcher(services);
  await d.start();
  return d;
}
