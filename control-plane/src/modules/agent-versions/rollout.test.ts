// Rollout: a 50/50 traffic split over 200 simulated calls (each resolved by the worker's config fetch) lands in
// the binomial band, sticky per caller; and the test gate: a failing suite blocks the publish with a 409 naming
// the failed expectations, a passing one lets it through (text-mode runs against the OpenAI-compatible stand-in).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { contentText, startFakeOpenAI, type FakeOpenAI } from '../../../../test/support/fake-openai.ts';
import { seededRandom } from '../../../../test/support/seeded-random.ts';
import { insertCall } from '../calls/queries.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
let tp: TestPlatform;
let openai: FakeOpenAI;
let org: { orgId: string; key: string };

beforeAll(async () => {
  // The agent's model answers politely only when its role (the job description) says so.
  openai = await startFakeOpenAI({
    responder: (req) => ({ text: contentText(req.messages[0]!).includes('# Role\nPolite') ? 'Hello, thank you for calling.' : 'What do you want?' }),
  });
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1' } as never);
  org = await tp.createOrg('rollout');
});
afterAll(async () => openai.close());

const api = (method: string, path: string, body?: unknown) => tp.request(method, path, { key: org.key, ...(body !== undefined ? { body } : {}) });

async function newAgent(): Promise<string> {
  const m = await api('post', '/v1/models', { name: 'm', model: 'fake-model', provider: 'openai', base_url: openai.url, system_prompt: 'Answer the phone.' });
  const a = await api('post', '/v1/agents', { name: 'a', llm_id: m.body.id });
  expect(a.status).toBe(201);
  return a.body.id as string;
}

async function resolve(agentId: string, from: string): Promise<{ version: number; source: string }> {
  const id = randomUUID();
  await insertCall(tp.sql, {
    id,
    org_id: org.orgId,
    agent_id: agentId,
    type: 'inbound',
    direction: 'inbound',
    to_number: '+14155550100',
    from_number: from,
    room_name: `call-${id}`,
    variables: {},
    metadata: {},
    overrides: {},
    webhook_url: null,
  });
  const cfg = await tp.request('get', `/internal/v1/calls/${id}/config`, { key: WORKER, headers: { 'x-call-capability': tp.capability(id) } });
  expect(cfg.status).toBe(200);
  const [row] = await tp.sql<{ agent_version: number; agent_version_source: string }[]>`select agent_version, agent_version_source from calls where id = ${id}`;
  expect(cfg.body.call.agent_version).toBe(row!.agent_version);
  return { version: row!.agent_version, source: row!.agent_version_source };
}

/** The smallest and largest counts outside of which Binomial(n, p) falls with probability at most `tail` on each side. */
function binomialBand(n: number, p: number, tail: number): [number, number] {
  const pmf: number[] = [];
  let logC = 0;
  for (let k = 0; k <= n; k++) {
    if (k > 0) logC += Math.log((n - k + 1) / k);
    pmf.push(Math.exp(logC + k * Math.log(p) + (n - k) * Math.log(1 - p)));
  }
  let lo = 0;
  for (let below = 0; below + pmf[lo]! <= tail; lo++) below += pmf[lo]!;
  let hi = n;
  for (let above = 0; above + pmf[hi]! <= tail; hi--) above += pmf[hi]!;
  return [lo, hi];
}

