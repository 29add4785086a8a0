// Token buckets (per credential, per organisation, per client IP: one RateLimiter each, their keys prefixed
// apart) shared by every control-plane replica through PostgreSQL, without a database
// round trip on the request path:
//  - each replica decides locally (in memory, synchronously) from its last view of the shared bucket, minus
//    what it has admitted since;
//  - every RATE_LIMIT_SYNC_MS it sends what it admitted per credential in one statement, which refills the
//    shared bucket for the time elapsed, takes the replicas' consumption off it (down to -burst: a debt), and
//    returns the result as the replica's new view.
// So the long-run rate per credential is the configured one whatever the replica count, and the overshoot is
// bounded by what the replicas admit within one sync interval (docs/decisions/018-api-completeness.md, "Shared rate limit").
import type { Db } from '../db/types.ts';
import { tooManyRequests } from './errors.ts';

interface Bucket {
  /** Tokens as this replica sees them: the shared value at the last sync, refilled locally, minus admissions. */
  tokens: number;
  at: number;
  /** Admitted here since the last sync started. */
  pending: number;
  /** Admitted here while a sync is in flight (not yet sent). */
  lastUsed: number;
}

const IDLE_MS = 120_000;
/** Keys used this recently are synced even when this replica admitted nothing new for them. */
const REFRESH_MS = 10_000;

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private timer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> | null = null;
  private lastPurge = 0;

  private readonly rate: number;
  private readonly burst: number;
  private readonly sql: Db | null;
  private readonly syncMs: number;
  private readonly onError: (err: unknown) => void;

  /** The 429's `detail` and extra fields (`reason`), which say what is limited. */
  private readonly refusal: { detail: string; extra?: Record<string, unknown> };

  constructor(
    rate: number,
    burst: number,
    sql: Db | null = null,
    syncMs = 100,
    onError: (err: unknown) => void = () => {},
    refusal: { detail: string; extra?: Record<string, unknown> } = { detail: 'Too many requests for this credential; slow down' },
  ) {
    this.rate = rate;
    this.burst = burst;
    this.sql = sql;
    this.syncMs = syncMs;
    this.onError = onError;
    this.refusal = refusal;
  }

  /** Starts the periodic sync (nothing to do without a database or with limiting off). */
  start(): void {
    if (!this.sql || this.rate <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.flush().catch(this.onError), this.syncMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush().catch(this.onError);
  }

  /** Spends one token of `id`'s bucket, or throws the 429 when it is empty. */
  take(id: string): void {
    if (this.rate <= 0) return;
    const b = this.refill(id);
    this.refuseIfEmpty(b);
    this.spend(b);
  }

  /** Throws the 429 when `id`'s bucket is empty, without spending (failed authentication: see charge). */
  check(id: string): void {
    if (this.rate <= 0) return;
    this.refuseIfEmpty(this.refill(id));
  }

  /** Spends one token even when that leaves the bucket empty: the event already happened (a failed login). */
  charge(id: string): void {
    if (this.rate <= 0) return;
    const b = this.refill(id);
    if (b.tokens >= 1) this.spend(b);
  }

  private refill(id: string): Bucket {
    const now = performance.now();
    let b = this.buckets.get(id);
    if (!b) this.buckets.set(id, (b = { tokens: this.burst, at: now, pending: 0, lastUsed: now }));
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.rate);
    b.at = now;
    b.lastUsed = now;
    if (this.buckets.size > 100_000) this.evictIdle(now);
    return b;
  }

  private refuseIfEmpty(b: Bucket): void {
    if (b.tokens < 1) throw tooManyRequests(this.refusal.detail, (1 - b.tokens) / this.rate, this.refusal.extra);
  }

  private spend(b: Bucket): void {
    b.tokens -= 1;
    b.pending += 1;
  }

  /** Sends what this replica admitted and takes the shared buckets' state as its view. One sync at a time. */
  async flush(): Promise<void> {
    if (!this.sql || this.rate <= 0) return;
    if (this.syncing) return this.syncing;
    this.syncing = this.sync().finally(() => (this.syncing = null));
    return this.syncing;
  }

  private async sync(): Promise<void> {
    const now = performance.now();
    const keys: string[] = [];
    const used: number[] = [];
    for (const [k, b] of this.buckets) {
      if (b.pending > 0 || now - b.lastUsed < REFRESH_MS) {
        // Recently used keys are refreshed even with nothing to send: other replicas' use shows up here.
        keys.push(k);
        used.push(b.pending);
        b.pending = 0;
      } else if (now - b.lastUsed > IDLE_MS) this.buckets.delete(k);
    }
    if (!keys.length) return;
    const sql = this.sql!;
    let rows: { key: string; tokens: number }[];
    try {
      // A new row starts full, minus what was used. On conflict `burst - excluded.tokens` is that use again:
      // the stored bucket is refilled for the time elapsed (capped at burst), then charged (floored at -burst).
      rows = await sql<{ key: string; tokens: number }[]>`
        insert into rate_limit_buckets as b (key, tokens, updated_at)
        select k, ${this.burst}::float8 - n, clock_timestamp()
        from unnest(${keys}::text[], ${used}::float8[]) as u(k, n)
        on conflict (key) do update set
          tokens = greatest(-${this.burst}::float8,
            least(${this.burst}::float8, b.tokens + extract(epoch from clock_timestamp() - b.updated_at)::float8 * ${this.rate}::float8)
            - (${this.burst}::float8 - excluded.tokens)),
          updated_at = clock_timestamp()
        returning key, tokens`;
    } catch (err) {
      // Not sent: count it again next time, and keep deciding locally meanwhile.
      keys.forEach((k, i) => {
        const b = this.buckets.get(k);
        if (b) b.pending += used[i]!;
      });
      throw err;
    }
    const at = performance.now();
    for (const r of rows) {
      const b = this.buckets.get(r.key);
      if (!b) continue;
      // The shared view, minus what was admitted here while the statement ran.
      b.tokens = Math.min(this.burst, r.tokens) - b.pending;
      b.at = at;
    }
    if (at - this.lastPurge > 60_000) {
      this.lastPurge = at;
      await sql`delete from rate_limit_buckets where updated_at < now() - interval '1 hour'`;
    }
  }

  private evictIdle(now: number): void {
    for (const [k, b] of this.buckets) if (b.pending === 0 && now - b.lastUsed > IDLE_MS) this.buckets.delete(k);
  }
}
