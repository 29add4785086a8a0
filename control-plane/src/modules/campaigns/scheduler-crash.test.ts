// A scheduler killed mid-campaign loses no contact and calls none twice for one attempt. A real control-plane
// process (control-plane/src/main.ts, jobs on, its pg-boss running the campaign's ticks) schedules a campaign on
// this file's database; a test pause point inside a tick's transaction (VAP_TEST_CAMPAIGN_PAUSE_AFTER_CALLS,
// honoured only under NODE_ENV=test) holds it with calls inserted but not committed, and the process is
// SIGKILLed there. Then: the killed tick left nothing (its transaction rolled back), every committed attempt has
// exactly one call, and a scheduler that takes over (here, this process ticking the campaign) calls every
// remaining contact exactly once. LiveKit is a closed port: the attempts' dial jobs fail and are retried, which
// is no concern of the scheduler's.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { freeTcpPort, freeTcpUdpPort } from '../../../../scripts/stack/ports.ts';
import { tickCampaign } from './scheduler.ts';
import { insertBareAgent } from '../../../../test/support/bare-agent.ts';

const ROOT = path.resolve(import.meta.dirname, '../../../..');
const CONTACTS = 30;
const PAUSE_AT = 25;

let tp: TestPlatform;
let child: ChildProcess | null = null;
const lines: string[] = [];

async function until<T>(what: string, fn: () => Promise<T | null | false> | T | null | false, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${lines.slice(-20).join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: false } as never);
});

afterAll(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

describe('a scheduler killed mid-tick', () => {
  it('leaves no attempt placed twice and no contact lost', { timeout: 120_000 }, async () => {
    const org = await tp.createOrg('crash');
    await tp.sql`update orgs set max_concurrent_calls = 1000, max_calls_per_day = 100000 where id = ${org.orgId}`;
    const agentId = await insertBareAgent(tp.sql, org.orgId);
    await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id) values (${org.orgId}, '+14155550160', 'simulated', ${agentId}, 'ST_crash')`;

    // The other process first, so its pg-boss is ready when the campaign's first tick is queued.
    const port = await freeTcpPort();
    child = spawn(process.execPath, ['control-plane/src/main.ts'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'warn',
        DATABASE_URL: tp.config.DATABASE_URL,
        HOST: '127.0.0.1',
        PORT: String(port),
        METRICS_PORT: String(await freeTcpPort()),
        MASTER_KEY: tp.config.MASTER_KEY,
        WORKER_TOKEN: tp.config.WORKER_TOKEN,
        LIVEKIT_URL: `http://127.0.0.1:${await freeTcpPort()}`,
        SIMULATED_CARRIER_TERMINATION_ADDRESS: `127.0.0.1:${await freeTcpUdpPort()}`,
        JOBS_ENABLED: 'true',
        VAP_TEST_CAMPAIGN_PAUSE_AFTER_CALLS: String(PAUSE_AT),
      },
    });
    for (const s of [child.stdout!, child.stderr!]) createInterface({ input: s }).on('line', (l) => lines.push(l));
    const exited = new Promise((r) => child!.once('exit', r));
    await until('the other control plane to serve', async () => {
      if (child!.exitCode !== null) throw new Error(`the control plane exited ${child!.exitCode}\n${lines.join('\n')}`);
      return fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok).catch(() => false);
    }, 60_000);

    const numbers = Array.from({ length: CONTACTS }, (_, i) => `+1555030${String(10000 + i).slice(1)}`);
    const res = await tp.request('post', '/v1/campaigns', {
      key: org.key,
      body: {
        name: 'crash',
        agent_id: agentId,
        contacts: numbers.map((to_number) => ({ to_number })),
        schedule: { windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] },
        pacing: { calls_per_minute: 600, max_concurrent: 100 },
      },
    });
    expect(res.status).toBe(201);
    const id = res.body.id as string;

    // The other process's tick holds PAUSE_AT calls in its open transaction: kill it there.
    await until('a tick to pause mid-transaction', () => lines.some((l) => l.includes('campaign tick paused for a test')), 60_000);
    child.kill('SIGKILL');
    await exited;

    // What the killed process committed: whole ticks only, each attempt once.
    const committed = await tp.sql<{ contact: string; attempt: number; n: number }[]>`
      select campaign_contact_id as contact, campaign_attempt as attempt, count(*)::int as n from calls where campaign_id = ${id} group by 1, 2`;
    expect(committed.length).toBeGreaterThan(0);
    expect(committed.length).toBeLessThan(PAUSE_AT);
    expect(committed.filter((c) => c.n !== 1)).toEqual([]);
    const states = await tp.sql<{ state: string; n: number }[]>`select state, count(*)::int as n from campaign_contacts where campaign_id = ${id} group by state`;
    const live = states.filter((s) => s.state !== 'pending').reduce((a, s) => a + s.n, 0);
    expect(live).toBe(committed.length);

    // Another scheduler takes over (its backend's locks went with the dead connection).
    await until('every contact to be attempted', async () => {
      await tickCampaign(tp.platform.services, id, new Date());
      const [row] = await tp.sql<{ n: number }[]>`select count(*)::int as n from campaign_contacts where campaign_id = ${id} and state = 'pending'`;
      return row!.n === 0;
    }, 30_000);
    const calls = await tp.sql<{ to_number: string; campaign_attempt: number }[]>`select to_number, campaign_attempt from calls where campaign_id = ${id}`;
    expect(calls.map((c) => c.to_number).sort()).toEqual([...numbers].sort());
    expect(new Set(calls.map((c) => c.campaign_attempt))).toEqual(new Set([1]));
    const [dials] = await tp.sql<{ dials: number }[]>`select dials from campaigns where id = ${id}`;
    expect(dials!.dials).toBe(CONTACTS);
  });
});
