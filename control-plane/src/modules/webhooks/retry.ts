// When to try again. Standard Webhooks / Svix practice: attempts immediately, then after 5 s, 5 min, 30 min,
// 2 h, 5 h, 10 h and 10 h (eight in all, about 27.6 hours), each delay with +-20 % jitter so that a receiver
// coming back after an outage is not hit by every queued message at the same instant.

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "5s,5m,30m,2h" -> delays in milliseconds before each retry. A bare number is milliseconds. */
export function parseSchedule(text: string): number[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((part) => {
      const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(part);
      if (!m) throw new Error(`WEBHOOK_RETRY_SCHEDULE: cannot read "${part}" (use e.g. 5s,5m,30m,2h)`);
      return Math.round(Number(m[1]) * UNITS[m[2] ?? 'ms']!);
    });
}

/**
 * Every answer but a 2xx is retried on the schedule: the spec says "the receiver must answer 2xx within a few
 * seconds; otherwise the service retries", and a 4xx is as often a receiver's bad deploy as a real rejection.
 * 410 Gone is retried too, but it also sets the webhook inactive (deliver.ts), as Svix does.
 */
export function isRetriableStatus(status: number): boolean {
  return status < 200 || status >= 300;
}

/** The receiver says the endpoint is gone for good: the webhook is set inactive, its messages held. */
export const GONE = 410;

/** Longest wait a `Retry-After` can ask for. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** `Retry-After` as delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * Delay before the next attempt after attempt number `attempt` (1-based) failed, or null when it was the
 * last one. A `Retry-After` only ever lengthens the wait (up to 24 h): it is a "not before".
 */
export function nextDelay(schedule: number[], attempt: number, retryAfterMs?: number, random = Math.random): number | null {
  if (attempt > schedule.length) return null;
  const base = schedule[attempt - 1]!;
  const jittered = Math.round(base * (0.8 + 0.4 * random()));
  return retryAfterMs === undefined ? jittered : Math.max(jittered, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}
