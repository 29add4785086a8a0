// Per-credential token bucket in process memory: a guard against runaway clients, not billing.
// Each replica limits on its own, so the effective limit scales with the replica count (docs/decisions.md).
import { tooManyRequests } from './errors.ts';

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly rate: number;
  private readonly burst: number;
  constructor(ratePerSecond: number, burst: number) {
    this.rate = ratePerSecond;
    this.burst = burst;
  }

  take(id: string): void {
    if (this.rate <= 0) return;
    const now = performance.now();
    const b = this.buckets.get(id) ?? { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.rate);
    b.at = now;
    if (b.tokens < 1) {
      this.buckets.set(id, b);
      throw tooManyRequests('Too many requests for this credential; slow down', (1 - b.tokens) / this.rate);
    }
    b.tokens -= 1;
    if (this.buckets.size > 100_000) this.buckets.clear();
    this.buckets.set(id, b);
  }
}
