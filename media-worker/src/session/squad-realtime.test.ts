// Squads that mix a realtime (speech-to-speech) agent with a pipeline agent, in the real AgentSession: the members'
// models are built as the worker builds them (call/models.ts, memberModels), the realtime one against the local
// Realtime double, the pipeline one with offline speech and the OpenAI-compatible stand-in. Each way, the caller is
// handed over, the next agent answers the next turn with its own model and prompt, it has the conversation so far
// (context `full`), and the transcript names who said what.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initializeLogger } from '@livekit/agents';
import type { CallConfig, SquadMemberConfig } from '../../../schemas/internal.ts';
import { contentText, lastUserText, startFakeOpenAI, type ChatRequest, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { startFakeInternalApi, type FakeInternalApi } from '../../../test/support/fake-internal-api.ts';
import { synthesize } from '../../../test/support/voice-io.ts';
import { InternalApiClient } from '../../../shared/internal-api.ts';
import { memberModels } from '../call/models.ts';
import { createRealtimeModel } from '../providers/realtime.ts';
import { SIDE_TASK_MODELS, createSideLlm } from '../providers/side-llm.ts';
import { baseConfig, startCall, startRealtimeCall, waitUntil } from './harness.test-support.ts';
import { SUMMARY_HEADER, SUMMARY_PROMPT } from './squad.ts';

const FRONT = 'agent_front';
const BILLING = 'agent_billing';
const FRONT_PROMPT = 'You are the front desk of Acme.';
const BILLING_PROMPT = 'You are the billing desk of Acme.';
/** The Realtime double as the operator's OpenAI endpoint: the model is built as in production, with the platform key. */
let env: Record<string, string>;
let fake: FakeOpenAI;
let api: FakeInternalApi;

const REALTIME: CallConfig['llm'] = {
  provider: 'openai',
  model: 'gpt-realtime',
  base_url: null,
  temperature: null,
  max_tokens: null,
  realtime: { voice: 'marin', turn_detection: 'server_vad', eagerness: 'auto', silence_duration_ms: 400 },
};

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'warn' });
  fake = await startFakeOpenAI({ ttftMs: 30, realtime: { apiKeys: ['sk-platform', 'sk-org-openai'], firstAudioMs: [300, 500] } });
  env = { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-platform', SSRF_ALLOWLIST: '127.0.0.1' };
  api = await startFakeInternalApi();
});
afterAll(async () => {
  await fake?.close();
  await api?.close();
});

const system = (req: ChatRequest) => contentText(req.messages[0]!);
const toolNames = (req: ChatRequest) => (req.tools ?? []).map((t) => t.function.name);

function squadConfig(callId: string, front: CallConfig['llm'], billing: CallConfig['llm'], context: 'full' | 'summary' = 'full'): CallConfig {
  const b = baseConfig({ agent: { id: BILLING, name: 'Billing Desk', first_message: 'Billing here.' } });
  const member: SquadMemberConfig = { agent: b.agent, prompt: BILLING_PROMPT, llm: billing, tools: [], knowledge: { knowledge_base_ids: [], mode: 'retrieve' } };
  return baseConfig({
    call: { id: callId },
    agent: { id: FRONT, name: 'Front desk', first_message: 'Hello, front desk.' },
    prompt: FRONT_PROMPT,
    llm: front,
    squad: {
      id: 'squad_mixed',
      max_handoffs: 4,
      members: [member],
      handoffs: [{ from_agent_id: FRONT, to_agent_id: BILLING, description: 'The caller asks about an invoice or a payment.', context }],
    },
  });
}

