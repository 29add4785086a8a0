// Post-call analysis through the agent's own provider (Anthropic, Gemini, OpenAI-compatible) with the org's
// key, the configured analysis model when that provider has no key, the offline extractive summary, and
// ANALYSIS_MODE=off; each says which on the call, and `call.analyzed` carries the result. Providers are local
// doubles speaking their real wire protocols.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../../../../test/support/fake-anthropic.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../../../test/support/fake-openai.ts';
import { startFakeGemini, type FakeGemini } from '../../../../test/support/fake-gemini.ts';
import { runAnalysis } from './jobs.ts';
import { extractiveSummary } from './analysis.ts';

let tp: TestPlatform;
let anthropic: FakeAnthropic;
let openai: FakeOpenAI;
let gemini: FakeGemini;

const MESSAGES = [
  { role: 'agent', content: 'Hello, Bright Smiles dental, how can I help?' },
  { role: 'user', content: 'I would like to book a cleaning next Tuesday.' },
  { role: 'agent', content: 'Done: Tuesday at 10. See you then!' },
  { role: 'user', content: 'Thanks, bye.' },
];
const ANSWER = JSON.stringify({ summary: 'The caller booked a cleaning for Tuesday at 10.', outcome: 'Appointment Booked' });

beforeAll(async () => {
  anthropic = await startFakeAnthropic(() => ({ text: ANSWER }));
  openai = await startFakeOpenAI({ responder: () => ({ text: ANSWER }) });
  gemini = await startFakeGemini();
  gemini.setResponder(() => ({ text: '```json\n' + ANSWER + '\n```' }));
  tp = await usePlatform({
    SSRF_ALLOWLIST: '127.0.0.1',
    ANTHROPIC_BASE_URL: anthropic.url,
    GEMINI_BASE_URL: gemini.url,
    GEMINI_API_KEY: 'platform-gemini-key',
    ANALYSIS_BASE_URL: openai.url,
    ANALYSIS_MODEL: 'analysis-mini',
    JOBS_ENABLED: false,
  } as never);
});

afterAll(async () => {
  await Promise.all([anthropic.close(), openai.close(), gemini.close()]);
});

