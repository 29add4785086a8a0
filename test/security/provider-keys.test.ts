// Item 1 of docs/security.md: the platform's own provider keys never travel to a URL a tenant chose. A canary
// platform key for each LLM provider, orgs without credentials, models whose base_url is a local receiver
// that records every header; the worker's LLM clients and the post-call analysis must never show the canary
// to the receiver, and must show it the org's own key when the org has one. The full web call (worker,
// LiveKit, analysis) is test/e2e/security-provider-keys.test.ts.
import { initializeLogger, llm } from '@livekit/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../support/fake-anthropic.ts';
import { llmEndpoint, ProviderConfigError } from '../../shared/providers.ts';
import { createLLM } from '../../media-worker/src/providers/index.ts';
import { runAnalysis } from '../../control-plane/src/modules/calls/jobs.ts';

const CANARY = { OPENAI_API_KEY: 'sk-canary-openai-platform', ANTHROPIC_API_KEY: 'sk-ant-canary-platform', GEMINI_API_KEY: 'canary-gemini-platform' };
const CANARIES = Object.values(CANARY);
const leaked = (headers: unknown[]) => CANARIES.filter((c) => JSON.stringify(headers).includes(c));

let openai: FakeOpenAI;
/** The operator's own gateway (ANALYSIS_BASE_URL): platform keys may go there. */
let gateway: FakeOpenAI;
let anthropic: FakeAnthropic;

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'error' });
  openai = await startFakeOpenAI({ responder: () => ({ text: JSON.stringify({ summary: 'Fine.', outcome: 'question_answered' }) }) });
  gateway = await startFakeOpenAI({ responder: () => ({ text: JSON.stringify({ summary: 'Fine.', outcome: 'question_answered' }) }) });
  anthropic = await startFakeAnthropic(() => ({ text: JSON.stringify({ summary: 'Fine.', outcome: 'question_answered' }) }));
});
afterAll(async () => {
  await Promise.all([openai?.close(), gateway?.close(), anthropic?.close()]);
});

describe('llmEndpoint: the one rule on keys and URLs', () => {
  const tenant = 'https://llm.tenant.example/v1/';

  it("gives a tenant's base_url the org's own key or none, for each provider, never the platform's", () => {
    expect(llmEndpoint('openai', tenant, {}, CANARY)).toEqual({ provider: 'openai', baseUrl: 'https://llm.tenant.example/v1', apiKey: null, tenant: true });
    expect(llmEndpoint('openai', tenant, { openai: 'sk-org' }, CANARY)).toMatchObject({ apiKey: 'sk-org', tenant: true });
    expect(llmEndpoint('anthropic', tenant, {}, CANARY)).toMatchObject({ apiKey: null, tenant: true });
    expect(llmEndpoint('anthropic', tenant, { anthropic: 'sk-ant-org' }, CANARY)).toMatchObject({ apiKey: 'sk-ant-org' });
    // Another provider's org key is not this provider's either.
    expect(llmEndpoint('anthropic', tenant, { openai: 'sk-org' }, CANARY).apiKey).toBeNull();
    // Gemini models take no base_url at all.
    expect(() => llmEndpoint('gemini', tenant, {}, CANARY)).toThrow(ProviderConfigError);
  });

  it("sends the platform's key only to the provider's own endpoint or the operator's *_BASE_URL", () => {
    expect(llmEndpoint('openai', null, {}, CANARY)).toEqual({ provider: 'openai', baseUrl: 'https://api.openai.com/v1', apiKey: CANARY.OPENAI_API_KEY, tenant: false });
    expect(llmEndpoint('anthropic', null, {}, CANARY)).toMatchObject({ baseUrl: 'https://api.anthropic.com', apiKey: CANARY.ANTHROPIC_API_KEY });
    expect(llmEndpoint('gemini', null, {}, CANARY)).toMatchObject({ baseUrl: 'https://generativelanguage.googleapis.com/v1beta', apiKey: CANARY.GEMINI_API_KEY });
    // The operator's gateway is the operator's: the platform key may go there.
    expect(llmEndpoint('openai', undefined, {}, { ...CANARY, OPENAI_BASE_URL: 'http://gateway.internal:4000/v1' })).toMatchObject({
      baseUrl: 'http://gateway.internal:4000/v1',
      apiKey: CANARY.OPENAI_API_KEY,
      tenant: false,
    });
    // The org's own key first; nothing at all is null.
    expect(llmEndpoint('openai', null, { openai: 'sk-org' }, CANARY).apiKey).toBe('sk-org');
    expect(llmEndpoint('openai', null, {}, {}).apiKey).toBeNull();
  });
});

