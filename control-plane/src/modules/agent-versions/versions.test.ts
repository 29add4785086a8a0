// Agent versions through the API and the worker's config fetch: every change records a version with its actor and
// diff, drafts and publish, rollback, a model's change making versions (published, or held by a gate), pinned
// calls getting their version's prompt, a rollback reaching the next call and not one in progress, tenancy, audit
// and 422 shapes.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { insertCall } from '../calls/queries.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
let tp: TestPlatform;
let org: { orgId: string; key: string };
let other: { orgId: string; key: string };

beforeAll(async () => {
  tp = await usePlatform();
  org = await tp.createOrg('versions');
  other = await tp.createOrg('versions-other');
});

const api = (method: string, path: string, body?: unknown, key = org.key) => tp.request(method, path, { key, ...(body !== undefined ? { body } : {}) });

async function agentWith(prompt: string, extra: Record<string, unknown> = {}, key = org.key): Promise<{ agentId: string; modelId: string }> {
  const m = await api('post', '/v1/models', { name: 'm', model: 'gpt-4o-mini', system_prompt: prompt }, key);
  expect(m.status).toBe(201);
  const a = await api('post', '/v1/agents', { name: 'Ava', llm_id: m.body.id, ...extra }, key);
  expect(a.status, JSON.stringify(a.body)).toBe(201);
  return { agentId: a.body.id as string, modelId: m.body.id as string };
}

/** A call row as the call APIs insert it (no room needed: only the config fetch is exercised). */
async function newCall(agentId: string, c: { type?: 'web' | 'inbound' | 'outbound'; from?: string; orgId?: string } = {}): Promise<string> {
  const id = randomUUID();
  const type = c.type ?? 'inbound';
  await insertCall(tp.sql, {
    id,
    org_id: c.orgId ?? org.orgId,
    agent_id: agentId,
    type,
    direction: type === 'web' ? null : type,
    to_number: type === 'inbound' ? '+14155550100' : null,
    from_number: c.from ?? null,
    room_name: `call-${id}`,
    variables: {},
    metadata: {},
    overrides: {},
    webhook_url: null,
  });
  return id;
}

