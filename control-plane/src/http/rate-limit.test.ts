// The rate limit is per credential across replicas: two control planes on one database admit, together,
// what one credential's bucket allows, not twice that. Syncs are driven by the test (flush), not by time.
import { describe, expect, it } from 'vitest';
import { startTestPlatform } from '../../../test/support/platform.ts';
import { startPlatform } from '../platform.ts';
import { createLogger } from '../../../shared/logger.ts';

describe('shared rate limit', () => {
  it('two app instances on one database share one bucket per credential', async () => {
    // A rate so low that no measurable refill happens during the test; the burst is what can be spent.
    const overrides = { RATE_LIMIT_PER_SECOND: 0.001, RATE_LIMIT_BURST: 10, RATE_LIMIT_SYNC_MS: 10000 } as const;
    const a = await startTestPlatform(overrides);
    const b = await startPlatform({ ...a.config, JOBS_ENABLED: false }, { log: createLogger('test', 'silent') });
    try {
      const org = await a.createOrg();
      const other = await a.createOrg();
      const instances = [a.platform, b];
      let admitted = 0;
      let limited = 0;
      for (let i = 0; i < 30; i++) {
        const p = instances[i % 2]!;
        const res = await fetch(`${p.url}/v1/api-keys`, { headers: { authorization: `Bearer ${org.key}` } });
        if (res.status === 200) admitted++;
        else {
          expect(res.status).toBe(429);
          limited++;
        }
        // The instance that answered sends what it admitted, then the other one refreshes its view (as their
        // timers do, every RATE_LIMIT_SYNC_MS).
        await p.services.rateLimiter.flush();
        await instances[(i + 1) % 2]!.services.rateLimiter.flush();
      }
      expect(admitted).toBe(10);
      expect(limited).toBe(20);
      // Another credential has its own bucket, on either instance.
      expect((await fetch(`${b.url}/v1/api-keys`, { headers: { authorization: `Bearer ${other.key}` } })).status).toBe(200);
      const [row] = await a.sql<{ n: number }[]>`select count(*)::int as n from rate_limit_buckets`;
      expect(row!.n).toBeGreaterThanOrEqual(1);
    } finally {
      await b.close();
      await a.close();
    }
  });

  it('a replica that missed syncs pays back what it over-admitted (the shared bucket goes into debt)', async () => {
    const a = await startTestPlatform({ RATE_LIMIT_PER_SECOND: 0.001, RATE_LIMIT_BURST: 4, RATE_LIMIT_SYNC_MS: 10000 });
    const b = await startPlatform({ ...a.config, JOBS_ENABLED: false }, { log: createLogger('test', 'silent') });
    try {
      const org = await a.createOrg();
      const hit = (p: { url: string }) => fetch(`${p.url}/v1/api-keys`, { headers: { authorization: `Bearer ${org.key}` } }).then((r) => r.status);
      // Both spend the whole burst before either syncs: 8 admitted, twice the bucket.
      for (let i = 0; i < 4; i++) expect([await hit(a.platform), await hit(b)]).toEqual([200, 200]);
      await a.platform.services.rateLimiter.flush();
      await b.services.rateLimiter.flush();
      await a.platform.services.rateLimiter.flush();
      // The shared bucket is at -4 now: both refuse.
      expect(await hit(a.platform)).toBe(429);
      expect(await hit(b)).toBe(429);
      const [row] = await a.sql<{ tokens: number }[]>`select tokens from rate_limit_buckets`;
      expect(row!.tokens).toBeLessThan(-3.9);
    } finally {
      await b.close();
      await a.close();
    }
  });
});