describe("the worker's LLM clients", () => {
  const ask = async (model: llm.LLM) => {
    const chatCtx = llm.ChatContext.empty();
    chatCtx.addMessage({ role: 'user', content: 'Hello?' });
    return (await model.chat({ chatCtx, connOptions: { maxRetry: 0, retryIntervalMs: 10, timeoutMs: 10_000 } }).collect()).text;
  };
  // The receivers are on loopback, which the operator allows for model URLs here.
  const env = { ...CANARY, LLM_PRIVATE_HOSTS: '127.0.0.1' };

  it('an OpenAI-compatible base_url sees no platform key, and the org key when there is one', async () => {
    const before = openai.headers.length;
    await ask(createLLM({ provider: 'openai', model: 'm', base_url: openai.url, temperature: null, max_tokens: null }, {}, env));
    const seen = openai.headers.slice(before);
    expect(seen.length).toBeGreaterThan(0);
    expect(leaked(seen)).toEqual([]);

    const withOrg = openai.headers.length;
    await ask(createLLM({ provider: 'openai', model: 'm', base_url: openai.url, temperature: null, max_tokens: null }, { openai: 'sk-org-own-openai' }, env));
    expect(openai.headers.slice(withOrg).map((h) => h.authorization)).toContain('Bearer sk-org-own-openai');
  });

  it('an Anthropic base_url sees no platform key, and the org key when there is one', async () => {
    const before = anthropic.requests.length;
    await ask(createLLM({ provider: 'anthropic', model: 'claude-x', base_url: anthropic.url, temperature: null, max_tokens: 64 }, {}, env));
    const seen = anthropic.requests.slice(before).map((r) => r.headers);
    expect(seen.length).toBeGreaterThan(0);
    expect(leaked(seen)).toEqual([]);

    const withOrg = anthropic.requests.length;
    await ask(createLLM({ provider: 'anthropic', model: 'claude-x', base_url: anthropic.url, temperature: null, max_tokens: 64 }, { anthropic: 'sk-ant-org-own' }, env));
    const h = anthropic.requests[withOrg]!.headers;
    expect(h['x-api-key'] ?? h.authorization?.replace(/^Bearer /, '')).toBe('sk-ant-org-own');
  });

  it("the SDKs' own environment credentials (auth token, organisation, project) stay home too", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, { ANTHROPIC_AUTH_TOKEN: 'canary-ant-auth-token', OPENAI_ORG_ID: 'org-canary', OPENAI_PROJECT_ID: 'proj-canary', OPENAI_ADMIN_KEY: 'canary-admin' });
    try {
      const a = anthropic.requests.length;
      const o = openai.headers.length;
      await ask(createLLM({ provider: 'anthropic', model: 'claude-x', base_url: anthropic.url, temperature: null, max_tokens: 64 }, {}, env));
      await ask(createLLM({ provider: 'openai', model: 'm', base_url: openai.url, temperature: null, max_tokens: null }, {}, env));
      const seen = JSON.stringify([...anthropic.requests.slice(a).map((r) => r.headers), ...openai.headers.slice(o)]);
      expect(seen).not.toMatch(/canary/);
    } finally {
      for (const k of ['ANTHROPIC_AUTH_TOKEN', 'OPENAI_ORG_ID', 'OPENAI_PROJECT_ID', 'OPENAI_ADMIN_KEY']) {
        if (saved[k] === undefined) Reflect.deleteProperty(process.env, k);
        else process.env[k] = saved[k];
      }
    }
  });

  it('a Gemini model with a base_url is refused, never sent anywhere with the platform key', () => {
    expect(() => createLLM({ provider: 'gemini', model: 'gemini-2.5-flash', base_url: 'http://127.0.0.1:9/v1beta', temperature: null, max_tokens: null }, {}, env)).toThrow(/takes no base_url/);
  });
});