/** GET /internal/v1/calls/{id}/config, as the worker fetches it at the call's start. */
async function configOf(callId: string) {
  const res = await tp.request('get', `/internal/v1/calls/${callId}/config`, { key: WORKER, headers: { 'x-call-capability': tp.capability(callId) } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { prompt: string; call: { agent_version?: number }; agent: { first_message: string | null } };
}

const auditOf = (agentId: string) =>
  tp.sql<{ action: string; actor_type: string; details: Record<string, unknown> }[]>`
    select action, actor_type, details from audit_events where resource_id = ${agentId} order by created_at, id`;

describe('versions', () => {
  it('records a version per change with its actor and diff, in the list envelope; a change of nothing records none', async () => {
    const { agentId } = await agentWith('Be brief.');
    const p = await api('patch', `/v1/agents/${agentId}`, { first_message: 'Hello!', turn_taking: { min_delay_ms: 700 } });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ version: 2, draft_version: null, first_message: 'Hello!' });
    expect((await api('patch', `/v1/agents/${agentId}`, { first_message: 'Hello!' })).body.version).toBe(2);

    const list = await api('get', `/v1/agents/${agentId}/versions`);
    expect(list.status).toBe(200);
    expect(Object.keys(list.body).sort()).toEqual(['items', 'limit', 'offset', 'total']);
    expect(list.body.total).toBe(2);
    const apiKeyId = (await tp.sql`select id from api_keys where org_id = ${org.orgId} limit 1`)[0]!.id as string;
    expect(list.body.items[0]).toMatchObject({
      version: 2,
      kind: 'update',
      base_version: 1,
      status: 'published',
      actor: { type: 'api_key', id: apiKeyId },
      changes: ['agent.first_message', 'agent.turn_taking.min_delay_ms'],
      snapshot: null,
      diff: null,
    });
    expect(list.body.items[1]).toMatchObject({ version: 1, kind: 'create', base_version: null, status: 'archived', changes: [] });

    const v2 = await api('get', `/v1/agents/${agentId}/versions/2`);
    expect(v2.body.diff).toEqual({
      against: 1,
      changes: [
        { path: 'agent.first_message', op: 'replace', from: null, to: 'Hello!' },
        { path: 'agent.turn_taking.min_delay_ms', op: 'replace', from: 1700, to: 700 },
      ],
    });
    expect(v2.body.snapshot.model).toMatchObject({ system_prompt: 'Be brief.', model: 'gpt-4o-mini' });
    expect(v2.body.effective_system_prompt).toBe('Be brief.');
    // Any two versions compare.
    expect((await api('get', `/v1/agents/${agentId}/versions/1?against=2`)).body.diff.changes[0]).toEqual({ path: 'agent.first_message', op: 'replace', from: 'Hello!', to: null });
  });

  it("another organisation's agent or version is a 404; a missing version too; bad numbers are 422s in the detail shape", async () => {
    const { agentId } = await agentWith('x');
    for (const path of [`/v1/agents/${agentId}/versions`, `/v1/agents/${agentId}/versions/1`, `/v1/agents/${agentId}/rollout`]) {
      const res = await api('get', path, undefined, other.key);
      expect(res.status).toBe(404);
      expect(res.body.type).toBe('not_found');
    }
    expect((await api('post', `/v1/agents/${agentId}/rollback`, { version: 1 }, other.key)).status).toBe(404);
    expect((await api('patch', `/v1/agents/${agentId}/draft`, { first_message: 'x' }, other.key)).status).toBe(404);
    expect((await api('get', `/v1/agents/${agentId}/versions/9`)).status).toBe(404);
    const bad = await api('get', `/v1/agents/${agentId}/versions/0`);
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['path', 'version'], type: expect.any(String) });
    const missing = await api('post', `/v1/agents/${agentId}/rollback`, { version: 7 });
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual({ detail: [{ loc: ['body', 'version'], msg: 'The agent has no version 7', type: 'reference_not_found', input: 7 }] });
    const extra = await api('post', `/v1/agents/${agentId}/publish`, { version: 1, force: true });
    expect(extra.status).toBe(422);
    expect(extra.body.detail[0]).toMatchObject({ loc: ['body', 'force'], type: 'extra_forbidden' });
  });

  it('a draft is not what calls run until it is published; publish and rollback are audited', async () => {
    const { agentId } = await agentWith('Sell apples.');
    const d = await api('patch', `/v1/agents/${agentId}/draft`, { job_description: 'Fruit seller' });
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ version: 2, kind: 'draft', status: 'draft', effective_system_prompt: '# Role\nFruit seller\n\nSell apples.' });
    const d2 = await api('patch', `/v1/agents/${agentId}/draft`, { first_message: 'Hi' });
    expect(d2.body).toMatchObject({ version: 3, base_version: 2, changes: ['agent.first_message'] });
    const agent = await api('get', `/v1/agents/${agentId}`);
    expect(agent.body).toMatchObject({ version: 1, draft_version: 3, job_description: null, effective_system_prompt: 'Sell apples.' });
    expect((await configOf(await newCall(agentId))).prompt).toBe('Sell apples.');

    const pub = await api('post', `/v1/agents/${agentId}/publish`, {});
    expect(pub.status).toBe(200);
    expect(pub.body).toMatchObject({ version: 3, draft_version: null, job_description: 'Fruit seller', first_message: 'Hi' });
    expect((await configOf(await newCall(agentId))).prompt).toBe('# Role\nFruit seller\n\nSell apples.');
    expect((await api('post', `/v1/agents/${agentId}/publish`, {})).status).toBe(409);

    // Version 2 was never published: a rollback to it is refused; version 1 was.
    expect((await api('post', `/v1/agents/${agentId}/rollback`, { version: 2 })).status).toBe(409);
    const back = await api('post', `/v1/agents/${agentId}/rollback`, { version: 1 });
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ version: 1, job_description: null, first_message: null, effective_system_prompt: 'Sell apples.' });
    expect((await auditOf(agentId)).map((a) => [a.action, a.details.version])).toEqual([
      ['agent.create', 1],
      ['agent.draft', 2],
      ['agent.draft', 3],
      ['agent.publish', 3],
      ['agent.rollback', 1],
    ]);
  });

  it("a model's change makes a published version of its agents; a pinned call keeps its version's prompt", async () => {
    const { agentId, modelId } = await agentWith('Old prompt.');
    expect((await api('patch', `/v1/models/${modelId}`, { system_prompt: 'New prompt.' })).status).toBe(200);
    const v2 = await api('get', `/v1/agents/${agentId}/versions/2`);
    expect(v2.body).toMatchObject({ kind: 'dependency', status: 'published', cause: { resource_type: 'llm_model', resource_id: modelId, action: 'llm_model.update' } });
    expect(v2.body.diff.changes).toEqual([{ path: 'model.system_prompt', op: 'replace', from: 'Old prompt.', to: 'New prompt.' }]);
    expect((await configOf(await newCall(agentId))).prompt).toBe('New prompt.');

    // A call pinned to version 1 is handed version 1's prompt: the model as it was.
    const pinned = await newCall(agentId);
    await tp.sql`update calls set agent_version = 1, agent_version_source = 'pinned' where id = ${pinned}`;
    const cfg = await configOf(pinned);
    expect(cfg.prompt).toBe('Old prompt.');
    expect(cfg.call.agent_version).toBe(1);
    const call = await api('get', `/v1/calls/${pinned}`);
    expect(call.body).toMatchObject({ agent_version: 1, agent_version_source: 'pinned' });
  });

  it('a rollback reaches the next call and not a call in progress', async () => {
    const { agentId } = await agentWith('Prompt one.');
    await api('patch', `/v1/agents/${agentId}`, { job_description: 'Two' });
    const live = await newCall(agentId);
    expect((await configOf(live)).prompt).toBe('# Role\nTwo\n\nPrompt one.');
    expect((await api('post', `/v1/agents/${agentId}/rollback`, { version: 1 })).status).toBe(200);
    // The call in progress fetches its config again (a hand-off, a retried fetch): still its version.
    const again = await configOf(live);
    expect(again.prompt).toBe('# Role\nTwo\n\nPrompt one.');
    expect(again.call.agent_version).toBe(2);
    const next = await configOf(await newCall(agentId));
    expect(next.prompt).toBe('Prompt one.');
    expect(next.call.agent_version).toBe(1);
  });

  it('a gated agent refuses PATCH, and its model changes land in the draft', async () => {
    const { agentId, modelId } = await agentWith('Gate me.');
    const sc = await api('post', '/v1/test-scenarios', { name: 's', script: [{ say: 'hi' }], expectations: [{ type: 'transcript_contains', text: 'hi' }] });
    const suite = await api('post', '/v1/test-suites', { name: 'gate', agent_id: agentId, scenario_ids: [sc.body.id] });
    const set = await api('patch', `/v1/agents/${agentId}/rollout`, { test_suite_id: suite.body.id });
    expect(set.body).toMatchObject({ published_version: 1, test_suite_id: suite.body.id, split: null });
    const refused = await api('patch', `/v1/agents/${agentId}`, { first_message: 'x' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ type: 'conflict', test_suite_id: suite.body.id });
    await api('patch', `/v1/models/${modelId}`, { system_prompt: 'Changed.' });
    const rollout = await api('get', `/v1/agents/${agentId}/rollout`);
    expect(rollout.body).toMatchObject({ published_version: 1, draft_version: 2 });
    expect((await configOf(await newCall(agentId))).prompt).toBe('Gate me.');
    // Another agent's suite is no gate; another org's is a 422 too.
    const foreign = await agentWith('y');
    const theirs = await api('post', '/v1/test-suites', { name: 'g', agent_id: foreign.agentId, scenario_ids: [sc.body.id] });
    const wrong = await api('patch', `/v1/agents/${agentId}/rollout`, { test_suite_id: theirs.body.id });
    expect(wrong.status).toBe(422);
    expect(wrong.body.detail[0]).toMatchObject({ loc: ['body', 'test_suite_id'], type: 'value_error' });
  });

  it('pins: a web or outbound request names a version of its agent, a number pins its own agent; others are 422s', async () => {
    const { agentId } = await agentWith('p');
    const web = await api('post', '/v1/calls/web', { agent_id: agentId, agent_version: 5 });
    expect(web.status).toBe(422);
    expect(web.body.detail).toEqual([{ loc: ['body', 'agent_version'], msg: 'The agent has no version 5', type: 'reference_not_found', input: 5 }]);
    const number = (await tp.sql`
      insert into phone_numbers (org_id, phone_number, provider, agent_id) values (${org.orgId}, ${'+1415555' + String(Math.floor(Math.random() * 9000) + 1000)}, 'simulated', ${agentId})
      returning id`)[0]!.id as string;
    const pin = await api('patch', `/v1/phone-numbers/${number}`, { agent_version: 1 });
    expect(pin.status, JSON.stringify(pin.body)).toBe(200);
    expect(pin.body.agent_version).toBe(1);
    const badPin = await api('patch', `/v1/phone-numbers/${number}`, { agent_version: 3 });
    expect(badPin.status).toBe(422);
    expect(badPin.body.detail[0]).toMatchObject({ loc: ['body', 'agent_version'], type: 'reference_not_found' });
    // A new agent without a pin clears the old agent's pin.
    const { agentId: second } = await agentWith('q');
    expect((await api('patch', `/v1/phone-numbers/${number}`, { agent_id: second })).body.agent_version).toBeNull();
  });
});

