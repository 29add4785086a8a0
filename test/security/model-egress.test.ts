// Item 6 of docs/security.md: one egress rule for model URLs (shared/model-egress.ts). The worker's LLM
// clients and the post-call analysis both refuse a base_url on a private, loopback or link-local address
// (cluster-internal services, the cloud metadata endpoint) with a clear error, and both accept it once the
// operator lists it in LLM_PRIVATE_HOSTS (a host, or a CIDR range the address falls in).
import { initializeLogger, llm } from '@livekit/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../support/fake-anthropic.ts';
import { createLLM } from '../../media-worker/src/providers/index.ts';
import { analyseCall } from '../../control-plane/src/modules/calls/analysis.ts';
import { getCallById } from '../../control-plane/src/modules/calls/queries.ts';
import { loadConfig } from '../../control-plane/src/config.ts';
import { modelEgressOptions, parsePrivateHosts } from '../../shared/model-egress.ts';
import { createGuardedAgent, guardedFetch, SsrfBlockedError } from '../../shared/ssrf.ts';

const ANSWER = JSON.stringify({ summary: 'Fine.', outcome: 'question_answered' });
const PRIVATE = ['http://10.0.0.1/v1', 'http://169.254.169.254/latest', 'http://[::ffff:127.0.0.1]:8080/v1', 'http://localhost:11434/v1', 'http://gpu-box:11434/v1'];

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'error' });
  openai = await startFakeOpenAI({ responder: () => ({ text: ANSWER }) });
  anthropic = await startFakeAnthropic(() => ({ text: ANSWER }));
});
afterAll(async () => {
  await Promise.all([openai?.close(), anthropic?.close()]);
});

const ask = async (model: llm.LLM) => {
  const chatCtx = llm.ChatContext.empty();
  chatCtx.addMessage({ role: 'user', content: 'Hello?' });
  return (await model.chat({ chatCtx, connOptions: { maxRetry: 0, retryIntervalMs: 10, timeoutMs: 10_000 } }).collect()).text;
};

describe("the worker's LLM clients", () => {
  const model = (provider: string, base_url: string) => ({ provider, model: 'm', base_url, temperature: null, max_tokens: 64 });

  it('refuse a private base_url, naming the address and LLM_PRIVATE_HOSTS', () => {
    for (const provider of ['openai', 'anthropic', 'local']) {
      for (const url of [...PRIVATE, openai.url]) {
        expect(() => createLLM(model(provider, url), { openai: 'sk-org', anthropic: 'sk-ant-org' }, {}), `${provider} ${url}`).toThrow(SsrfBlockedError);
      }
      expect(() => createLLM(model(provider, 'http://169.254.169.254/v1'), {}, {})).toThrow(/address 169\.254\.169\.254 is not public \(.*LLM_PRIVATE_HOSTS\)/);
    }
  });

  it('accept it when the operator lists the host, or a range the address is in', async () => {
    const before = openai.requests.length;
    expect(await ask(createLLM(model('openai', openai.url), {}, { LLM_PRIVATE_HOSTS: '127.0.0.1' }))).toBe(ANSWER);
    expect(await ask(createLLM(model('local', openai.url), {}, { LLM_PRIVATE_HOSTS: '10.0.0.0/8, 127.0.0.0/8' }))).toBe(ANSWER);
    expect(await ask(createLLM(model('anthropic', anthropic.url), {}, { LLM_PRIVATE_HOSTS: '127.0.0.0/24' }))).toBe(ANSWER);
    expect(openai.requests.length).toBe(before + 2);
    // A range elsewhere admits nothing here.
    expect(() => createLLM(model('openai', openai.url), {}, { LLM_PRIVATE_HOSTS: '10.0.0.0/8' })).toThrow(/127\.0\.0\.1 is not public/);
  });

  it('in production, a public tenant URL must be https; a listed private host may stay http', () => {
    expect(() => createLLM(model('openai', 'http://llm.example.com/v1'), {}, { NODE_ENV: 'production' })).toThrow(/https is required/);
    expect(createLLM(model('openai', 'https://llm.example.com/v1'), {}, { NODE_ENV: 'production' })).toBeInstanceOf(llm.LLM);
    expect(createLLM(model('openai', 'http://10.1.2.3:11434/v1'), {}, { NODE_ENV: 'production', LLM_PRIVATE_HOSTS: '10.1.0.0/16' })).toBeInstanceOf(llm.LLM);
  });

  it("the operator's own *_BASE_URL is trusted (it is not the tenant's)", async () => {
    expect(await ask(createLLM({ ...model('openai', ''), base_url: null }, {}, { OPENAI_API_KEY: 'sk-platform', OPENAI_BASE_URL: openai.url }))).toBe(ANSWER);
    expect(await ask(createLLM({ ...model('local', ''), base_url: null }, {}, { LOCAL_LLM_BASE_URL: openai.url }))).toBe(ANSWER);
  });
});

