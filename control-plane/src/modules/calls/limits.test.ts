// Call admission against a real PostgreSQL: the concurrency and daily limits hold under concurrent creations.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { admissionError, admitCall, admitMany, countLiveCalls, secondsToUtcMidnight, type Admission } from './limits.ts';
import { insertBareAgent } from '../../../../test/support/bare-agent.ts';

let tp: TestPlatform;

beforeAll(async () => {
  tp = await usePlatform({ DATABASE_POOL_MAX: 10 });
});

async function orgWithAgent(limits: { daily?: number; concurrent?: number }): Promise<{ orgId: string; agentId: string }> {
  const { orgId } = await tp.createOrg();
  await tp.sql`update orgs set max_calls_per_day = ${limits.daily ?? 1000}, max_concurrent_calls = ${limits.concurrent ?? 10} where id = ${orgId}`;
  const agentId = await insertBareAgent(tp.sql, orgId);
  return { orgId, agentId };
}

/** What a creating route does: admit, then insert the call, in one transaction. */
async function create(orgId: string, agentId: string, opts: { scheduledAt?: Date } = {}): Promise<Admission> {
  return tp.sql.begin(async (tx) => {
    const a = await admitCall(tx, orgId, { concurrency: !opts.scheduledAt });
    if (a.ok) {
      await tx`insert into calls (id, org_id, agent_id, type, direction, to_number, scheduled_at)
               values (${randomUUID()}, ${orgId}, ${agentId}, 'outbound', 'outbound', '+15550100', ${opts.scheduledAt ?? null})`;
    }
    return a;
  });
}

describe('admitCall', () => {
  it('admits exactly max_concurrent_calls out of 50 concurrent creations', async () => {
    const { orgId, agentId } = await orgWithAgent({ concurrent: 5 });
    const results = await Promise.all(Array.from({ length: 50 }, () => create(orgId, agentId)));
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    const refused = results.filter((r) => !r.ok);
    expect(refused).toHaveLength(45);
    expect(refused[0]).toMatchObject({ ok: false, reason: 'concurrency', limit: 'max_concurrent_calls', value: 5 });
    expect(await countLiveCalls(tp.sql, orgId)).toBe(5);
    // Concurrency refusals took no daily slot.
    const [day] = await tp.sql`select calls from org_daily_calls where org_id = ${orgId}`;
    expect(day!.calls).toBe(5);
  });

  it('frees a slot when a live call ends', async () => {
    const { orgId, agentId } = await orgWithAgent({ concurrent: 1 });
    expect((await create(orgId, agentId)).ok).toBe(true);
    expect(await create(orgId, agentId)).toMatchObject({ ok: false, reason: 'concurrency' });
    await tp.sql`update calls set status = 'completed' where org_id = ${orgId}`;
    expect((await create(orgId, agentId)).ok).toBe(true);
  });

  it('admits exactly max_calls_per_day out of 50 concurrent creations', async () => {
    const { orgId, agentId } = await orgWithAgent({ daily: 5, concurrent: 100 });
    const latest = secondsToUtcMidnight();
    const results = await Promise.all(Array.from({ length: 50 }, () => create(orgId, agentId)));
    const earliest = secondsToUtcMidnight();
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    const refused = results.find((r) => !r.ok)!;
    expect(refused).toMatchObject({ ok: false, reason: 'daily_cap', limit: 'max_calls_per_day', value: 5 });
    // Computed at the refusal, which happened between the two readings (a second may tick under load).
    if (!refused.ok) {
      expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(earliest);
      expect(refused.retryAfterSeconds).toBeLessThanOrEqual(latest);
    }
  });

  it('does not count scheduled calls as live until they are dialled, nor a call against itself', async () => {
    const { orgId, agentId } = await orgWithAgent({ concurrent: 1 });
    const later = new Date(Date.now() + 3600_000);
    expect((await create(orgId, agentId, { scheduledAt: later })).ok).toBe(true);
    expect((await create(orgId, agentId, { scheduledAt: later })).ok).toBe(true);
    expect(await countLiveCalls(tp.sql, orgId)).toBe(0);
    const [sched] = await tp.sql<{ id: string }[]>`select id from calls where org_id = ${orgId} limit 1`;
    // Dialling a scheduled call: its daily slot was taken at creation; it must not count against itself.
    const dial = await tp.sql.begin(async (tx) => {
      const a = await admitCall(tx, orgId, { daily: false, excludeCallId: sched!.id });
      if (a.ok) await tx`update calls set status = 'initiated' where id = ${sched!.id}`;
      return a;
    });
    expect(dial.ok).toBe(true);
    expect(await countLiveCalls(tp.sql, orgId)).toBe(1);
    expect(await create(orgId, agentId)).toMatchObject({ ok: false, reason: 'concurrency' });
  });

  it('a zero limit admits nothing, and the refusal maps to a 429 with its reason', async () => {
    const { orgId, agentId } = await orgWithAgent({ concurrent: 0 });
    const a = await create(orgId, agentId);
    expect(a.ok).toBe(false);
    if (a.ok) return;
    const err = admissionError(a);
    expect(err.status).toBe(429);
    expect(err.headers['Retry-After']).toBe('5');
    expect(err.extra).toMatchObject({ reason: 'concurrency', limit: 'max_concurrent_calls', limit_value: 0, retry_after_seconds: 5 });
    expect(err.message).toBe('Concurrent call limit of 0 reached; retry when a call ends');
  });
});

describe('admitMany (a campaign tick)', () => {
  /** Admits up to `n` at once and inserts that many live calls, as a tick does. */
  const many = (orgId: string, agentId: string, n: number) =>
    tp.sql.begin(async (tx) => {
      const r = await admitMany(tx, orgId, n);
      for (let i = 0; i < r.admitted; i++) {
        await tx`insert into calls (id, org_id, agent_id, type, direction, to_number) values (${randomUUID()}, ${orgId}, ${agentId}, 'outbound', 'outbound', '+15550100')`;
      }
      return r;
    });

  it('admits what concurrency leaves, then what the day leaves, and names the limit that stopped the rest', async () => {
    const { orgId, agentId } = await orgWithAgent({ concurrent: 4, daily: 6 });
    expect(await many(orgId, agentId, 3)).toEqual({ admitted: 3, refusal: null });
    const atConcurrency = await many(orgId, agentId, 3);
    expect(atConcurrency).toMatchObject({ admitted: 1, refusal: { reason: 'concurrency', limit: 'max_concurrent_calls', value: 4 } });
    await tp.sql`update calls set status = 'completed', ended_at = now() where org_id = ${orgId}`;
    const atDaily = await many(orgId, agentId, 4);
    expect(atDaily).toMatchObject({ admitted: 2, refusal: { reason: 'daily_cap', limit: 'max_calls_per_day', value: 6 } });
    expect(await many(orgId, agentId, 1)).toMatchObject({ admitted: 0, refusal: { reason: 'daily_cap' } });
    const [day] = await tp.sql`select calls from org_daily_calls where org_id = ${orgId}`;
    expect(day!.calls).toBe(6);
  });

  it('concurrent ticks of two campaigns of one org never admit more than max_concurrent_calls together', async () => {
    const { orgId, agentId } = await orgWithAgent({ concurrent: 7 });
    const results = await Promise.all(Array.from({ length: 6 }, () => many(orgId, agentId, 3)));
    expect(results.reduce((a, r) => a + r.admitted, 0)).toBe(7);
    expect(await countLiveCalls(tp.sql, orgId)).toBe(7);
  });
});