describe('traffic split', () => {
  it('sends 50 % of 200 callers to the split version, within the 99.9 % binomial band, and keeps each caller on one side', async () => {
    const agentId = await newAgent();
    await api('patch', `/v1/agents/${agentId}/draft`, { first_message: 'Version two.' });
    const set = await api('patch', `/v1/agents/${agentId}/rollout`, { split: { version: 2, percent: 50 } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.split).toEqual({ version: 2, percent: 50 });

    const random = seededRandom(53);
    const callers = Array.from({ length: 200 }, () => `+1${Math.floor(2_000_000_000 + random() * 7_999_999_999)}`);
    const sides = new Map<string, number>();
    for (const from of callers) {
      const { version, source } = await resolve(agentId, from);
      expect(source).toBe(version === 2 ? 'split' : 'published');
      sides.set(from, version);
    }
    const [lo, hi] = binomialBand(200, 0.5, 0.0005);
    expect([lo, hi]).toEqual([77, 123]);
    const split = [...sides.values()].filter((v) => v === 2).length;
    expect(split).toBeGreaterThanOrEqual(lo);
    expect(split).toBeLessThanOrEqual(hi);

    // Sticky: the same callers call again and land where they did.
    for (const from of callers.slice(0, 20)) expect((await resolve(agentId, from)).version).toBe(sides.get(from));
    // The split ends: every caller follows the published version.
    await api('patch', `/v1/agents/${agentId}/rollout`, { split: null });
    for (const from of callers.slice(0, 20)) expect(await resolve(agentId, from)).toEqual({ version: 1, source: 'published' });
    // 240 calls, one after the other: a loaded machine needs longer than the default.
  }, 180_000);

  it('refuses a split to the published version or to a version the agent lacks', async () => {
    const agentId = await newAgent();
    const same = await api('patch', `/v1/agents/${agentId}/rollout`, { split: { version: 1, percent: 10 } });
    expect(same.status).toBe(422);
    expect(same.body.detail[0]).toMatchObject({ loc: ['body', 'split', 'version'], type: 'value_error' });
    const none = await api('patch', `/v1/agents/${agentId}/rollout`, { split: { version: 4, percent: 10 } });
    expect(none.body.detail[0]).toMatchObject({ loc: ['body', 'split', 'version'], type: 'reference_not_found' });
    const pct = await api('patch', `/v1/agents/${agentId}/rollout`, { split: { version: 1, percent: 100 } });
    expect(pct.body.detail[0]).toMatchObject({ loc: ['body', 'split', 'percent'] });
  });
});

async function runDone(runId: string) {
  for (let i = 0; i < 600; i++) {
    const run = await api('get', `/v1/test-runs/${runId}`);
    if (run.body.status === 'completed' || run.body.status === 'canceled') return run.body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the run did not end');
}

describe('test gate', () => {
  it('a failing suite blocks the publish with 409 naming the failed expectations; a passing one publishes', async () => {
    const agentId = await newAgent();
    const sc = await api('post', '/v1/test-scenarios', {
      name: 'greets politely',
      script: [{ say: 'Hi there' }],
      expectations: [{ type: 'transcript_contains', name: 'thanks the caller', text: 'thank you', role: 'agent' }],
    });
    expect(sc.status, JSON.stringify(sc.body)).toBe(201);
    const suite = await api('post', '/v1/test-suites', { name: 'release', agent_id: agentId, scenario_ids: [sc.body.id] });
    await api('patch', `/v1/agents/${agentId}/rollout`, { test_suite_id: suite.body.id });

    await api('patch', `/v1/agents/${agentId}/draft`, { job_description: 'Rude' });
    const pending = await api('post', `/v1/agents/${agentId}/publish`, {});
    expect(pending.status).toBe(409);
    expect(pending.body).toMatchObject({ type: 'conflict', gate: 'pending', test_suite_id: suite.body.id });
    const run = await runDone(pending.body.test_run_id);
    expect(run).toMatchObject({ agent_version: 2, suite_id: suite.body.id, failed: 1 });
    const refused = await api('post', `/v1/agents/${agentId}/publish`, {});
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      gate: 'failed',
      test_run_id: run.id,
      failed_expectations: [{ scenario_id: sc.body.id, scenario_name: 'greets politely', expectation: 'thanks the caller', type: 'transcript_contains' }],
    });
    expect(refused.body.detail).toContain('greets politely / thanks the caller');
    expect((await api('get', `/v1/agents/${agentId}`)).body.version).toBe(1);

    await api('patch', `/v1/agents/${agentId}/draft`, { job_description: 'Polite' });
    const second = await api('post', `/v1/agents/${agentId}/publish`, {});
    expect(second.body.gate).toBe('pending');
    expect(await runDone(second.body.test_run_id)).toMatchObject({ agent_version: 3, passed: 1, failed: 0 });
    const published = await api('post', `/v1/agents/${agentId}/publish`, {});
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    expect(published.body).toMatchObject({ version: 3, job_description: 'Polite' });
  });
});
