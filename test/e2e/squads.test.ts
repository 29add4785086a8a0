// A squad's web call end to end: the real supervisor starts LiveKit, the control plane and a media worker; a
// real WebRTC client (rtc-node) joins a call started on a squad of two agents (a receptionist that hands off to
// billing). The LLM stand-in calls `handoff_to_billing` on the caller's first turn; the billing agent then says
// its own first line, in the same room and session, and answers the caller's next turn with its own prompt.
// Checked: what the caller hears, who said each message on the record, the call's hand-offs, the delivered
// `call.handoff` webhook, the system prompt of the LLM requests before and after the hand-off, and the end.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { contentText, startFakeOpenAI, type ChatRequest, type FakeOpenAI } from '../support/fake-openai.ts';
import { RtcClient, disposeRtc } from '../support/rtc-client.ts';
import { synthesize, transcribe } from '../support/speech.ts';
import { untilEvery } from '../support/e2e.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';

const RECEPTION_PROMPT = 'You are the receptionist of Acme Dental. Send billing questions to the billing desk.';
const BILLING_PROMPT = 'You are the billing desk of Acme Dental. Answer invoice questions in one short sentence.';
const FIRST_MESSAGE = 'Hello, thank you for calling Acme Dental.';
const BILLING_FIRST = 'This is the billing desk speaking.';
const BILLING_ANSWER = 'Your invoice was paid last week.';
const HANDOFF_TOOL = 'handoff_to_billing';
// What the client may hear: the expected sentences and distractors. With a grammar pocketsphinx picks the
// closest sentence, so hearing the right one (not a distractor) shows the audio carried it.
const GRAMMAR = `#JSGF V1.0;
grammar heard;
public <s> = hello thank you for calling acme dental
  | this is the billing desk speaking
  | your invoice was paid last week
  | please hold while i transfer your call
  | sorry we are closed on sundays;`;

let llm: FakeOpenAI;
let sql: Sql;
let receptionist: string;
let billing: string;
let squadId: string;
const received: { body: Record<string, any> }[] = [];
let receiver: http.Server;

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250);

const systemText = (req: ChatRequest) => contentText(req.messages.find((m) => m.role === 'system') ?? { role: 'system', content: '' });
const isAnalysis = (req: ChatRequest) => String(req.messages[0]?.content ?? '').startsWith('You analyse');
const hasUserTurn = (req: ChatRequest) => req.messages.some((m) => m.role === 'user' && contentText(m).trim() !== '');
const toolNames = (req: ChatRequest) => (req.tools ?? []).map((t) => t.function.name);

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    if (isAnalysis(req)) return { text: JSON.stringify({ summary: 'The caller asked about an invoice.', outcome: 'question_answered' }) };
    const system = systemText(req);
    // The receptionist hands any caller's turn to billing (its STT words do not matter here).
    if (system.includes(RECEPTION_PROMPT) && hasUserTurn(req) && toolNames(req).includes(HANDOFF_TOOL)) {
      return { toolCalls: [{ name: HANDOFF_TOOL, arguments: { reason: 'invoice question' } }] };
    }
    if (system.includes(BILLING_PROMPT)) return { text: BILLING_ANSWER };
    return { text: 'Please hold while I transfer your call.' };
  });
  receiver = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      received.push({ body: JSON.parse(raw) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));

  ({ sql } = await fixture.start({
    org: 'e2e-squads',
    worker: true,
    env: { SSRF_ALLOWLIST: '127.0.0.1,localhost', WORKER_SILENCE_SECONDS: '15', DISPATCH_TIMEOUT_SECONDS: '30', REAP_DELAY_SECONDS: '1' },
  }));

  const agent = async (name: string, prompt: string, firstMessage: string, voice: string) => {
    const modelId = await createStandInModel(api, llm.url, { name: `${name} model`, system_prompt: prompt });
    return createLocalAgent(api, { name, llm_id: modelId, tts: { provider: 'local', model: 'festival', voice_id: voice }, first_message: firstMessage });
  };
  receptionist = await agent('Receptionist', RECEPTION_PROMPT, FIRST_MESSAGE, 'us-slt-hts');
  billing = await agent('Billing', BILLING_PROMPT, BILLING_FIRST, 'us-slt-hts');
  const squad = await api('POST', '/v1/squads', {
    name: 'Front and billing',
    agent_ids: [receptionist, billing],
    entry_agent_id: receptionist,
    handoffs: [{ from_agent_id: receptionist, to_agent_id: billing, description: 'Questions about invoices, payments and bills', context: 'full' }],
  });
  expect(squad.status, JSON.stringify(squad.body)).toBe(201);
  squadId = squad.body.id;
  const hook = await api('POST', '/v1/webhooks', {
    name: 'e2e-squads',
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
    events: ['call.handoff', 'call.ended'],
  });
  expect(hook.status).toBe(201);
}, 180_000);

afterAll(async () => {
  await disposeRtc();
  await fixture.stop();
  receiver?.close();
  await llm?.close();
});

