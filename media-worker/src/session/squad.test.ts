// Squads in the worker: the generated handoff tools (names, descriptions, the bound), and hand-offs in the real
// AgentSession with offline speech and the OpenAI-compatible stand-in: the next agent's greeting is said, its
// model gets the conversation (full) or a summary of it (summary), messages name their agent, and the
// hand-off is reported.
import { initializeLogger, llm as agentsLlm } from '@livekit/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallConfig, SquadMemberConfig } from '../../../schemas/internal.ts';
import { contentText, lastUserText, startFakeOpenAI, type ChatRequest, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { startFakeInternalApi, type FakeInternalApi } from '../../../test/support/fake-internal-api.ts';
import { synthesize } from '../../../test/support/voice-io.ts';
import { baseConfig, startCall, waitUntil, type Harness } from './harness.test-support.ts';
import { conversationLines, handoffToolName, Squad, SUMMARY_HEADER, SUMMARY_PROMPT, summarize, type SquadHooks } from './squad.ts';

let llm: FakeOpenAI;
let api: FakeInternalApi;

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'warn' });
  llm = await startFakeOpenAI({ ttftMs: 30 });
  api = await startFakeInternalApi();
});
afterAll(async () => {
  await llm?.close();
  await api?.close();
});

const FRONT = 'agent_front';
const BILLING = 'agent_billing';
const FRONT_PROMPT = 'You are the front desk of Acme.';
const BILLING_PROMPT = 'You are the billing desk of Acme.';

function member(id: string, name: string, prompt: string, agent: Partial<CallConfig['agent']> = {}): SquadMemberConfig {
  const base = baseConfig({ agent: { id, name, ...agent } });
  return { agent: base.agent, prompt, llm: base.llm, tools: [], knowledge: { knowledge_base_ids: [], mode: 'retrieve' } };
}

function squadConfig(
  callId: string,
  opts: { context?: 'full' | 'summary'; billingGreeting?: string | null; maxHandoffs?: number; back?: boolean } = {},
): CallConfig {
  const billing = member(BILLING, 'Billing Desk', BILLING_PROMPT, {
    first_message: opts.billingGreeting === undefined ? 'Billing here, {{name}}.' : opts.billingGreeting,
  });
  return baseConfig({
    call: { id: callId, variables: { name: 'Ada' } },
    agent: { id: FRONT, name: 'Front desk', first_message: 'Hello, front desk.' },
    prompt: FRONT_PROMPT,
    squad: {
      id: 'squad_test',
      max_handoffs: opts.maxHandoffs ?? 10,
      members: [billing],
      handoffs: [
        { from_agent_id: FRONT, to_agent_id: BILLING, description: 'The caller asks about an invoice or a payment.', context: opts.context ?? 'full' },
        ...(opts.back ? [{ from_agent_id: BILLING, to_agent_id: FRONT, description: 'Anything that is not billing.', context: 'full' as const }] : []),
      ],
    },
  });
}

const system = (req: ChatRequest) => contentText(req.messages[0]!);
const toolNames = (req: ChatRequest) => (req.tools ?? []).map((t) => t.function.name);