describe('what a version holds', () => {
  it("a tool's definition is versioned and its change makes a version; its headers and secret are not", async () => {
    const tool = await api('post', '/v1/tools', {
      type: 'function',
      name: 'book',
      description: 'Books a slot',
      url: 'https://tools.example.com/book',
      method: 'POST',
      parameters: { type: 'object', properties: {} },
      headers: { authorization: 'Bearer header-canary-123' },
    });
    expect(tool.status, JSON.stringify(tool.body)).toBe(201);
    const m = await api('post', '/v1/models', { name: 'm', model: 'gpt-4o-mini', system_prompt: 'p', tool_ids: [tool.body.id] });
    const a = await api('post', '/v1/agents', { name: 'Tools', llm_id: m.body.id });
    await api('patch', `/v1/tools/${tool.body.id}`, { url: 'https://tools.example.com/book2', headers: { authorization: 'Bearer header-canary-456' } });
    const v2 = await api('get', `/v1/agents/${a.body.id}/versions/2`);
    expect(v2.body).toMatchObject({ kind: 'dependency', cause: { resource_type: 'tool', action: 'tool.update' } });
    expect(v2.body.diff.changes).toEqual([{ path: 'tools.book.url', op: 'replace', from: 'https://tools.example.com/book', to: 'https://tools.example.com/book2' }]);
    const stored = JSON.stringify((await tp.sql`select snapshot from agent_versions where agent_id = ${a.body.id}`).map((r) => r.snapshot));
    expect(stored).not.toContain('header-canary');
    // A header-only change makes no version: the call takes the tool's current headers.
    await api('patch', `/v1/tools/${tool.body.id}`, { headers: { authorization: 'Bearer header-canary-789' } });
    expect((await api('get', `/v1/agents/${a.body.id}/versions`)).body.total).toBe(2);
    const pinned = await newCall(a.body.id);
    await tp.sql`update calls set agent_version = 1, agent_version_source = 'pinned' where id = ${pinned}`;
    const cfg = (await configOf(pinned)) as unknown as { tools: { url: string; headers: Record<string, string> }[] };
    expect(cfg.tools[0]).toMatchObject({ url: 'https://tools.example.com/book', headers: { authorization: 'Bearer header-canary-789' } });
  });
});

