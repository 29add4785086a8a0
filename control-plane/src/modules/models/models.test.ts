// LLM models: provider inference, exact 422 bodies, links to tools and knowledge bases, tenancy, audit, delete rules.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';

let tp: TestPlatform;
let key: string;
let orgId: string;
let other: { orgId: string; key: string };

beforeAll(async () => {
  tp = await usePlatform();
  ({ key, orgId } = await tp.createOrg('models'));
  other = await tp.createOrg('other');
});

const create = (body: Record<string, unknown>, k = key) => tp.request('post', '/v1/models', { key: k, body });
const auditOf = (resourceId: string) =>
  tp.sql<{ action: string; details: Record<string, unknown> }[]>`
    select action, details from audit_events where resource_id = ${resourceId} order by created_at, id`;
const tool = async (name: string, k = key) => (await tp.request('post', '/v1/tools', { key: k, body: { type: 'function', name, url: 'https://example.com/t' } })).body.id as string;
const kb = async (org: string) => (await tp.sql<{ id: string }[]>`insert into knowledge_bases (org_id, name) values (${org}, 'kb') returning id`)[0]!.id;

describe('POST /v1/models', () => {
  it('creates a model with defaults and answers 201 with the full record', async () => {
    const res = await create({ name: 'Support GPT', model: 'gpt-4o-mini', system_prompt: 'Be brief.' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Support GPT',
      provider: 'openai',
      model: 'gpt-4o-mini',
      base_url: null,
      system_prompt: 'Be brief.',
      temperature: 0.7,
      max_tokens: null,
      tool_ids: [],
      knowledge_base_ids: [],
      realtime: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      // This platform has no OpenAI key and the organisation none either: saved, with the reason calls would fail.
      warnings: [{ code: 'provider_key_missing', field: 'provider', message: expect.stringContaining('OPENAI_API_KEY') }],
    });
    expect(await auditOf(res.body.id)).toEqual([{ action: 'llm_model.create', details: { name: 'Support GPT', provider: 'openai', model: 'gpt-4o-mini' } }]);
  });

  it.each([
    ['gpt-4.1', 'openai'],
    ['chatgpt-4o-latest', 'openai'],
    ['o1', 'openai'],
    ['o3-mini', 'openai'],
    ['o4-mini', 'openai'],
    ['gemini-2.5-flash', 'gemini'],
    ['claude-sonnet-4-5', 'anthropic'],
  ])('infers the provider of %s', async (model, provider) => {
    const res = await create({ name: 'm', model });
    expect(res.status).toBe(201);
    expect(res.body.provider).toBe(provider);
  });

  it('accepts an explicit provider for a model id of unknown family', async () => {
    const res = await create({ name: 'm', model: 'gemma-3-27b-it', provider: 'gemini', temperature: 0.2, max_tokens: 400 });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ provider: 'gemini', model: 'gemma-3-27b-it', temperature: 0.2, max_tokens: 400 });
  });

  it('records a self-hosted OpenAI-compatible server as provider openai with its base_url', async () => {
    const res = await create({ name: 'Local Llama', model: 'llama3.1:8b', base_url: 'http://127.0.0.1:11434/v1' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ provider: 'openai', model: 'llama3.1:8b', base_url: 'http://127.0.0.1:11434/v1' });
  });

  it('422: missing name and model', async () => {
    const res = await create({});
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: {} },
        { type: 'missing', loc: ['body', 'model'], msg: 'Field required', input: {} },
      ],
    });
  });

  it('422: unknown model family without provider or base_url', async () => {
    const res = await create({ name: 'm', model: 'mistral-large' });
    expect(res.body).toEqual({
      detail: [
        {
          type: 'value_error',
          loc: ['body', 'model'],
          msg: "Cannot infer the provider of this model id; set 'provider', or 'base_url' for an OpenAI-compatible server",
          input: 'mistral-large',
        },
      ],
    });
  });

  it('422: provider contradicting the model family', async () => {
    const res = await create({ name: 'm', model: 'claude-sonnet-4-5', provider: 'openai' });
    expect(res.body).toEqual({
      detail: [{ type: 'value_error', loc: ['body', 'model'], msg: "Model 'claude-sonnet-4-5' belongs to provider 'anthropic', not 'openai'", input: 'claude-sonnet-4-5' }],
    });
  });

  it('422: base_url with a provider other than openai', async () => {
    const res = await create({ name: 'm', model: 'x', provider: 'anthropic', base_url: 'http://127.0.0.1:8000/v1' });
    expect(res.body).toEqual({
      detail: [
        { type: 'value_error', loc: ['body', 'base_url'], msg: "base_url is for OpenAI-compatible servers and requires provider 'openai'", input: 'http://127.0.0.1:8000/v1' },
      ],
    });
  });

  it('422: base_url that is not an http URL', async () => {
    const res = await create({ name: 'm', model: 'x', base_url: 'ftp://host/v1' });
    expect(res.body).toEqual({
      detail: [{ type: 'url_parsing', loc: ['body', 'base_url'], msg: 'Input should be a valid http or https URL', input: 'ftp://host/v1' }],
    });
  });

  it('422: temperature out of range, and above 1 for anthropic', async () => {
    expect((await create({ name: 'm', model: 'gpt-4o', temperature: 2.5 })).body).toEqual({
      detail: [{ type: 'less_than_equal', loc: ['body', 'temperature'], msg: 'Input should be less than or equal to 2', input: 2.5, ctx: { le: 2 } }],
    });
    expect((await create({ name: 'm', model: 'claude-haiku-4-5', temperature: 1.5 })).body).toEqual({
      detail: [{ type: 'less_than_equal', loc: ['body', 'temperature'], msg: 'Input should be less than or equal to 1 for anthropic models', input: 1.5, ctx: { le: 1 } }],
    });
  });

  it('422: max_tokens below 1, unknown provider, extra field', async () => {
    const res = await create({ name: 'm', model: 'gpt-4o', max_tokens: 0, provider: 'mistral', top_k: 3 });
    expect(res.body).toEqual({
      detail: expect.arrayContaining([
        { type: 'greater_than_equal', loc: ['body', 'max_tokens'], msg: 'Input should be greater than or equal to 1', input: 0, ctx: { ge: 1 } },
        { type: 'enum', loc: ['body', 'provider'], msg: "Input should be 'openai', 'gemini', 'anthropic' or 'local'", input: 'mistral', ctx: { expected: "'openai', 'gemini', 'anthropic' or 'local'" } },
        { type: 'extra_forbidden', loc: ['body', 'top_k'], msg: 'Extra inputs are not permitted', input: 3 },
      ]),
    });
    expect(res.body.detail).toHaveLength(3);
  });

  it('links tools and knowledge bases of the organisation', async () => {
    const [t1, t2, k1] = [await tool('lookup_order'), await tool('book_visit'), await kb(orgId)];
    const res = await create({ name: 'm', model: 'gpt-4o', tool_ids: [t2, t1], knowledge_base_ids: [k1] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ tool_ids: [t2, t1], knowledge_base_ids: [k1] });
  });

  it("422: another organisation's tool or knowledge base, or an unknown id, at the item's loc", async () => {
    const [mine, theirs, theirKb, unknown] = [await tool('mine_1'), await tool('theirs', other.key), await kb(other.orgId), randomUUID()];
    const res = await create({ name: 'm', model: 'gpt-4o', tool_ids: [mine, theirs, unknown], knowledge_base_ids: [theirKb] });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: 'reference_not_found', loc: ['body', 'tool_ids', 1], msg: 'No tool with this id in your organisation', input: theirs },
        { type: 'reference_not_found', loc: ['body', 'tool_ids', 2], msg: 'No tool with this id in your organisation', input: unknown },
        { type: 'reference_not_found', loc: ['body', 'knowledge_base_ids', 0], msg: 'No knowledge base with this id in your organisation', input: theirKb },
      ],
    });
  });

  it('422: duplicate ids, and two tools with the same name', async () => {
    const t = await tool('same_name');
    const dup = await create({ name: 'm', model: 'gpt-4o', tool_ids: [t, t] });
    expect(dup.body).toEqual({ detail: [{ type: 'list_unique', loc: ['body', 'tool_ids'], msg: 'List items should be unique', input: [t, t] }] });
    const t2 = await tool('same_name');
    const clash = await create({ name: 'm', model: 'gpt-4o', tool_ids: [t, t2] });
    expect(clash.body).toEqual({
      detail: [
        {
          type: 'value_error',
          loc: ['body', 'tool_ids', 1],
          msg: "Tool name 'same_name' is already used by tool_ids[0]; tools of one model need distinct names",
          input: t2,
        },
      ],
    });
  });
});