describe("a squad's web call through LiveKit", () => {
  it('the receptionist hands the caller to billing, which greets in its own words and answers with its own prompt', async () => {
    const created = await api('POST', '/v1/calls/web', { squad_id: squadId });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const callId = created.body.id as string;
    expect((await api('GET', `/v1/calls/${callId}`)).body).toMatchObject({ agent_id: receptionist, squad_id: squadId });

    const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
    try {
      await client.publishMicrophone();
      const agentAudio = client.record({});

      // 1. The entry agent's first message.
      const greeting = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      expect(await transcribe(greeting, { jsgf: GRAMMAR })).toBe('hello thank you for calling acme dental');

      // 2. The caller's first turn: the receptionist's model calls the hand-off tool; billing says its first line.
      agentAudio.reset();
      await client.speak(await synthesize('I have a question about my invoice'), { trailingSilenceMs: 1500 });
      const billingGreeting = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      expect(await transcribe(billingGreeting, { jsgf: GRAMMAR })).toBe('this is the billing desk speaking');

      // 3. The caller's next turn goes to billing's model, with billing's prompt.
      agentAudio.reset();
      await client.speak(await synthesize('Was my invoice paid'), { trailingSilenceMs: 1500 });
      const answer = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      expect(await transcribe(answer, { jsgf: GRAMMAR })).toBe('your invoice was paid last week');
    } finally {
      await client.leave();
    }

    // Every model request after the hand-off is billing's: its system prompt, not the receptionist's, and no
    // hand-off tool (billing has no hand-off of its own). The receptionist's last request is the hand-off (a
    // preemptive generation may have asked the same turn before it).
    const turns = llm.requests.filter((r) => !isAnalysis(r));
    const lastReception = turns.findLastIndex((r) => systemText(r).includes(RECEPTION_PROMPT));
    expect(toolNames(turns[lastReception]!)).toContain(HANDOFF_TOOL);
    const after = turns.slice(lastReception + 1);
    expect(after.length).toBeGreaterThanOrEqual(1);
    for (const r of after) {
      expect(systemText(r)).toContain(BILLING_PROMPT);
      expect(systemText(r)).not.toContain(RECEPTION_PROMPT);
      expect(toolNames(r)).not.toContain(HANDOFF_TOOL);
    }
    // Billing's prompt appears only after the hand-off.
    expect(turns.slice(0, lastReception + 1).some((r) => systemText(r).includes(BILLING_PROMPT))).toBe(false);
    // With `context: full` billing's model sees the conversation so far, the receptionist's greeting included.
    expect(after[0]!.messages.some((m) => m.role === 'assistant' && contentText(m).includes(FIRST_MESSAGE))).toBe(true);

    // 4. The caller hung up: the call completes, and its record says who spoke each line.
    const call = await until(
      'the completed call with its conversation',
      async () => {
        const c = (await api('GET', `/v1/calls/${callId}`)).body;
        return c.status === 'completed' && c.messages?.some((m: { content: string }) => m.content === BILLING_ANSWER) ? c : null;
      },
      90_000,
    );
    expect(call).toMatchObject({ agent_id: receptionist, squad_id: squadId, end_reason: 'user_hangup' });
    type Message = { role: string; content: string; agent_id?: string; tool_call?: { name: string; arguments: string } };
    const messages = call.messages as Message[];
    // What the agents said (tool calls are agent messages too, with empty content and a `tool_call`).
    const spoken = messages.filter((m) => m.role === 'agent' && !m.tool_call).map((m) => [m.content, m.agent_id]);
    expect(spoken.slice(0, 2)).toEqual([
      [FIRST_MESSAGE, receptionist],
      [BILLING_FIRST, billing],
    ]);
    // Then billing's answers (one per caller turn the worker's STT made of the question).
    expect(spoken.length).toBeGreaterThanOrEqual(3);
    for (const line of spoken.slice(2)) expect(line).toEqual([BILLING_ANSWER, billing]);
    // The hand-off tool call is the receptionist's, and comes before billing's first line.
    const tools = messages.filter((m) => m.tool_call);
    expect(tools.map((m) => [m.tool_call!.name, m.agent_id])).toEqual([[HANDOFF_TOOL, receptionist]]);
    expect(JSON.parse(tools[0]!.tool_call!.arguments)).toEqual({ reason: 'invoice question' });
    expect(messages.indexOf(tools[0]!)).toBeLessThan(messages.findIndex((m) => m.content === BILLING_FIRST));
    expect(call.messages.filter((m: { role: string }) => m.role === 'user').length).toBeGreaterThanOrEqual(2);
    expect(call.handoffs).toEqual([{ from_agent_id: receptionist, to_agent_id: billing, reason: 'invoice question', context: 'full', at: expect.any(String) }]);
    expect(Object.keys(call.agent_latency ?? {}).sort()).toEqual([receptionist, billing].sort());

    // 5. call.handoff, recorded and delivered to the webhook, before call.ended.
    const [event] = await sql<{ payload: Record<string, unknown> }[]>`select payload from events where call_id = ${callId} and type = 'call.handoff'`;
    expect(event!.payload).toMatchObject({ call_id: callId, squad_id: squadId, from_agent_id: receptionist, to_agent_id: billing, reason: 'invoice question', index: 1 });
    const delivered = await until('the webhooks', async () => {
      const mine = received.filter((r) => r.body.call_id === callId);
      return mine.some((r) => r.body.event === 'call.ended') ? mine : null;
    });
    expect(delivered.map((r) => r.body.event)).toEqual(['call.handoff', 'call.ended']);
    expect(delivered[0]!.body).toMatchObject({ call_id: callId, agent_id: receptionist, squad_id: squadId, from_agent_id: receptionist, to_agent_id: billing, index: 1 });
  }, 300_000);
});
