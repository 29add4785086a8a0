import { describe, expect, it } from 'vitest';
import { isRetriableStatus, MAX_RETRY_AFTER_MS, nextDelay, parseRetryAfter, parseSchedule } from './retry.ts';

describe('retry policy', () => {
  const schedule = parseSchedule('5s,5m,30m,2h,5h,10h,10h');

  it('reads the default schedule: eight attempts over about 27.6 hours', () => {
    expect(schedule).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(parseSchedule('50ms,1.5s, 2')).toEqual([50, 1500, 2]);
    expect(() => parseSchedule('5 minutes')).toThrow(/WEBHOOK_RETRY_SCHEDULE/);
  });

  it('jitters each delay by at most 20 % and stops after the last', () => {
    expect(nextDelay(schedule, 1, undefined, () => 0)).toBe(4_000);
    expect(nextDelay(schedule, 1, undefined, () => 0.999999)).toBe(6_000);
    expect(nextDelay(schedule, 7, undefined, () => 0.5)).toBe(36_000_000);
    expect(nextDelay(schedule, 8)).toBeNull();
  });

  it('lets Retry-After lengthen a wait, never shorten it, up to 24 h', () => {
    expect(nextDelay(schedule, 1, 60_000, () => 0.5)).toBe(60_000);
    expect(nextDelay(schedule, 2, 1_000, () => 0.5)).toBe(300_000);
    expect(nextDelay(schedule, 1, 7 * 86_400_000, () => 0.5)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter(new Date(10_000 + 30_000).toUTCString(), 10_000)).toBe(30_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
  });

  it('retries every answer that is not a 2xx, 4xx included ("otherwise the service retries")', () => {
    for (const s of [500, 502, 503, 302, 400, 401, 403, 404, 408, 410, 413, 422, 425, 429]) expect(isRetriableStatus(s), String(s)).toBe(true);
    for (const s of [200, 201, 204, 299]) expect(isRetriableStatus(s), String(s)).toBe(false);
  });
});
