// A scheduled call that comes due while its org is at max_concurrent_calls waits for a slot, against a real
// PostgreSQL and the real pg-boss dial queue (JOBS_ENABLED): the job is retried with backoff while the call stays
// queued, it is admitted once a live call ends, and it gives up with concurrency_limit after
// OUTBOUND_CONCURRENCY_WAIT_SECONDS past its time. LiveKit is unreachable here (a closed port): an admitted call is
// seen leaving `queued` for `initiated` (the dial job's step before it creates the room), then stopped.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { freeTcpPort } from '../../../../scripts/stack/ports.ts';
import { scheduledDialOptions } from './dial.ts';
import { insertBareAgent } from '../../../../test/support/bare-agent.ts';

let tp: TestPlatform;
const WAIT_SECONDS = 12;

async function orgWithNumber(name: string, from: string): Promise<{ orgId: string; key: string; agentId: string }> {
  const org = await tp.createOrg(name);
  const agentId = await insertBareAgent(tp.sql, org.orgId);
  await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
               values (${org.orgId}, ${from}, 'simulated', ${agentId}, 'ST_wait')`;
  await tp.sql`update orgs set max_concurrent_calls = 1 where id = ${org.orgId}`;
  return { ...org, agentId };
}

/** A web call in progress: it holds the org's only slot. */
async function liveCall(orgId: string, agentId: string): Promise<string> {
  const [row] = await tp.sql<{ id: string }[]>`
    insert into calls (org_id, agent_id, type, status, started_at) values (${orgId}, ${agentId}, 'web', 'in_progress', now()) returning id`;
  return row!.id;
}

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const callRow = async (id: string) =>
  (await tp.sql<{ status: string; end_reason: string | null; dialed_at: Date | null }[]>`select status, end_reason, dialed_at from calls where id = ${id}`)[0]!;
const dialJobs = (id: string) =>
  tp.sql<{ state: string; retry_count: number; retry_limit: number }[]>`select state, retry_count, retry_limit from pgboss.job where name = 'calls.dial' and singleton_key = ${id}`;

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: true, LIVEKIT_URL: `http://127.0.0.1:${await freeTcpPort()}`, OUTBOUND_CONCURRENCY_WAIT_SECONDS: WAIT_SECONDS } as never);
});

describe('a scheduled call due at max_concurrent_calls', () => {
  it('stays queued while the org is full, retried by pg-boss, and is admitted for dialling once a slot frees', { timeout: 60_000 }, async () => {
    const org = await orgWithNumber('waits', '+14155550161');
    const busy = await liveCall(org.orgId, org.agentId);
    const created = await tp.request('post', '/v1/calls', { key: org.key, body: { agent_id: org.agentId, to_number: '+15550002222', scheduled_at: new Date(Date.now() + 1500).toISOString() } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    // Due and refused a slot: the job is back in pg-boss's retry state, the call still queued and never dialled.
    const [job] = await until('the dial job to wait for a slot', async () => {
      const jobs = await dialJobs(id);
      return jobs[0]?.state === 'retry' && jobs[0].retry_count >= 1 ? jobs : null;
    }, 20_000);
    expect(job!.retry_limit).toBe(scheduledDialOptions(WAIT_SECONDS).retryLimit);
    expect(await callRow(id)).toMatchObject({ status: 'queued', end_reason: null, dialed_at: null });
    expect(await dialJobs(id)).toHaveLength(1);
    // The live call ends: the next retry admits the call and goes on to dial it.
    await tp.sql`update calls set status = 'completed', ended_at = now(), end_reason = 'user_hangup' where id = ${busy}`;
    await until('the call to be admitted', async () => (await callRow(id)).status !== 'queued', 30_000);
    expect((await callRow(id)).status).toBe('initiated');
    // It now holds the slot: an immediate call is refused.
    const another = await tp.request('post', '/v1/calls', { key: org.key, body: { agent_id: org.agentId, to_number: '+15550003333' } });
    expect(another.status).toBe(429);
    const stopped = await tp.request('post', `/v1/calls/${id}/stop`, { key: org.key });
    // Ringing, never connected: it fails canceled (not completed).
    expect(stopped.body).toMatchObject({ status: 'failed', end_reason: 'canceled' });
  });

  it(`gives up with concurrency_limit and call.failed when no slot frees within the wait`, { timeout: 90_000 }, async () => {
    const org = await orgWithNumber('gives up', '+14155550162');
    await liveCall(org.orgId, org.agentId);
    const at = Date.now() + 1500;
    const created = await tp.request('post', '/v1/calls', { key: org.key, body: { agent_id: org.agentId, to_number: '+15550004444', scheduled_at: new Date(at).toISOString() } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const failed = await until('the call to give up', async () => {
      const c = await callRow(id);
      return c.status === 'queued' ? null : c;
    }, 75_000);
    expect(failed).toMatchObject({ status: 'failed', end_reason: 'concurrency_limit', dialed_at: null });
    // Not before the wait was over: it waited, then failed (the time it failed is the event's).
    const [event] = await tp.sql<{ created_at: Date; payload: { reason: string } }[]>`
      select created_at, payload from events where call_id = ${id} and type = 'call.failed'`;
    expect(event!.payload.reason).toBe('concurrency_limit');
    expect(event!.created_at.getTime()).toBeGreaterThanOrEqual(at + WAIT_SECONDS * 1000);
    const [job] = await dialJobs(id);
    expect(job!.state).toBe('completed');
    expect(job!.retry_count).toBeGreaterThanOrEqual(1);
  });
});
