// What a client written from the spec (service-interface.md) or generated from /openapi.json reads back (issue 51,
// sections 2 and 3): one rule for unknown query parameters on every list; agent tests' calls kept out of the
// organisation's calls; the events as the document's `webhooks` describe them, null outcome and summary included;
// the inbound-routing reference naming the fallback for calls no agent took.
import { beforeAll, describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { allRoutes } from '../control-plane/src/app.ts';
import { usePlatform, type TestPlatform } from './support/platform.ts';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (a: Ajv2020) => Ajv2020;
const WORKER = 'test-worker-token-0123456789abcdef0123';
const USAGE = { stt_seconds: 1, llm_prompt_tokens: 1, llm_completion_tokens: 1, tts_characters: 1 };
const MESSAGES = [
  { role: 'agent', content: 'Bright Smiles dental, how can I help?' },
  { role: 'user', content: 'A cleaning next Tuesday, please.' },
  { role: 'agent', content: 'Booked for Tuesday at 10.' },
];
const ZERO_UUID = '00000000-0000-4000-8000-000000000000';
/** An ended report's latency for a call without turns. */
const NO_LATENCY = Object.fromEntries(['llm_ttft', 'tts_ttfb', 'eou_delay', 'e2e'].map((k) => [k, { avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 }]));

let tp: TestPlatform;
let doc: any;
let org: { orgId: string; key: string };
let agentId: string;

beforeAll(async () => {
  // Extractive analysis (no model) and no wait: call.ended goes out before the analysis, as on a slow one.
  tp = await usePlatform({ ANALYSIS_MODE: 'extractive', CALL_ENDED_ANALYSIS_WAIT_SECONDS: 0 } as never);
  doc = (await tp.request('get', '/openapi.json')).body;
  org = await tp.createOrg('spec client');
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'gpt-4o-mini' } });
  const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Ava', llm_id: model.body.id } });
  expect(agent.status).toBe(201);
  agentId = agent.body.id;
});

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, tries = 600): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not reached`);
}

describe('unknown query parameters', () => {
  it('are a 422 extra_forbidden on every list, knowledge bases and webhooks included', async () => {
    const lists = allRoutes().filter((r) => !r.internal && r.method === 'get' && (r.query as any)?.properties?.limit);
    expect(lists.length).toBeGreaterThan(20);
    const paths = lists.map((r) => (r.root ? r.path : `/v1${r.path}`).replace(/:[A-Za-z0-9_]+/g, ZERO_UUID));
    expect(paths).toEqual(expect.arrayContaining(['/v1/knowledge-bases', '/v1/webhooks', '/v1/calls', '/v1/publishable-keys', '/v1/phone-numbers/search']));
    for (const path of paths) {
      const res = await tp.request('get', `${path}?colour=red`, { key: org.key });
      expect(res.status, path).toBe(422);
      expect(res.body.detail, path).toContainEqual({ type: 'extra_forbidden', loc: ['query', 'colour'], msg: 'Extra inputs are not permitted', input: 'red' });
    }
    // Every list's query schema says so, so a new list cannot quietly differ.
    for (const r of lists) expect((r.query as any).additionalProperties, r.operationId).toBe(false);
  });
});

describe("agent tests' calls", () => {
  it('are not calls of the organisation: out of GET /v1/calls, its total and filters, and the activity summary, as from usage and events', async () => {
    const o = await tp.createOrg('tests apart');
    const model = await tp.request('post', '/v1/models', { key: o.key, body: { name: 'm', model: 'gpt-4o-mini' } });
    const agent = (await tp.request('post', '/v1/agents', { key: o.key, body: { name: 'Ava', llm_id: model.body.id } })).body.id as string;
    const [run] = await tp.sql`insert into agent_test_runs (org_id, agent_id, mode, total) values (${o.orgId}, ${agent}, 'voice', 1) returning id`;
    const [real] = await tp.sql`insert into calls (org_id, agent_id, type, status, outcome) values (${o.orgId}, ${agent}, 'web', 'completed', 'booked') returning id`;
    const [test] = await tp.sql`
      insert into calls (org_id, agent_id, type, status, outcome, test_run_id) values (${o.orgId}, ${agent}, 'web', 'completed', 'booked', ${run!.id}) returning id`;
    const ids = async (q: string) => {
      const res = await tp.request('get', `/v1/calls${q}`, { key: o.key });
      expect(res.status, q).toBe(200);
      return { ids: res.body.items.map((c: { id: string }) => c.id), total: res.body.total };
    };
    for (const q of ['', `?agent_id=${agent}`, '?status=completed', '?type=web', '?outcome=booked', '?created_after=2000-01-01T00:00:00Z']) {
      expect(await ids(q), q).toEqual({ ids: [real!.id], total: 1 });
    }
    const summary = (await tp.request('get', '/v1/activity/summary', { key: o.key })).body;
    expect(summary.resource_counts.calls).toBe(1);
    expect(summary.call_summary.total).toBe(1);
    expect((await tp.request('get', '/v1/usage', { key: o.key })).body.calls_this_month).toBe(1);
    // The test's own record stays readable by id (its run's results link to it).
    expect((await tp.request('get', `/v1/calls/${test!.id}`, { key: o.key })).status).toBe(200);
  });
});

describe('events as the document describes them', () => {
  /** Validators for the document's `webhooks`, with its components. */
  function eventValidators() {
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    const base = 'https://schemas.vap.test/';
    const rewrite = (v: unknown): object => JSON.parse(JSON.stringify(v).replaceAll('"#/components/schemas/', `"${base}`));
    for (const [name, schema] of Object.entries(doc.components.schemas)) ajv.addSchema(rewrite(schema), base + name);
    const out: Record<string, (v: unknown) => string[]> = {};
    for (const [name, item] of Object.entries(doc.webhooks) as [string, any][]) {
      const validate = ajv.compile(rewrite(item.post.requestBody.content['application/json'].schema));
      out[name] = (v) => (validate(v) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`));
    }
    return out;
  }

  const report = (id: string, path: string, body: unknown) =>
    tp.request('post', `/internal/v1/calls/${id}/${path}`, { key: WORKER, headers: { 'x-call-capability': tp.capability(id) }, body });

  it('match the webhooks section: null outcome and summary are declared, and analysis.status and method say why', { timeout: 180_000 }, async () => {
    const validators = eventValidators();
    expect(Object.keys(validators)).toEqual(expect.arrayContaining(['call.started', 'call.ended', 'call.analyzed', 'call.failed', 'transcript.final']));
    // The spec's table types these as strings; the document declares them nullable.
    const ended = doc.components.schemas.CallEndedEvent;
    for (const f of ['outcome', 'ai_summary', 'to_number', 'from_number']) expect(ended.properties[f].type, f).toEqual(['string', 'null']);

    // A web call (no numbers) with a conversation: extractive analysis, so a summary and no outcome label.
    const [talk] = await tp.sql`insert into calls (org_id, agent_id, type, status) values (${org.orgId}, ${agentId}, 'web', 'initiated') returning id`;
    const id = talk!.id as string;
    expect((await report(id, 'started', { seq: 1, started_at: new Date().toISOString() })).status).toBe(200);
    const endedAt = new Date().toISOString();
    expect((await report(id, 'ended', { seq: 2, end_reason: 'user_hangup', ended_at: endedAt, duration_seconds: 30, messages: MESSAGES, usage: USAGE, latency: NO_LATENCY })).status).toBe(200);
    // A call that keeps no content (the agent's data_retention): no analysis, as with ANALYSIS_MODE=off.
    const [quiet] = await tp.sql`
      insert into agents (org_id, name, llm_id, transcriber, tts, data_retention)
      select org_id, 'Quiet', llm_id, transcriber, tts, 'no_content' from agents where id = ${agentId} returning id`;
    const [silent] = await tp.sql`insert into calls (org_id, agent_id, type, status) values (${org.orgId}, ${quiet!.id}, 'web', 'initiated') returning id`;
    await report(silent!.id, 'started', { seq: 1, started_at: new Date().toISOString() });
    await report(silent!.id, 'ended', { seq: 2, end_reason: 'silence_timeout', ended_at: new Date().toISOString(), duration_seconds: 5, messages: [], usage: USAGE, latency: NO_LATENCY });

    const events = await until('call.analyzed of the talk', async () => {
      const rows = await tp.sql<{ call_id: string; type: string; payload: Record<string, any> }[]>`
        select call_id, type, payload from events where call_id in (${id}, ${silent!.id}) order by seq`;
      return rows.some((r) => r.call_id === id && r.type === 'call.analyzed') && rows.some((r) => r.call_id === silent!.id && r.type === 'call.ended') ? rows : null;
    });
    for (const e of events) expect(validators[e.type]!(e.payload), `${e.type} ${JSON.stringify(e.payload)}`).toEqual([]);

    const of = (call: string, type: string) => events.find((e) => e.call_id === call && e.type === type)!.payload;
    // Slow analysis: call.ended went out first, saying the analysis is not done; call.analyzed brings the summary.
    expect(of(id, 'call.ended')).toMatchObject({ to_number: null, from_number: null, outcome: null, ai_summary: null });
    expect(['pending', 'running']).toContain(of(id, 'call.ended').analysis.status);
    expect(of(id, 'call.analyzed')).toMatchObject({ outcome: null, ai_summary: expect.any(String), analysis: { status: 'completed', method: 'extractive', outcome: null } });
    // No analysis: call.ended (no wait here) may go before the job decides; the call then reads skipped, not a label.
    expect(of(silent!.id, 'call.ended')).toMatchObject({ outcome: null, ai_summary: null, analysis: { outcome: null, summary: null } });
    expect(['pending', 'running', 'skipped']).toContain(of(silent!.id, 'call.ended').analysis.status);
    await until('the silent call analysed', async () => (await tp.request('get', `/v1/calls/${silent!.id}`, { key: org.key })).body.analysis.status === 'skipped');
    // The Call resource agrees with the events.
    const call = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
    expect(call).toMatchObject({ outcome: null, ai_summary: of(id, 'call.analyzed').ai_summary, analysis: { status: 'completed', method: 'extractive' } });
  });

  it('a failed call: call.failed with null numbers on a web call, as declared', async () => {
    const validators = eventValidators();
    const [row] = await tp.sql`insert into calls (org_id, agent_id, type, status) values (${org.orgId}, ${agentId}, 'web', 'initiated') returning id`;
    const res = await report(row!.id, 'failed', {
      seq: 1,
      end_reason: 'configuration_error',
      error: { code: 'invalid_configuration', message: 'The agent has no voice', field: 'tts.provider' },
    });
    expect(res.status).toBeLessThan(300);
    const [e] = await tp.sql<{ payload: Record<string, unknown> }[]>`select payload from events where call_id = ${row!.id} and type = 'call.failed'`;
    expect(e).toBeDefined();
    expect(validators['call.failed']!(e!.payload)).toEqual([]);
  });
});

describe('the inbound-routing reference', () => {
  it('names the fallback for calls no agent took, in the operation and in the fallback object', () => {
    const op = doc.paths['/v1/phone-numbers/{phone_number_id}/inbound-routing'].patch;
    expect(op.description).toMatch(/no agent takes the call/);
    expect(op.description).toContain('INBOUND_ANSWER_WAIT_SECONDS');
    expect(op.description).toContain('agent_unavailable');
    expect(doc.components.schemas.InboundFallback.description).toMatch(/no agent takes the call/);
  });
});

describe('the document states what the server answers', () => {
  it('latency is nullable (not yet measured) and the exactly-one-of target is a oneOf on web calls, outbound calls and purchase', () => {
    const call = doc.components.schemas.Call;
    expect(call.properties.latency.anyOf).toEqual([{ $ref: '#/components/schemas/CallLatencySummary' }, { type: 'null' }]);
    for (const name of ['CreateWebCall', 'CreateCall', 'PurchasePhoneNumber', 'InboundFallback']) {
      expect(doc.components.schemas[name].oneOf.map((b: { required: string[] }) => b.required), name).toEqual([['agent_id'], ['squad_id']]);
    }
  });
});
