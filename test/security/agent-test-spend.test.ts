// Hostile tests (docs/security.md, issue 50, item 7): agent tests must not spend the platform's keys without bound,
// and one organisation must not starve the others of the run queue. Real control plane, Postgres and pg-boss; the
// models are the OpenAI-compatible stand-in (a third party). Each attack holds its conversations open on the
// stand-in; the other organisation's run must still complete (a run that never gets a slot fails by timeout).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { contentText, startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';

const PLATFORM_KEY = 'sk-platform-spend-canary-0123456789';
let tp: TestPlatform;
let openai: FakeOpenAI;
const gates = new Map<string, Promise<void>>();

beforeAll(async () => {
  openai = await startFakeOpenAI({
    // The agent's system prompt names a gate: its conversations wait there (a slow or hostile model).
    responder: async (req) => {
      const gate = /GATE-(\w+)/.exec(contentText(req.messages[0]!))?.[1];
      if (gate && gates.has(gate)) await gates.get(gate);
      return { text: 'Noted.' };
    },
  });
  tp = await usePlatform({
    SSRF_ALLOWLIST: '127.0.0.1',
    OPENAI_API_KEY: PLATFORM_KEY,
    OPENAI_BASE_URL: openai.url,
    AGENT_TEST_JOBS_PER_PROCESS: 2,
    AGENT_TEST_RUNS_PER_ORG: 1,
    AGENT_TEST_CONCURRENCY: 2,
    AGENT_TEST_PLATFORM_DAILY_CONVERSATIONS: 3,
    AGENT_TEST_WAIT_SECONDS: 1,
  } as never);
});
afterAll(async () => {
  await openai?.close();
});

const api = (method: string, path: string, key: string, body?: unknown) => tp.request(method, path, { key, ...(body !== undefined ? { body } : {}) });

/** An agent on the platform's OpenAI endpoint (no base_url), or on the tenant's own server with its own key. */
async function agent(key: string, o: { gate?: string; own?: boolean } = {}): Promise<string> {
  if (o.own) expect((await api('post', '/v1/credentials', key, { name: 'openai', provider: 'openai', api_key: 'sk-tenant-own-key' })).status).toBe(201);
  const m = await api('post', '/v1/models', key, { name: 'm', model: 'fake-model', provider: 'openai', system_prompt: `Front desk. GATE-${o.gate ?? 'none'}` });
  expect(m.status, JSON.stringify(m.body)).toBe(201);
  const a = await api('post', '/v1/agents', key, { name: 'a', llm_id: m.body.id });
  expect(a.status).toBe(201);
  return a.body.id;
}

async function startRun(key: string, agentId: string, scenarios: number, mode: 'text' | 'voice' = 'text'): Promise<string> {
  const ids: string[] = [];
  for (let i = 0; i < scenarios; i++) {
    const s = await api('post', '/v1/test-scenarios', key, { name: `s${i}`, script: [{ say: `Hello ${i}` }], expectations: [{ type: 'transcript_contains', text: 'noted' }] });
    expect(s.status).toBe(201);
    ids.push(s.body.id);
  }
  const r = await api('post', `/v1/agents/${agentId}/test-runs`, key, { scenario_ids: ids, mode });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id;
}

