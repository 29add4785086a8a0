// `warnings` on agents and models (Stripe-style: saved anyway, told why calls would fail), and the `local` provider,
// against a platform with no provider key, no local model and no private model host allowed.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';

let tp: TestPlatform;
let key: string;
let other: { orgId: string; key: string };

beforeAll(async () => {
  tp = await usePlatform();
  ({ key } = await tp.createOrg('warnings'));
  other = await tp.createOrg('other');
});

const req = (method: string, path: string, body?: unknown, k = key) => tp.request(method, path, { key: k, ...(body === undefined ? {} : { body }) });
const LOCAL_SPEECH = { transcriber: { provider: 'local' }, tts: { provider: 'local' } };

describe('models', () => {
  it('accepts provider local, warns that the platform has no local model, and lists no warnings', async () => {
    const res = await req('post', '/v1/models', { name: 'Offline', provider: 'local', model: 'llama3.2' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ provider: 'local', model: 'llama3.2', base_url: null });
    expect(res.body.warnings).toEqual([
      { code: 'local_model_missing', field: 'provider', message: expect.stringMatching(/LOCAL_LLM_BASE_URL.*LLM_MODEL_PATH/) },
    ]);
    expect((await req('get', `/v1/models/${res.body.id}`)).body.warnings).toEqual(res.body.warnings);
    const list = await req('get', '/v1/models?provider=local');
    expect(list.body.items.map((m: { id: string }) => m.id)).toContain(res.body.id);
    for (const m of list.body.items) expect(m).not.toHaveProperty('warnings');
  });

  it('keeps a local model local when its id looks like a cloud family, and refuses a base_url with it', async () => {
    const res = await req('post', '/v1/models', { name: 'Oss', provider: 'local', model: 'gpt-oss:20b' });
    expect(res.body.provider).toBe('local');
    expect((await req('patch', `/v1/models/${res.body.id}`, { model: 'gpt-oss:120b' })).body.provider).toBe('local');
    const bad = await req('post', '/v1/models', { name: 'x', provider: 'local', model: 'llama3.2', base_url: 'http://127.0.0.1:11434/v1' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'base_url'], type: 'value_error', msg: expect.stringContaining("provider 'openai'") })]);
  });

  it('warns of a base_url on a private host, naming LLM_PRIVATE_HOSTS with the host, and saves it', async () => {
    const res = await req('post', '/v1/models', { name: 'Ollama', model: 'llama3.2', base_url: 'http://127.0.0.1:11434/v1' });
    expect(res.status).toBe(201);
    expect(res.body.warnings).toEqual([
      { code: 'model_host_refused', field: 'base_url', message: expect.stringContaining('LLM_PRIVATE_HOSTS=127.0.0.1') },
    ]);
    // A public host needs no key (the server is the organisation's) and is not refused.
    const pub = await req('patch', `/v1/models/${res.body.id}`, { base_url: 'https://llm.example.com/v1' });
    expect(pub.body.warnings).toEqual([]);
  });

  it("warns of a missing key until the organisation's own credential exists; another organisation's does not count", async () => {
    const res = await req('post', '/v1/models', { name: 'Claude', model: 'claude-haiku-4-5' });
    expect(res.body.warnings).toEqual([{ code: 'provider_key_missing', field: 'provider', message: expect.stringContaining('ANTHROPIC_API_KEY') }]);
    expect((await req('post', '/v1/integrations', { name: 'theirs', provider: 'anthropic', api_key: 'sk-ant-their-key-0123456789' }, other.key)).status).toBe(201);
    expect((await req('get', `/v1/models/${res.body.id}`)).body.warnings).toHaveLength(1);
    expect((await req('post', '/v1/integrations', { name: 'ours', provider: 'anthropic', api_key: 'sk-ant-our-key-0123456789' })).status).toBe(201);
    expect((await req('get', `/v1/models/${res.body.id}`)).body.warnings).toEqual([]);
  });
});

describe('agents', () => {
  it("carries its model's warnings at llm_id and its speech's at transcriber/tts, and drops them once fixed", async () => {
    const local = (await req('post', '/v1/models', { name: 'Local', provider: 'local', model: 'llama3.2' })).body.id;
    const res = await req('post', '/v1/agents', { name: 'Desk', llm_id: local, transcriber: { provider: 'deepgram' }, tts: { provider: 'cartesia' } });
    expect(res.status).toBe(201);
    expect(res.body.warnings).toEqual([
      { code: 'local_model_missing', field: 'llm_id', message: expect.stringContaining("The agent's model uses provider local") },
      { code: 'provider_key_missing', field: 'transcriber.provider', message: expect.stringContaining('DEEPGRAM_API_KEY') },
      { code: 'provider_key_missing', field: 'tts.provider', message: expect.stringContaining('CARTESIA_API_KEY') },
    ]);
    const fixed = await req('patch', `/v1/agents/${res.body.id}`, LOCAL_SPEECH);
    expect(fixed.body.warnings.map((w: { field: string }) => w.field)).toEqual(['llm_id']);
    expect((await req('get', `/v1/agents/${res.body.id}`)).body.warnings).toEqual(fixed.body.warnings);
    const list = await req('get', `/v1/agents?llm_id=${local}`);
    expect(list.body.items[0]).not.toHaveProperty('warnings');
  });

  it('has none when everything it uses can run', async () => {
    const server = (await req('post', '/v1/models', { name: 'Server', model: 'llama3.2', base_url: 'https://llm.example.com/v1' })).body.id;
    const res = await req('post', '/v1/agents', { name: 'Fine', llm_id: server, ...LOCAL_SPEECH });
    expect(res.body.warnings).toEqual([]);
  });
});