describe('handoff tools', () => {
  it("names each tool handoff_to_<name>, sanitised, within 64 characters, apart from the agent's own tools", () => {
    expect(handoffToolName('Billing Desk')).toBe('handoff_to_billing_desk');
    expect(handoffToolName('  Réception / Après-vente!! ')).toBe('handoff_to_reception_apres_vente');
    expect(handoffToolName('日本語')).toBe('handoff_to_agent');
    const long = handoffToolName('x'.repeat(200));
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    const taken = new Set(['handoff_to_billing']);
    expect(handoffToolName('Billing', taken)).toBe('handoff_to_billing_2');
    expect(handoffToolName('billing', taken)).toBe('handoff_to_billing_3');
  });

  function squadWith(config: CallConfig) {
    const reports: unknown[] = [];
    let current = new agentsLlm.ChatContext();
    const hooks: SquadHooks = {
      current: () => ({ chatCtx: current }) as never,
      currentLlm: () => ({}) as never,
      makeAgent: () => ({}) as never,
      onSwitch: () => {
        current = new agentsLlm.ChatContext();
      },
      report: (h) => reports.push(h),
      logger: { info() {}, warn() {}, debug() {}, error() {} } as never,
    };
    return { squad: new Squad(config, hooks), reports };
  }

  it("gives each member one tool per hand-off it may make, with the hand-off's description", () => {
    const { squad } = squadWith(squadConfig('c1', { back: true }));
    const front = squad.toolsFor(FRONT);
    expect(front.map((t) => t.name)).toEqual(['handoff_to_billing_desk']);
    expect(front[0]!.description).toBe('The caller asks about an invoice or a payment.');
    expect(squad.toolsFor(BILLING).map((t) => t.name)).toEqual(['handoff_to_front_desk']);
    // A member with no hand-off gets no tool.
    expect(squadWith(squadConfig('c2')).squad.toolsFor(BILLING)).toEqual([]);
  });

  it('bounds the hand-offs of a call by max_handoffs, cycles included: past it the tool answers an error the agent can say', async () => {
    const { squad, reports } = squadWith(squadConfig('c3', { back: true, maxHandoffs: 3 }));
    const run = (from: string) => (squad.toolsFor(from)[0]!.execute as (a: unknown, o: unknown) => Promise<unknown>)({ reason: 'r' }, {});
    await run(FRONT);
    await run(BILLING);
    await run(FRONT);
    expect(squad.count).toBe(3);
    expect(squad.currentAgentId).toBe(BILLING);
    await expect(run(BILLING)).rejects.toThrow(/No more transfers/);
    expect(squad.currentAgentId).toBe(BILLING);
    expect(reports).toHaveLength(3);
    expect(reports[0]).toMatchObject({ from_agent_id: FRONT, to_agent_id: BILLING, reason: 'r', context: 'full' });
  });

  it('refuses a stale tool of an agent that no longer speaks', async () => {
    const { squad } = squadWith(squadConfig('c4', { back: true }));
    const frontTool = squad.toolsFor(FRONT)[0]!;
    await (frontTool.execute as (a: unknown, o: unknown) => Promise<unknown>)({}, {});
    await expect((frontTool.execute as (a: unknown, o: unknown) => Promise<unknown>)({}, {})).rejects.toThrow(/not available/);
  });

  it('summarises with the model, and falls back to the last lines when the model fails', async () => {
    const ctx = new agentsLlm.ChatContext();
    ctx.addMessage({ role: 'system', content: 'secret instructions' });
    ctx.addMessage({ role: 'user', content: 'My invoice 4471 is wrong.' });
    ctx.addMessage({ role: 'assistant', content: 'Let me pass you to billing.' });
    expect(conversationLines(ctx)).toEqual(['Caller: My invoice 4471 is wrong.', 'Agent: Let me pass you to billing.']);
    const openai = await import('@livekit/agents-plugin-openai');
    llm.setResponder((req) => (system(req) === SUMMARY_PROMPT ? { text: 'Ada disputes invoice 4471.' } : { text: 'no' }));
    const model = new openai.LLM({ model: 'fake-model', baseURL: llm.url, apiKey: 'sk-test' });
    expect(await summarize(model, ctx)).toBe('Ada disputes invoice 4471.');
    const sent = llm.requests.at(-1)!;
    expect(contentText(sent.messages[1]!)).toBe('Caller: My invoice 4471 is wrong.\nAgent: Let me pass you to billing.');
    expect(JSON.stringify(sent.messages)).not.toContain('secret instructions');
    const dead = new openai.LLM({ model: 'fake-model', baseURL: 'http://127.0.0.1:9/v1', apiKey: 'sk-test', maxRetries: 0 } as never);
    expect(await summarize(dead, ctx, { timeoutMs: 5000 })).toBe(
      '(The last lines of the conversation)\nCaller: My invoice 4471 is wrong.\nAgent: Let me pass you to billing.',
    );
  });
});