describe('GET /v1/models', () => {
  it('lists newest first with the envelope, filters by provider and paginates', async () => {
    const { key: k } = await tp.createOrg('lister');
    for (const model of ['gpt-4o', 'claude-haiku-4-5', 'gpt-4o-mini']) await create({ name: model, model }, k);
    const all = await tp.request('get', '/v1/models', { key: k });
    expect(all.body).toMatchObject({ total: 3, limit: 50, offset: 0 });
    expect(all.body.items.map((m: { model: string }) => m.model)).toEqual(['gpt-4o-mini', 'claude-haiku-4-5', 'gpt-4o']);
    const openai = await tp.request('get', '/v1/models?provider=openai&limit=1&offset=1', { key: k });
    expect(openai.body).toMatchObject({ total: 2, limit: 1, offset: 1, items: [{ model: 'gpt-4o' }] });
    const bad = await tp.request('get', '/v1/models?limit=101', { key: k });
    expect(bad.body).toEqual({
      detail: [{ type: 'less_than_equal', loc: ['query', 'limit'], msg: 'Input should be less than or equal to 100', input: 101, ctx: { le: 100 } }],
    });
  });
});

describe('GET/PATCH/DELETE /v1/models/{model_id}', () => {
  it("answers 404 for another organisation's model and for unknown ids", async () => {
    const { body } = await create({ name: 'm', model: 'gpt-4o' });
    for (const [method, b] of [['get', undefined], ['patch', { name: 'x' }], ['delete', undefined]] as const) {
      const res = await tp.request(method, `/v1/models/${body.id}`, { key: other.key, ...(b ? { body: b } : {}) });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'LLM model not found', type: 'not_found', request_id: res.headers.get('x-request-id') });
    }
    expect((await tp.request('get', `/v1/models/${randomUUID()}`, { key })).status).toBe(404);
  });

  it('gets the full record', async () => {
    const { body } = await create({ name: 'm', model: 'gpt-4o' });
    const res = await tp.request('get', `/v1/models/${body.id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(body);
  });

  it('patches partially and derives the provider again', async () => {
    const { body } = await create({ name: 'm', model: 'gpt-4o', system_prompt: 'A', temperature: 1.2 });
    const res = await tp.request('patch', `/v1/models/${body.id}`, { key, body: { system_prompt: null, max_tokens: 300 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'm', model: 'gpt-4o', system_prompt: null, max_tokens: 300, temperature: 1.2 });
    expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(body.updated_at));

    const toClaude = await tp.request('patch', `/v1/models/${body.id}`, { key, body: { model: 'claude-sonnet-4-5', temperature: 0.5 } });
    expect(toClaude.body).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-5' });
    // Anthropic caps temperature at 1, checked against the merged record.
    const hot = await tp.request('patch', `/v1/models/${body.id}`, { key, body: { temperature: 1.5 } });
    expect(hot.body.detail[0]).toMatchObject({ loc: ['body', 'temperature'], type: 'less_than_equal' });

    const selfHosted = await tp.request('patch', `/v1/models/${body.id}`, { key, body: { model: 'qwen2.5:7b', base_url: 'http://10.0.0.5:8000/v1' } });
    expect(selfHosted.body).toMatchObject({ provider: 'openai', model: 'qwen2.5:7b', base_url: 'http://10.0.0.5:8000/v1' });
    // Without base_url the unknown family keeps the stored provider.
    const kept = await tp.request('patch', `/v1/models/${body.id}`, { key, body: { base_url: null } });
    expect(kept.body).toMatchObject({ provider: 'openai', base_url: null });

    const actions = (await auditOf(body.id)).map((a) => a.action);
    expect(actions).toEqual(['llm_model.create', 'llm_model.update', 'llm_model.update', 'llm_model.update', 'llm_model.update']);
    expect((await auditOf(body.id))[1]!.details).toEqual({ fields: ['system_prompt', 'max_tokens'] });
  });

  it('422 on PATCH: null name, foreign tool', async () => {
    const { body } = await create({ name: 'm', model: 'gpt-4o' });
    const theirs = await tool('theirs_2', other.key);
    const res = await tp.request('patch', `/v1/models/${body.id}`, { key, body: { name: null } });
    expect(res.body).toEqual({ detail: [{ type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string', input: null }] });
    const res2 = await tp.request('patch', `/v1/models/${body.id}`, { key, body: { tool_ids: [theirs] } });
    expect(res2.body).toEqual({
      detail: [{ type: 'reference_not_found', loc: ['body', 'tool_ids', 0], msg: 'No tool with this id in your organisation', input: theirs }],
    });
  });

  it('deletes (204), then the model is gone; audited', async () => {
    const { body } = await create({ name: 'm', model: 'gpt-4o' });
    const res = await tp.request('delete', `/v1/models/${body.id}`, { key });
    expect(res.status).toBe(204);
    expect((await tp.request('get', `/v1/models/${body.id}`, { key })).status).toBe(404);
    expect((await tp.request('delete', `/v1/models/${body.id}`, { key })).status).toBe(404);
    expect((await auditOf(body.id)).map((a) => a.action)).toEqual(['llm_model.create', 'llm_model.delete']);
    // Soft delete: the row stays for the records that point at it.
    const [row] = await tp.sql`select deleted_at from llm_models where id = ${body.id}`;
    expect(row!.deleted_at).toBeInstanceOf(Date);
  });

  it('409 naming the agents when live agents use the model', async () => {
    const { body } = await create({ name: 'm', model: 'gpt-4o' });
    const tts = { provider: 'openai', model: 'gpt-4o-mini-tts', voice_id: 'alloy' };
    const stt = { provider: 'deepgram', model: 'nova-3', language: 'en-US' };
    const [a] = await tp.sql<{ id: string }[]>`
      insert into agents (org_id, name, llm_id, transcriber, tts) values (${orgId}, 'Front desk', ${body.id}, ${tp.sql.json(stt)}, ${tp.sql.json(tts)}) returning id`;
    await tp.sql`insert into agents (org_id, name, llm_id, transcriber, tts, deleted_at) values (${orgId}, 'Old', ${body.id}, ${tp.sql.json(stt)}, ${tp.sql.json(tts)}, now())`;
    const res = await tp.request('delete', `/v1/models/${body.id}`, { key });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      detail: 'LLM model is used by 1 agent; point them at another model first',
      type: 'conflict',
      request_id: res.headers.get('x-request-id'),
      agents: [{ id: a!.id, name: 'Front desk' }],
    });
  });
});