describe('the guarded fetch the LLM clients use', () => {
  // A public-looking name that resolves to a private address: refused when the connection is made.
  const resolve = async (host: string) => [{ address: host === 'llm.example.com' ? '127.0.0.1' : '93.184.215.14', family: 4 }];

  it('refuses a name that resolves to a private address, unless the range is listed', async () => {
    const url = openai.url.replace('127.0.0.1', 'llm.example.com');
    const refused = { ...modelEgressOptions({ baseUrl: url, tenant: true }, {}), resolve };
    const agent = createGuardedAgent(refused);
    const err = await guardedFetch(agent, refused)(`${url}/models`).catch((e: unknown) => e);
    expect(String((err as Error).cause)).toMatch(/resolves to no public address \(127\.0\.0\.1\).*LLM_PRIVATE_HOSTS/);
    await agent.close();

    const allowed = { ...modelEgressOptions({ baseUrl: url, tenant: true }, { LLM_PRIVATE_HOSTS: '127.0.0.0/8' }), resolve };
    const agent2 = createGuardedAgent(allowed);
    expect((await guardedFetch(agent2, allowed)(`${url}/models`)).status).toBe(200);
    await agent2.close();
  });

  it('parses LLM_PRIVATE_HOSTS into hosts and ranges, and the control plane refuses a bad range at start-up', () => {
    expect(parsePrivateHosts(' gpu-box , 10.20.0.0/16,fd00::/8 ')).toEqual({ hosts: ['gpu-box'], cidrs: ['10.20.0.0/16', 'fd00::/8'] });
    expect(() => parsePrivateHosts('10.0.0.0/99')).toThrow(/not a CIDR range/);
    expect(() => loadConfig({ LLM_PRIVATE_HOSTS: 'gpu-box/8' })).toThrow(/LLM_PRIVATE_HOSTS/);
  });
});

describe('post-call analysis', () => {
  let tp: TestPlatform;
  // No SSRF_ALLOWLIST: loopback is as private as any LAN box.
  beforeAll(async () => {
    tp = await usePlatform({ JOBS_ENABLED: false } as never);
  });

  async function endedCall(baseUrl: string) {
    const org = await tp.createOrg();
    const m = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'fake-model', base_url: baseUrl } });
    expect(m.status).toBe(201);
    const a = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'a', llm_id: m.body.id } });
    const messages = [
      { role: 'agent', content: 'Hello.' },
      { role: 'user', content: 'When do you open?' },
    ];
    const [row] = await tp.sql`
      insert into calls (org_id, agent_id, type, status, started_at, ended_at, duration_seconds, end_reason, messages)
      values (${org.orgId}, ${a.body.id}, 'web', 'completed', now() - interval '1 minute', now(), 60, 'user_hangup', ${tp.sql.json(messages)})
      returning id`;
    return (await getCallById(tp.sql, row!.id as string))!;
  }

  it('refuses a private base_url with a clear error', async () => {
    for (const url of ['http://10.0.0.1/v1', 'http://169.254.169.254/v1', openai.url]) {
      const call = await endedCall(url);
      const host = new URL(url).hostname;
      await expect(analyseCall(tp.platform.services, call), url).rejects.toThrow(`analysis failed: blocked: address ${host} is not public`);
    }
  });

  it('accepts it when the operator lists it in LLM_PRIVATE_HOSTS', async () => {
    const config = tp.platform.services.config;
    try {
      for (const list of ['127.0.0.1', '127.0.0.0/8']) {
        config.LLM_PRIVATE_HOSTS = list;
        const before = openai.requests.length;
        const result = await analyseCall(tp.platform.services, await endedCall(openai.url));
        expect(result, list).toMatchObject({ summary: 'Fine.', outcome: 'question_answered', method: 'agent_model' });
        expect(openai.requests.length).toBe(before + 1);
      }
    } finally {
      config.LLM_PRIVATE_HOSTS = undefined;
    }
  });
});