describe('post-call analysis', () => {
  let tp: TestPlatform;
  beforeAll(async () => {
    tp = await usePlatform({ ...CANARY, SSRF_ALLOWLIST: '127.0.0.1', ANALYSIS_BASE_URL: gateway.url, ANALYSIS_MODEL: 'analysis-mini', JOBS_ENABLED: false } as never);
  });

  async function endedCall(org: { orgId: string; key: string }, model: Record<string, unknown>): Promise<string> {
    const m = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', ...model } });
    expect(m.status).toBe(201);
    const a = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'a', llm_id: m.body.id } });
    expect(a.status).toBe(201);
    const messages = [
      { role: 'agent', content: 'Hello, how can I help?' },
      { role: 'user', content: 'When do you open?' },
    ];
    const [row] = await tp.sql`
      insert into calls (org_id, agent_id, type, status, started_at, ended_at, duration_seconds, end_reason, messages)
      values (${org.orgId}, ${a.body.id}, 'web', 'completed', now() - interval '1 minute', now(), 60, 'user_hangup', ${tp.sql.json(messages)})
      returning id`;
    return row!.id as string;
  }
  const analyse = (id: string) => runAnalysis(tp.platform.services, { id: 'job', name: 'calls.analyze', data: { call_id: id }, retryCount: 99 } as never);
  const analysis = async (org: { key: string }, id: string) => (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body.analysis;

  it("an org without credentials: its model's base_url never sees the platform's OpenAI key", async () => {
    const org = await tp.createOrg();
    const id = await endedCall(org, { model: 'fake-model', base_url: openai.url });
    const before = openai.headers.length;
    await analyse(id);
    expect(await analysis(org, id)).toMatchObject({ status: 'completed', method: 'agent_model' });
    const seen = openai.headers.slice(before);
    expect(seen.length).toBe(1);
    expect(leaked(seen)).toEqual([]);
    expect(seen[0]!.authorization).toBeUndefined();
  });

  it("an org with an OpenAI credential: its base_url sees the org's key", async () => {
    const org = await tp.createOrg();
    const cred = await tp.request('post', '/v1/integrations', { key: org.key, body: { name: 'own', provider: 'openai', api_key: 'sk-org-own-0123456789abcdef' } });
    expect(cred.status).toBe(201);
    const id = await endedCall(org, { model: 'fake-model', base_url: openai.url });
    const before = openai.headers.length;
    await analyse(id);
    expect(await analysis(org, id)).toMatchObject({ status: 'completed' });
    expect(openai.headers.slice(before).map((h) => h.authorization)).toEqual(['Bearer sk-org-own-0123456789abcdef']);
  });

  it("the operator's analysis model (ANALYSIS_BASE_URL) is the operator's: the platform key goes there", async () => {
    const org = await tp.createOrg();
    const id = await endedCall(org, { provider: 'gemini', model: 'gemini-2.0-flash' });
    const config = tp.platform.services.config;
    config.ANALYSIS_MODE = 'model';
    try {
      const before = gateway.headers.length;
      await analyse(id);
      expect(await analysis(org, id)).toMatchObject({ status: 'completed', method: 'analysis_model', model: 'openai/analysis-mini' });
      expect(gateway.headers.slice(before).map((h) => h.authorization)).toEqual([`Bearer ${CANARY.OPENAI_API_KEY}`]);
    } finally {
      config.ANALYSIS_MODE = 'agent';
    }
  });
});