describe('hand-offs in a session', () => {
  const agentSegments = (h: Harness) => h.out.segmentStarts.length;

  async function toBilling(callId: string, opts: Parameters<typeof squadConfig>[1]) {
    llm.setResponder((req) => {
      if (system(req) === SUMMARY_PROMPT) return { text: 'Ada says invoice 4471 is wrong.' };
      if (system(req).startsWith(FRONT_PROMPT) && toolNames(req).includes('handoff_to_billing_desk') && !req.messages.some((m) => m.role === 'tool')) {
        return { toolCalls: [{ name: 'handoff_to_billing_desk', arguments: { reason: 'invoice question' } }] };
      }
      return { text: `Billing answer to: ${lastUserText(req)}` };
    });
    const config = squadConfig(callId, opts);
    const h = await startCall(config, { llmUrl: llm.url, api });
    await waitUntil(() => !h.out.playing && agentSegments(h) >= 1 && h.call.session.agentState === 'listening', 60_000, 'greeting played');
    const before = llm.requests.length;
    await h.line.say(await synthesize('I would like to book a table for two'));
    await api.waitFor((r) => r.some((x) => x.kind === 'handoff' && x.callId === callId), 60_000);
    return { h, before };
  }

  it('full context: the next agent greets at once and its model gets its own prompt and tools, and the conversation so far', async () => {
    const { h, before } = await toBilling('call_squad_full', { context: 'full' });
    await waitUntil(() => h.call.messages().some((m) => m.content === 'Billing here, Ada.'), 60_000, 'billing greeting');
    expect(h.call.agent.id).toBe(BILLING);
    // The caller's next turn goes to the billing agent's model, with the history and the billing prompt.
    await waitUntil(() => !h.out.playing && h.call.session.agentState === 'listening', 60_000, 'billing greeting played');
    await h.line.say(await synthesize('I would like to book a table for two'));
    await waitUntil(() => h.call.messages().some((m) => m.content.startsWith('Billing answer')), 60_000, 'billing reply');
    const billingReq = llm.requests.slice(before).find((r) => system(r).startsWith(BILLING_PROMPT))!;
    expect(billingReq).toBeTruthy();
    expect(toolNames(billingReq)).not.toContain('handoff_to_billing_desk');
    const said = billingReq.messages.filter((m) => m.role === 'user').map(contentText);
    expect(said.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(billingReq.messages)).not.toContain(FRONT_PROMPT);
    const report = await h.call.end('user_hangup');
    await h.line.close();
    const agents = report.messages.filter((m) => m.role === 'agent' && m.content);
    expect(agents[0]).toMatchObject({ content: 'Hello, front desk.', agent_id: FRONT });
    expect(agents.find((m) => m.content === 'Billing here, Ada.')).toMatchObject({ agent_id: BILLING });
    expect(agents.find((m) => m.content.startsWith('Billing answer'))).toMatchObject({ agent_id: BILLING });
    expect(report.messages.filter((m) => m.role === 'user').every((m) => m.agent_id === undefined)).toBe(true);
    const handoff = api.reports.find((r) => r.kind === 'handoff' && r.callId === 'call_squad_full')!;
    expect(handoff.body).toMatchObject({ from_agent_id: FRONT, to_agent_id: BILLING, reason: 'invoice question', context: 'full' });
    // Each agent's own latency: the front desk's greeting, the billing desk's greeting and reply.
    expect(Object.keys(report.agent_latency ?? {}).sort()).toEqual([BILLING, FRONT].sort());
    expect(report.agent_latency![BILLING]!.llm_ttft.samples).toBeGreaterThanOrEqual(1);
    expect(report.agent_latency![FRONT]!.tts_ttfb.samples).toBeGreaterThanOrEqual(1);
    expect(report.agent_latency![FRONT]!.llm_ttft.samples).toBe(0);
  }, 180_000);

  it("summary: the next agent's model gets the summary written by the handing agent's model, not the conversation", async () => {
    const { h, before } = await toBilling('call_squad_summary', { context: 'summary', billingGreeting: null });
    // Without a greeting, the billing agent speaks first, once the summary is in its context.
    await waitUntil(() => h.call.messages().some((m) => m.content.startsWith('Billing answer')), 60_000, 'billing reply');
    const sent = llm.requests.slice(before);
    const summaryReq = sent.find((r) => system(r) === SUMMARY_PROMPT)!;
    expect(contentText(summaryReq.messages[1]!)).toMatch(/^Caller: .*table/m);
    const billingReq = sent.find((r) => system(r).startsWith(BILLING_PROMPT))!;
    const text = JSON.stringify(billingReq.messages);
    expect(text).toContain(SUMMARY_HEADER);
    expect(text).toContain('Ada says invoice 4471 is wrong.');
    expect(billingReq.messages.filter((m) => m.role === 'user' && /table/.test(contentText(m)))).toEqual([]);
    const report = await h.call.end('user_hangup');
    await h.line.close();
    expect(report.messages.find((m) => m.content.startsWith('Billing answer'))).toMatchObject({ agent_id: BILLING });
  }, 180_000);
});