/** The double's realtime model: says what it is told, hands an invoice question over, answers anything else. */
function realtimeModel(transcripts: string[]) {
  fake.setRealtimeTranscriber(({ index }) => transcripts[index] ?? 'Thank you.');
  fake.setRealtimeResponder((turn) => {
    const fixed = /Say exactly [^"]*"([^"]*)"\s*$/.exec(turn.responseInstructions ?? '');
    if (fixed) return { text: fixed[1]! };
    if (/invoice/i.test(turn.lastUser) && !turn.items.some((i) => i.type === 'function_call_output')) {
      return { toolCalls: [{ name: 'handoff_to_billing_desk', arguments: { reason: 'invoice question' } }] };
    }
    return { text: `Realtime answer to: ${turn.lastUser}` };
  });
}

describe('a squad mixing realtime and pipeline agents', () => {
  it('pipeline to realtime: the realtime member answers the next turn with its prompt and the conversation so far', async () => {
    fake.setResponder((req) => {
      if (system(req).startsWith(FRONT_PROMPT) && toolNames(req).includes('handoff_to_billing_desk') && !req.messages.some((m) => m.role === 'tool')) {
        return { toolCalls: [{ name: 'handoff_to_billing_desk', arguments: { reason: 'invoice question' } }] };
      }
      return { text: `Pipeline answer to: ${lastUserText(req)}` };
    });
    realtimeModel(['What do I owe this month?']);
    const config = squadConfig('call_mixed_to_realtime', baseConfig().llm, REALTIME);
    const before = fake.realtime.length;
    const h = await startCall(config, { llmUrl: fake.url, api, extra: { memberModels: (m) => memberModels(m, config, env) } });
    await waitUntil(() => !h.out.playing && h.out.segmentStarts.length >= 1 && h.call.session.agentState === 'listening', 60_000, 'greeting played');
    await h.line.say(await synthesize('I would like to book a table for two'));
    await api.waitFor((r) => r.some((x) => x.kind === 'handoff' && x.callId === 'call_mixed_to_realtime'), 60_000);
    await waitUntil(() => h.call.agent.id === BILLING && fake.realtime.length > before, 60_000, 'the realtime member connected');
    await waitUntil(() => !h.out.playing && h.call.session.agentState === 'listening', 60_000, 'the hand-over spoken');
    await h.line.say(await synthesize('What do I owe this month?', 'espeak-ng'));
    await waitUntil(() => h.call.messages().some((m) => m.content.startsWith('Realtime answer')), 60_000, 'the realtime answer');
    const report = await h.call.end('user_hangup');
    await h.line.close();

    const conn = fake.realtime.at(-1)!;
    expect(conn.session.instructions).toContain(BILLING_PROMPT);
    expect(conn.session.instructions).not.toContain(FRONT_PROMPT);
    // Full context: the front desk's conversation reached the realtime model as items before its own turn.
    expect(conn.items.some((i) => i.type === 'message' && i.role === 'assistant' && /Hello, front desk/.test(i.text ?? ''))).toBe(true);
    const agents = report.messages.filter((m) => m.role === 'agent' && m.content && !m.tool_call);
    expect(agents[0]).toMatchObject({ content: 'Hello, front desk.', agent_id: FRONT });
    expect(agents.find((m) => m.content === 'Realtime answer to: What do I owe this month?')).toMatchObject({ agent_id: BILLING });
    expect(api.reports.find((r) => r.kind === 'handoff' && r.callId === 'call_mixed_to_realtime')!.body).toMatchObject({ from_agent_id: FRONT, to_agent_id: BILLING });
  }, 180_000);

  /**
   * A realtime entry agent hands an invoice question to a pipeline member; the member greets, then answers the
   * caller's next turn. The session is the realtime agent's, built as the worker builds it: no STT or TTS of its own.
   */
  async function realtimeToPipeline(callId: string, context: 'full' | 'summary', org: { base_url: string | null; key?: string }) {
    realtimeModel(['I have a question about my invoice.']);
    // The member's text model is the stand-in as the org's own server, with the org's key.
    process.env.SSRF_ALLOWLIST = '127.0.0.1';
    const front = { ...REALTIME, base_url: org.base_url };
    const config = { ...squadConfig(callId, front, { ...baseConfig().llm, base_url: fake.url }, context), provider_keys: { openai: 'sk-org-openai' } };
    const apiClient = new InternalApiClient({ baseUrl: api.url, token: api.token, retry: { baseDelayMs: 20, maxDelayMs: 100 } });
    const { call, line, out } = await startRealtimeCall(config, createRealtimeModel(front as Parameters<typeof createRealtimeModel>[0], config.provider_keys, env), {
      api: apiClient,
      sideLlm: createSideLlm(front, config.provider_keys, env),
      extra: { reporter: apiClient.reporter(config.call.id), memberModels: (m) => memberModels(m, config, env) },
    });
    await waitUntil(() => call.messages().some((m) => m.content === 'Hello, front desk.'), 30_000, 'the realtime greeting');
    await waitUntil(() => !out.playing && call.session.agentState === 'listening', 30_000, 'greeting played');
    const requestsBefore = fake.requests.length;
    const headersBefore = fake.headers.length;
    await line.say(await synthesize('I have a question about my invoice.', 'espeak-ng'));
    await api.waitFor((r) => r.some((x) => x.kind === 'handoff' && x.callId === callId), 60_000);
    await waitUntil(() => call.agent.id === BILLING && call.messages().some((m) => m.content === 'Billing here.'), 60_000, 'the pipeline member greets');
    await waitUntil(() => !out.playing && call.session.agentState === 'listening', 60_000, 'its greeting played');
    await line.say(await synthesize('I would like to book a table for two'));
    await waitUntil(() => call.messages().some((m) => m.content.startsWith('Pipeline answer')), 60_000, 'the pipeline answer');
    const report = await call.end('user_hangup');
    await line.close();
    return { report, sent: fake.requests.slice(requestsBefore), headers: fake.headers.slice(headersBefore) };
  }

  it('realtime to pipeline: the pipeline member hears the caller with its own transcriber and answers with its own model', async () => {
    fake.setResponder((req) => ({ text: `Pipeline answer to: ${lastUserText(req)}` }));
    const { report, sent } = await realtimeToPipeline('call_mixed_to_pipeline', 'full', { base_url: null });
    const billingReq = sent.find((r) => system(r).startsWith(BILLING_PROMPT))!;
    expect(billingReq).toBeTruthy();
    // Full context: the caller's words to the realtime agent (its input transcription) are in the member's request.
    expect(billingReq.messages.some((m) => m.role === 'user' && /invoice/.test(contentText(m)))).toBe(true);
    const agents = report.messages.filter((m) => m.role === 'agent' && m.content && !m.tool_call);
    expect(agents[0]).toMatchObject({ content: 'Hello, front desk.', agent_id: FRONT });
    expect(agents.find((m) => m.content.startsWith('Pipeline answer'))).toMatchObject({ agent_id: BILLING });
  }, 180_000);

  it("realtime to pipeline with a summary: the realtime agent's side-task model writes it, at the org's server with the org's key", async () => {
    fake.setResponder((req) => (system(req) === SUMMARY_PROMPT ? { text: 'Ada has a question about an invoice.' } : { text: `Pipeline answer to: ${lastUserText(req)}` }));
    const { report, sent, headers } = await realtimeToPipeline('call_mixed_summary', 'summary', { base_url: fake.url });
    const summaryReq = sent.find((r) => system(r) === SUMMARY_PROMPT)!;
    expect(summaryReq, 'the summary was asked of a text model').toBeTruthy();
    expect(summaryReq.model).toBe(SIDE_TASK_MODELS.openai);
    expect(contentText(summaryReq.messages[1]!)).toMatch(/^Caller: .*invoice/m);
    const billingReq = sent.find((r) => system(r).startsWith(BILLING_PROMPT))!;
    expect(JSON.stringify(billingReq.messages)).toContain(SUMMARY_HEADER);
    expect(JSON.stringify(billingReq.messages)).toContain('Ada has a question about an invoice.');
    // The org's server got the org's key, never the platform's.
    expect(headers.map((h) => h.authorization)).not.toContain('Bearer sk-platform');
    expect(headers.map((h) => h.authorization)).toContain('Bearer sk-org-openai');
    expect(report.messages.find((m) => m.content.startsWith('Pipeline answer'))).toMatchObject({ agent_id: BILLING });
  }, 180_000);
});