async function waitFor(runId: string, key: string, done: (run: any) => boolean, timeoutMs = 90_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await api('get', `/v1/test-runs/${runId}`, key);
    if (done(res.body)) return res.body;
    if (Date.now() > until) throw new Error(`run ${runId} did not get there: ${JSON.stringify(res.body).slice(0, 400)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const finished = (r: any) => r.status === 'completed' || r.status === 'canceled';

describe('agent tests on the platform keys', () => {
  it("caps an organisation's test conversations on the platform's keys per day; its own keys are not capped", { timeout: 120_000 }, async () => {
    const spender = await tp.createOrg('spender');
    const agentId = await agent(spender.key);
    const before = openai.headers.filter((h) => h.authorization === `Bearer ${PLATFORM_KEY}`).length;
    const run = await waitFor(await startRun(spender.key, agentId, 5), spender.key, finished);
    expect(run).toMatchObject({ status: 'completed', total: 5, passed: 3, errored: 2 });
    const capped = run.results.filter((r: any) => r.status === 'error');
    expect(capped[0].error).toMatch(/daily limit of 3 test conversations on the platform's provider keys is reached/);
    expect(capped[0].messages).toEqual([]);
    // Exactly three conversations reached the platform's key.
    expect(openai.headers.filter((h) => h.authorization === `Bearer ${PLATFORM_KEY}`).length - before).toBe(3);
    // A second run the same day gets nothing more on the platform's keys.
    const again = await waitFor(await startRun(spender.key, agentId, 1), spender.key, finished);
    expect(again).toMatchObject({ passed: 0, errored: 1 });

    // An organisation on its own key is not counted.
    const own = await tp.createOrg('own-keys');
    const ownAgent = await agent(own.key, { own: true });
    const ownRun = await waitFor(await startRun(own.key, ownAgent, 5), own.key, finished);
    expect(ownRun).toMatchObject({ total: 5, passed: 5, errored: 0 });
    const [usage] = await tp.sql`select count(*)::int as n from agent_test_platform_usage where org_id = ${own.orgId}`;
    expect(usage!.n).toBe(0);
  });
});

describe('one organisation cannot starve the run queue', () => {
  it("an organisation's queued runs take at most its share of the slots, and a run at its limit gives its slot back", { timeout: 180_000 }, async () => {
    // Two run slots in this process. The hog starts two runs whose conversations hang on its model.
    let releaseHog!: () => void;
    gates.set('hog', new Promise<void>((r) => (releaseHog = r)));
    const hog = await tp.createOrg('hog');
    await tp.request('post', '/v1/credentials', { key: hog.key, body: { name: 'openai', provider: 'openai', api_key: 'sk-hog-own' } });
    const hogAgent = await agent(hog.key, { gate: 'hog' });
    const hog1 = await startRun(hog.key, hogAgent, 1);
    await waitFor(hog1, hog.key, (r) => r.results.some((x: any) => x.status === 'running'));
    const hog2 = await startRun(hog.key, hogAgent, 1);

    // Another organisation's run completes meanwhile: the hog's second run waits in the queue, not in a slot.
    const victim = await tp.createOrg('victim');
    const victimAgent = await agent(victim.key, { own: true });
    expect(await waitFor(await startRun(victim.key, victimAgent, 1), victim.key, finished)).toMatchObject({ status: 'completed', passed: 1 });
    expect((await api('get', `/v1/test-runs/${hog2}`, hog.key)).body.results[0].status).toBe('pending');

    // A voice run of an organisation whose real calls fill max_concurrent_calls can start nothing: it must give its
    // slot back (a job re-sent for later) rather than hold it polling, so the victim's next run still completes.
    const full = await tp.createOrg('full');
    await tp.sql`update orgs set max_concurrent_calls = 1 where id = ${full.orgId}`;
    const fullAgent = await agent(full.key, { own: true });
    const realCall = randomUUID();
    await tp.sql`insert into calls (id, org_id, agent_id, type, status, started_at) values (${realCall}, ${full.orgId}, ${fullAgent}, 'web', 'in_progress', now())`;
    const fullRun = await startRun(full.key, fullAgent, 1, 'voice');
    await waitFor(fullRun, full.key, (r) => r.status === 'running');
    // Its job ended while its scenario is still pending: the slot was given back (a job for later is queued).
    for (const until = Date.now() + 60_000; ; ) {
      const done = await tp.sql`select 1 from pgboss.job where name = 'agent-tests.run' and data->>'run_id' = ${fullRun} and state = 'completed'`;
      if (done.length) break;
      if (Date.now() > until) throw new Error('the run at its limit never gave its job slot back');
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(await waitFor(await startRun(victim.key, victimAgent, 1), victim.key, finished)).toMatchObject({ status: 'completed', passed: 1 });
    expect((await api('get', `/v1/test-runs/${fullRun}`, full.key)).body.results[0].status).toBe('pending');
    // Once the real call ends, the run is picked up again (this platform has no LiveKit: its test call fails).
    await tp.sql`update calls set status = 'completed', ended_at = now() where id = ${realCall}`;
    expect((await waitFor(fullRun, full.key, finished)).results[0]).toMatchObject({ status: 'error', error: expect.stringMatching(/media service is unavailable/) });

    releaseHog();
    expect(await waitFor(hog2, hog.key, finished)).toMatchObject({ status: 'completed', passed: 1 });
    expect(await waitFor(hog1, hog.key, finished)).toMatchObject({ status: 'completed', passed: 1 });
  });
});