describe('comparison in the activity summary', () => {
  it('compares versions with sample sizes and says which differences are within noise', async () => {
    const { agentId } = await agentWith('Compare.');
    await api('patch', `/v1/agents/${agentId}`, { first_message: 'B' });
    // Version 1: 100 ended calls, 30 transferred; version 2 (published): 100, 60 transferred. Durations alike.
    for (const [version, transferred] of [
      [1, 30],
      [2, 60],
    ] as const) {
      for (let i = 0; i < 100; i++) {
        const id = await newCall(agentId);
        const e2e = 800 + ((i * 37) % 200);
        await tp.sql`
          update calls set agent_version = ${version}, agent_version_source = 'published', status = 'completed',
            end_reason = ${i < transferred ? 'transferred' : 'user_hangup'}, outcome = ${i % 2 ? 'booked' : 'not_booked'},
            duration_seconds = ${60 + (i % 30)}, latency = ${tp.sql.json({ e2e: { p50_ms: e2e, avg_ms: e2e, min_ms: e2e, max_ms: e2e, samples: 3 } })}
          where id = ${id}`;
      }
    }
    const res = await api('get', `/v1/activity/summary?agent_id=${agentId}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const cmp = res.body.version_comparison;
    expect(cmp.baseline_version).toBe(2);
    expect(cmp.versions.map((v: { version: number; calls: number }) => [v.version, v.calls])).toEqual([
      [2, 100],
      [1, 100],
    ]);
    const v1 = cmp.versions[1];
    expect(v1.transferred).toMatchObject({ count: 30, samples: 100, rate: 0.3 });
    expect(v1.transferred.ci95[0]).toBeLessThan(0.3);
    const metric = (name: string) => v1.against_baseline.find((m: { metric: string }) => m.metric === name);
    expect(metric('transferred')).toMatchObject({ test: 'two_proportion_z', baseline: 0.6, value: 0.3, verdict: 'significant' });
    expect(metric('duration_seconds')).toMatchObject({ test: 'mann_whitney_u', verdict: 'within_noise' });
    expect(metric('outcome:booked')).toMatchObject({ verdict: 'within_noise' });
    expect(metric('tests')).toMatchObject({ verdict: 'insufficient_data' });
    expect(cmp.versions[0].against_baseline).toEqual([]);
    expect(cmp.versions[0].latency_e2e_ms.samples).toBe(100);

    const theirs = await api('get', `/v1/activity/summary?agent_id=${agentId}`, undefined, other.key);
    expect(theirs.status).toBe(404);
  });
});