async function endedCall(org: { orgId: string; key: string }, provider: string, model: string, messages = MESSAGES): Promise<string> {
  const m = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', provider, model } });
  expect(m.status).toBe(201);
  const a = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'a', llm_id: m.body.id } });
  expect(a.status).toBe(201);
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, status, started_at, ended_at, duration_seconds, end_reason, messages)
    values (${org.orgId}, ${a.body.id}, 'web', 'completed', now() - interval '1 minute', now(), 60, 'user_hangup', ${tp.sql.json(messages)})
    returning id`;
  return row!.id as string;
}

const analyse = (id: string) => runAnalysis(tp.platform.services, { id: 'job', name: 'calls.analyze', data: { call_id: id }, retryCount: 0 } as never);
const getCall = async (org: { key: string }, id: string) => (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
const analyzedEvent = async (id: string) => (await tp.sql`select payload from events where call_id = ${id} and type = 'call.analyzed'`)[0]?.payload;

describe('post-call analysis', () => {
  it("uses the agent's Anthropic model with the org's Anthropic key, and call.analyzed carries the result", async () => {
    const org = await tp.createOrg();
    await tp.request('post', '/v1/integrations', { key: org.key, body: { name: 'ant', provider: 'anthropic', api_key: 'sk-ant-org-0123456789abcdef' } });
    const id = await endedCall(org, 'anthropic', 'claude-3-5-haiku-latest');
    const before = anthropic.requests.length;
    await analyse(id);
    const req = anthropic.requests[before]!;
    expect(req.headers['x-api-key']).toBe('sk-ant-org-0123456789abcdef');
    expect(req.body.model).toBe('claude-3-5-haiku-latest');
    expect(JSON.stringify(req.body.messages)).toContain('book a cleaning');
    const call = await getCall(org, id);
    expect(call.ai_summary).toBe('The caller booked a cleaning for Tuesday at 10.');
    expect(call.outcome).toBe('appointment_booked');
    expect(call.analysis).toMatchObject({ status: 'completed', method: 'agent_model', model: 'anthropic/claude-3-5-haiku-latest', error: null });
    expect(await analyzedEvent(id)).toMatchObject({ call_id: id, outcome: 'appointment_booked', ai_summary: 'The caller booked a cleaning for Tuesday at 10.' });
  });

  it("uses the agent's Gemini model with the platform's Gemini key", async () => {
    const org = await tp.createOrg();
    const id = await endedCall(org, 'gemini', 'gemini-2.0-flash');
    const before = gemini.requests.length;
    await analyse(id);
    expect(gemini.requests[before]).toMatchObject({ model: 'gemini-2.0-flash', apiKey: 'platform-gemini-key' });
    const call = await getCall(org, id);
    expect(call).toMatchObject({ ai_summary: 'The caller booked a cleaning for Tuesday at 10.', outcome: 'appointment_booked' });
    expect(call.analysis).toMatchObject({ method: 'agent_model', model: 'gemini/gemini-2.0-flash' });
  });

  it('falls back to the configured analysis model when the agent provider has no key', async () => {
    const org = await tp.createOrg();
    // An Anthropic agent, and no Anthropic key anywhere; the org has an OpenAI key for the analysis model.
    await tp.request('post', '/v1/integrations', { key: org.key, body: { name: 'oa', provider: 'openai', api_key: 'sk-org-openai-0123456789' } });
    const savedKey = tp.platform.services.config.ANTHROPIC_API_KEY;
    const id = await endedCall(org, 'anthropic', 'claude-3-5-haiku-latest');
    const before = openai.requests.length;
    const beforeAnthropic = anthropic.requests.length;
    await analyse(id);
    expect(tp.platform.services.config.ANTHROPIC_API_KEY).toBe(savedKey);
    expect(anthropic.requests.length).toBe(beforeAnthropic);
    expect(openai.requests[before]!.model).toBe('analysis-mini');
    const call = await getCall(org, id);
    expect(call.analysis).toMatchObject({ status: 'completed', method: 'analysis_model', model: 'openai/analysis-mini' });
    expect(call.outcome).toBe('appointment_booked');
  });

  it("a realtime agent's calls take the configured analysis model: a realtime model answers no chat completions", async () => {
    const org = await tp.createOrg();
    await tp.request('post', '/v1/integrations', { key: org.key, body: { name: 'oa', provider: 'openai', api_key: 'sk-org-openai-0123456789' } });
    // A model id with `realtime` in it is a realtime model (its defaults), unless `realtime: null` is given.
    const id = await endedCall(org, 'openai', 'gpt-realtime');
    const before = openai.requests.length;
    await analyse(id);
    expect(openai.requests.slice(before).map((r) => r.model)).toEqual(['analysis-mini']);
    const call = await getCall(org, id);
    expect(call.analysis).toMatchObject({ status: 'completed', method: 'analysis_model', model: 'openai/analysis-mini' });
  });

  it('offline (no key for any model): a documented extractive summary, no outcome, and it says so', async () => {
    const org = await tp.createOrg();
    const config = tp.platform.services.config;
    const saved = config.ANALYSIS_BASE_URL;
    config.ANALYSIS_BASE_URL = undefined; // the analysis model is api.openai.com now, with no key
    try {
      const id = await endedCall(org, 'anthropic', 'claude-3-5-haiku-latest');
      await analyse(id);
      const call = await getCall(org, id);
      expect(call.ai_summary).toBe(extractiveSummary(MESSAGES));
      expect(call.ai_summary).toBe(
        '4 messages (2 from the caller, 2 from the agent). The caller said: "I would like to book a cleaning next Tuesday.". ' +
          'Last from the caller: "Thanks, bye.". The agent ended with: "Done: Tuesday at 10. See you then!".',
      );
      expect(call.outcome).toBeNull();
      expect(call.analysis).toMatchObject({ status: 'completed', method: 'extractive', model: null, outcome: null });
      expect(await analyzedEvent(id)).toMatchObject({ call_id: id, outcome: null, ai_summary: call.ai_summary });
    } finally {
      config.ANALYSIS_BASE_URL = saved;
    }
  });

  it('ANALYSIS_MODE=extractive never calls a model, even when one is available', async () => {
    const org = await tp.createOrg();
    const config = tp.platform.services.config;
    config.ANALYSIS_MODE = 'extractive';
    try {
      const id = await endedCall(org, 'gemini', 'gemini-2.0-flash');
      const before = gemini.requests.length;
      await analyse(id);
      expect(gemini.requests.length).toBe(before);
      expect((await getCall(org, id)).analysis).toMatchObject({ status: 'completed', method: 'extractive' });
    } finally {
      config.ANALYSIS_MODE = 'agent';
    }
  });

  it('ANALYSIS_MODE=off leaves the fields null with the reason on the call', async () => {
    const org = await tp.createOrg();
    const config = tp.platform.services.config;
    config.ANALYSIS_MODE = 'off';
    try {
      const id = await endedCall(org, 'gemini', 'gemini-2.0-flash');
      await analyse(id);
      const call = await getCall(org, id);
      expect(call.ai_summary).toBeNull();
      expect(call.analysis).toMatchObject({ status: 'skipped', error: 'post-call analysis is turned off (ANALYSIS_MODE=off)', method: null });
      expect(await analyzedEvent(id)).toBeUndefined();
    } finally {
      config.ANALYSIS_MODE = 'agent';
    }
  });

  it('a provider error is recorded with the model that failed', async () => {
    const org = await tp.createOrg();
    gemini.setResponder(() => ({ error: { code: 400, status: 'INVALID_ARGUMENT', message: 'model not found' } }));
    try {
      const id = await endedCall(org, 'gemini', 'gemini-nope');
      tp.platform.services.config.ANALYSIS_RETRY_LIMIT = 0;
      await analyse(id);
      const call = await getCall(org, id);
      expect(call.analysis).toMatchObject({ status: 'failed', method: 'agent_model', model: 'gemini/gemini-nope' });
      expect(call.analysis.error).toMatch(/^analysis failed: gemini answered 400/);
    } finally {
      gemini.setResponder(() => ({ text: ANSWER }));
    }
  });
});
