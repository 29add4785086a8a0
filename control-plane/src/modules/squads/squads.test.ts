// Squads: CRUD with the exact 422 bodies of the squad rules (members of the organisation, entry agent and
// hand-offs inside the squad, no self hand-off, no repeated pair; cycles allowed), tenancy, audit, the agent
// delete guard; calls started on a squad (web and outbound; exactly one of agent_id and squad_id), the squad in
// the worker's config, and the hand-off report: the call's record, the call.handoff event, the max_handoffs bound.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const NO_LATENCY = Object.fromEntries(['llm_ttft', 'tts_ttfb', 'eou_delay', 'e2e'].map((k) => [k, { avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 }]));

let tp: TestPlatform;
let org: { orgId: string; key: string };
let other: { orgId: string; key: string };
let front: string;
let billing: string;
let sales: string;
let foreign: string;

async function agent(o: { key: string }, name: string, extra: Record<string, unknown> = {}): Promise<string> {
  const model = await tp.request('post', '/v1/models', {
    key: o.key,
    body: { name: `${name} model`, model: 'gpt-4o-mini', system_prompt: `You are ${name}. Help {{customer}}.` },
  });
  expect(model.status).toBe(201);
  const res = await tp.request('post', '/v1/agents', {
    key: o.key,
    body: { name, llm_id: model.body.id, transcriber: { provider: 'local' }, tts: { provider: 'local' }, ...extra },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

const create = (body: Record<string, unknown>, key = org.key) => tp.request('post', '/v1/squads', { key, body });
const internal = (method: string, path: string, body?: unknown) => {
  const callId = /^\/calls\/([^/]+)\//.exec(path)?.[1];
  return tp.request(method, `/internal/v1${path}`, {
    key: WORKER,
    headers: callId ? { 'x-call-capability': tp.capability(callId) } : {},
    ...(body !== undefined ? { body } : {}),
  });
};
const handoff = (from: string, to: string, extra: Record<string, unknown> = {}) => ({
  from_agent_id: from,
  to_agent_id: to,
  description: `Go to ${to}`,
  ...extra,
});

beforeAll(async () => {
  tp = await usePlatform();
  org = await tp.createOrg('squads');
  other = await tp.createOrg('squads-other');
  front = await agent(org, 'Front desk', { first_message: 'Hello {{customer}}.' });
  billing = await agent(org, 'Billing', { first_message: 'Billing here.', dynamic_variables: { customer: 'friend' } });
  sales = await agent(org, 'Sales');
  foreign = await agent(other, 'Foreign');
});

describe('/v1/squads', () => {
  it('creates with defaults, reads, lists, updates and deletes, with audit events', async () => {
    const res = await create({
      name: 'Desk',
      agent_ids: [front, billing],
      entry_agent_id: front,
      handoffs: [handoff(front, billing), handoff(billing, front, { context: 'summary' })],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Desk',
      agent_ids: [front, billing],
      entry_agent_id: front,
      // A cycle (front -> billing -> front) is allowed; the context defaults to full.
      handoffs: [
        { from_agent_id: front, to_agent_id: billing, description: `Go to ${billing}`, context: 'full' },
        { from_agent_id: billing, to_agent_id: front, description: `Go to ${front}`, context: 'summary' },
      ],
      max_handoffs: 10,
      metadata: {},
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const id = res.body.id as string;
    expect((await tp.request('get', `/v1/squads/${id}`, { key: org.key })).body).toEqual(res.body);
    const list = await tp.request('get', '/v1/squads?limit=100', { key: org.key });
    expect(list.body.items.map((s: { id: string }) => s.id)).toContain(id);
    expect(list.body.total).toBe(list.body.items.length);

    const patched = await tp.request('patch', `/v1/squads/${id}`, {
      key: org.key,
      body: { max_handoffs: 3, agent_ids: [front, billing, sales], handoffs: [handoff(front, sales)] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      max_handoffs: 3,
      agent_ids: [front, billing, sales],
      handoffs: [{ to_agent_id: sales, context: 'full' }],
      name: 'Desk',
    });

    expect((await tp.request('delete', `/v1/squads/${id}`, { key: org.key })).status).toBe(204);
    expect((await tp.request('get', `/v1/squads/${id}`, { key: org.key })).status).toBe(404);
    const audit = await tp.sql<{ action: string }[]>`select action from audit_events where resource_id = ${id} order by created_at, id`;
    expect(audit.map((a) => a.action)).toEqual(['squad.create', 'squad.update', 'squad.delete']);
  });

  it("refuses unknown and other organisations' agents, an entry or hand-off outside the squad, a self hand-off and a repeated pair (422 detail)", async () => {
    const unknown = randomUUID();
    const refs = await create({ name: 'x', agent_ids: [front, unknown, foreign], entry_agent_id: front });
    expect(refs.status).toBe(422);
    expect(refs.body.detail).toEqual([
      { loc: ['body', 'agent_ids', 1], msg: 'No agent with this id in your organisation', type: 'reference_not_found', input: unknown },
      { loc: ['body', 'agent_ids', 2], msg: 'No agent with this id in your organisation', type: 'reference_not_found', input: foreign },
    ]);
    const rules = await create({
      name: 'x',
      agent_ids: [front, billing],
      entry_agent_id: sales,
      handoffs: [handoff(front, sales), handoff(billing, billing), handoff(front, billing), handoff(front, billing)],
    });
    expect(rules.status).toBe(422);
    expect(rules.body.detail).toEqual([
      { loc: ['body', 'entry_agent_id'], msg: 'The entry agent must be one of agent_ids', type: 'value_error', input: sales },
      { loc: ['body', 'handoffs', 0, 'to_agent_id'], msg: 'A hand-off must be between members of the squad (agent_ids)', type: 'value_error', input: sales },
      { loc: ['body', 'handoffs', 1, 'to_agent_id'], msg: 'An agent cannot hand a call to itself', type: 'value_error', input: billing },
      {
        loc: ['body', 'handoffs', 3],
        msg: 'This hand-off (from, to) is listed twice',
        type: 'value_error',
        input: { from_agent_id: front, to_agent_id: billing },
      },
    ]);
    // The schema's own rules: required fields, bounds, unknown fields, a bad context.
    const schema = await create({
      name: 'x',
      agent_ids: [],
      entry_agent_id: front,
      max_handoffs: 0,
      extra: 1,
      handoffs: [handoff(front, billing, { context: 'all' })],
    });
    expect(schema.status).toBe(422);
    const locs = schema.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
    expect(locs).toEqual(expect.arrayContaining(['body.agent_ids', 'body.max_handoffs', 'body.extra', 'body.handoffs.0.context']));
    // An update is checked as a whole: dropping a member that a hand-off names.
    const ok = await create({ name: 'y', agent_ids: [front, billing], entry_agent_id: front, handoffs: [handoff(front, billing)] });
    const bad = await tp.request('patch', `/v1/squads/${ok.body.id}`, { key: org.key, body: { agent_ids: [front] } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([
      { loc: ['body', 'handoffs', 0, 'to_agent_id'], msg: 'A hand-off must be between members of the squad (agent_ids)', type: 'value_error', input: billing },
    ]);
  });

  it("keeps organisations apart: another organisation's squad is a 404 everywhere, and absent from its list", async () => {
    const mine = await create({ name: 'mine', agent_ids: [front], entry_agent_id: front });
    const id = mine.body.id as string;
    for (const [method, body] of [['get'], ['patch', { name: 'stolen' }], ['delete']] as const) {
      const res = await tp.request(method, `/v1/squads/${id}`, { key: other.key, ...(body ? { body } : {}) });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ type: 'not_found' });
    }
    expect((await tp.request('get', '/v1/squads', { key: other.key })).body.items).toEqual([]);
    expect((await tp.request('get', `/v1/squads/${id}`, { key: org.key })).body.name).toBe('mine');
    // Nor can a call start on it.
    const refused = await tp.request('post', '/v1/calls/web', { key: other.key, body: { squad_id: id } });
    expect(refused.status).toBe(422);
    expect(refused.body.detail[0]).toMatchObject({ type: 'reference_not_found', loc: ['body', 'squad_id'] });
  });

  it('an agent in a squad cannot be deleted (409 naming the squads)', async () => {
    const lone = await agent(org, 'Lone');
    const s = await create({ name: 'holds lone', agent_ids: [lone], entry_agent_id: lone });
    const res = await tp.request('delete', `/v1/agents/${lone}`, { key: org.key });
    expect(res.status).toBe(409);
    expect(res.body.squads).toEqual([{ id: s.body.id, name: 'holds lone' }]);
    await tp.request('delete', `/v1/squads/${s.body.id}`, { key: org.key });
    expect((await tp.request('delete', `/v1/agents/${lone}`, { key: org.key })).status).toBe(204);
  });
});

describe('calls on a squad', () => {
  it('takes exactly one of agent_id and squad_id', async () => {
    const s = await create({ name: 'one of', agent_ids: [front], entry_agent_id: front });
    const both = await tp.request('post', '/v1/calls/web', { key: org.key, body: { agent_id: front, squad_id: s.body.id } });
    expect(both.status).toBe(422);
    expect(both.body.detail).toEqual([{ loc: ['body', 'squad_id'], msg: 'Give agent_id or squad_id, not both', type: 'value_error', input: s.body.id }]);
    const neither = await tp.request('post', '/v1/calls/web', { key: org.key, body: {} });
    expect(neither.status).toBe(422);
    expect(neither.body.detail).toEqual([{ loc: ['body', 'agent_id'], msg: 'Give agent_id or squad_id', type: 'missing', input: null }]);
    const outbound = await tp.request('post', '/v1/calls', { key: org.key, body: { squad_id: randomUUID(), to_number: '+14155550123' } });
    expect(outbound.status).toBe(422);
    expect(outbound.body.detail[0]).toMatchObject({ loc: ['body', 'squad_id'], type: 'reference_not_found' });
  });

  it("starts a web call on the squad's entry agent; the worker's config carries every other member; hand-offs are recorded and emitted, bounded by max_handoffs", async () => {
    const s = await create({
      name: 'desk',
      agent_ids: [front, billing],
      entry_agent_id: front,
      max_handoffs: 2,
      handoffs: [handoff(front, billing, { context: 'summary' }), handoff(billing, front)],
    });
    // This platform has no LiveKit server: the start answers 503 after the call's row is written (then failed).
    const res = await tp.request('post', '/v1/calls/web', { key: org.key, body: { squad_id: s.body.id, variables: { customer: 'Ada' } } });
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    const started = (await tp.request('get', `/v1/calls/${res.body.call_id}`, { key: org.key })).body;
    expect(started).toMatchObject({ agent_id: front, squad_id: s.body.id });
    // The same call as a live one (the room and dispatch are the web-call e2e's): the worker's view of it.
    const callId = randomUUID();
    await tp.sql`insert into calls (id, org_id, agent_id, type, status, variables, metadata, overrides, squad_id, room_name)
                 values (${callId}, ${org.orgId}, ${front}, 'web', 'initiated', ${tp.sql.json({ customer: 'Ada' })}, '{}'::jsonb, '{}'::jsonb, ${s.body.id}, ${'call-' + callId})`;

    const cfg = await internal('get', `/calls/${callId}/config`);
    expect(cfg.status).toBe(200);
    expect(cfg.body.agent.id).toBe(front);
    expect(cfg.body.squad).toMatchObject({ id: s.body.id, max_handoffs: 2, handoffs: s.body.handoffs });
    expect(cfg.body.squad.members).toHaveLength(1);
    const m = cfg.body.squad.members[0];
    expect(m.agent).toMatchObject({ id: billing, name: 'Billing', first_message: 'Billing here.', tts: { provider: 'local' } });
    // The member's prompt has the call's variables (over the member's own dynamic_variables).
    expect(m.prompt).toBe('You are Billing. Help Ada.');
    expect(m.llm).toMatchObject({ model: 'gpt-4o-mini' });
    expect(m.knowledge).toMatchObject({ knowledge_base_ids: [] });

    expect((await internal('post', `/calls/${callId}/started`, { seq: 1, started_at: new Date().toISOString() })).status).toBe(200);
    const at = new Date().toISOString();
    const first = await internal('post', `/calls/${callId}/handoff`, {
      seq: 2,
      from_agent_id: front,
      to_agent_id: billing,
      reason: 'invoice',
      context: 'summary',
      at,
    });
    expect(first.body).toEqual({ ok: true, duplicate: false });
    expect(
      (await internal('post', `/calls/${callId}/handoff`, { seq: 2, from_agent_id: front, to_agent_id: billing, reason: 'invoice', context: 'summary', at }))
        .body,
    ).toEqual({ ok: true, duplicate: true });
    // Only members of the call's squad.
    const outsider = await internal('post', `/calls/${callId}/handoff`, {
      seq: 3,
      from_agent_id: billing,
      to_agent_id: sales,
      reason: null,
      context: 'full',
      at,
    });
    expect(outsider.status).toBe(422);
    expect(
      (await internal('post', `/calls/${callId}/handoff`, { seq: 4, from_agent_id: billing, to_agent_id: front, reason: null, context: 'full', at })).status,
    ).toBe(200);
    // max_handoffs (2) reached: the control plane refuses a third whatever the worker does.
    expect(
      (await internal('post', `/calls/${callId}/handoff`, { seq: 5, from_agent_id: front, to_agent_id: billing, reason: null, context: 'summary', at })).status,
    ).toBe(409);

    const events = await tp.sql<
      { type: string; payload: Record<string, unknown> }[]
    >`select type, payload from events where call_id = ${callId} and type = 'call.handoff' order by seq`;
    expect(events.map((e) => e.payload)).toEqual([
      expect.objectContaining({
        event: 'call.handoff',
        call_id: callId,
        agent_id: front,
        squad_id: s.body.id,
        from_agent_id: front,
        to_agent_id: billing,
        reason: 'invoice',
        context: 'summary',
        index: 1,
        at,
      }),
      expect.objectContaining({ from_agent_id: billing, to_agent_id: front, reason: null, context: 'full', index: 2 }),
    ]);

    const latency = { ...NO_LATENCY, llm_ttft: { avg_ms: 300, p50_ms: 300, min_ms: 300, max_ms: 300, samples: 1 } };
    const ended = await internal('post', `/calls/${callId}/ended`, {
      seq: 6,
      end_reason: 'user_hangup',
      ended_at: new Date().toISOString(),
      duration_seconds: 12,
      messages: [
        { role: 'agent', content: 'Hello Ada.', agent_id: front },
        { role: 'user', content: 'My invoice is wrong.' },
        { role: 'agent', content: 'Billing here.', agent_id: billing },
      ],
      usage: { stt_seconds: 1, llm_prompt_tokens: 1, llm_completion_tokens: 1, tts_characters: 1 },
      latency: NO_LATENCY,
      agent_latency: { [front]: NO_LATENCY, [billing]: latency },
    });
    expect(ended.status, JSON.stringify(ended.body)).toBe(200);
    const call = (await tp.request('get', `/v1/calls/${callId}`, { key: org.key })).body;
    expect(call).toMatchObject({ agent_id: front, squad_id: s.body.id, status: 'completed' });
    expect(call.handoffs).toEqual([
      { from_agent_id: front, to_agent_id: billing, reason: 'invoice', context: 'summary', at },
      { from_agent_id: billing, to_agent_id: front, reason: null, context: 'full', at },
    ]);
    expect(call.messages.map((x: { agent_id?: string }) => x.agent_id ?? null)).toEqual([front, null, billing]);
    expect(call.agent_latency[billing].llm_ttft.samples).toBe(1);
    const audit = await tp.sql<
      { details: Record<string, unknown> }[]
    >`select details from audit_events where resource_id = ${started.id} and action = 'call.create'`;
    expect(audit[0]!.details).toMatchObject({ agent_id: front, squad_id: s.body.id });
  });

  it("a single agent's call has no squad, no hand-offs and no per-agent latency; its hand-off reports are refused", async () => {
    const callId = randomUUID();
    await tp.sql`insert into calls (id, org_id, agent_id, type, status, variables, metadata, overrides, room_name)
                 values (${callId}, ${org.orgId}, ${sales}, 'web', 'initiated', '{}'::jsonb, '{}'::jsonb, '{}'::jsonb, ${'call-' + callId})`;
    const call = (await tp.request('get', `/v1/calls/${callId}`, { key: org.key })).body;
    expect(call).toMatchObject({ squad_id: null, handoffs: [], agent_latency: null });
    expect((await internal('get', `/calls/${callId}/config`)).body.squad).toBeUndefined();
    await internal('post', `/calls/${callId}/started`, { seq: 1, started_at: new Date().toISOString() });
    const r = await internal('post', `/calls/${callId}/handoff`, {
      seq: 2,
      from_agent_id: sales,
      to_agent_id: front,
      reason: null,
      context: 'full',
      at: new Date().toISOString(),
    });
    expect(r.status).toBe(409);
  });
});
