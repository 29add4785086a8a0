// Inbound phone calls end to end: a number bought from the simulated carrier is wired to the real LiveKit
// SIP bridge; SIPp (a real SIP user agent) dials it; the agent answers and speaks its first message (the RTP
// is decoded and recognised offline); then the call record, its events and usage are checked. Routing cases,
// concurrent calls, DTMF and a transfer (REFER received by the caller) follow on the same stack.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useStack, sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { createTestDatabase } from '../support/db.ts';
import { startFakeOpenAI, lastUserText, type FakeOpenAI } from '../support/fake-openai.ts';
import { transcribe } from '../support/speech.ts';
import { SipPhone } from '../support/sip-phone.ts';
import { createSql, type Sql } from '../../control-plane/src/db/connect.ts';
import { createOrgWithKey } from '../../control-plane/src/modules/workspace/orgs.ts';

const FIRST_MESSAGE = 'Hello, thank you for calling Acme Dental.';
const OTHER_FIRST = 'Good morning, you have reached the night desk.';
const GRAMMAR = `#JSGF V1.0;
grammar heard;
public <s> = hello thank you for calling acme dental
  | good morning you have reached the night desk
  | please hold while i transfer your call
  | sorry we are closed on sundays
  | you pressed four;`;

let stack: TestStack;
let llm: FakeOpenAI;
let sql: Sql;
let dropDb: () => Promise<void>;
let key: string;
let orgId: string;
let modelId: string;
let agentId: string;

async function api<T = any>(method: string, path: string, body?: unknown) {
  const res = await fetch(stack.controlPlaneUrl + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) as T };
}

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The agent's first utterance: from the first loud sample to 1.2 s of quiet. */
async function heardUtterance(phone: SipPhone, from = 0, timeoutMs = 90_000): Promise<string> {
  await phone.waitFor(
    'the agent to speak and pause',
    () => {
      const r = phone.received;
      let first = -1;
      let last = -1;
      for (let i = from; i < r.length; i++) {
        if (Math.abs(r[i]!) > 1500) {
          if (first < 0) first = i;
          last = i;
        }
      }
      return first >= 0 && r.length - last > 8000 * 1.2;
    },
    timeoutMs,
  );
  return transcribe(phone.audio(from), { jsgf: GRAMMAR });
}

async function createAgent(name: string, firstMessage: string, extra: Record<string, unknown> = {}) {
  const agent = await api('POST', '/v1/agents', {
    name,
    llm_id: modelId,
    transcriber: { provider: 'local' },
    tts: { provider: 'local', model: 'festival', voice_id: 'us-slt-hts' },
    first_message: firstMessage,
    silence_timeout_seconds: 120,
    ...extra,
  });
  expect(agent.status).toBe(201);
  return agent.body.id as string;
}

async function buy(agent: string, extra: Record<string, unknown> = {}) {
  const res = await api('POST', '/v1/phone-numbers', { agent_id: agent, area_code: '415', ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { id: string; phone_number: string; inbound_trunk_id: string; dispatch_rule_id: string; outbound_trunk_id: string };
}

const callsTo = (number: string) => sql<{ id: string; status: string; agent_id: string; end_reason: string | null }[]>`
  select id, status, agent_id, end_reason from calls where to_number = ${number} order by created_at`;

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    const system = String(req.messages[0]?.content ?? '');
    if (system.startsWith('You analyse')) return { text: JSON.stringify({ summary: 'A caller rang the practice.', outcome: 'question_answered' }) };
    const said = lastUserText(req);
    if (/pressed 4/.test(said)) return { text: 'You pressed four.' };
    if (/transfer/i.test(said)) return { toolCalls: [{ name: 'transfer_call', arguments: {} }] };
    return { text: 'Sorry, we are closed on Sundays.' };
  });
  const db = await createTestDatabase();
  dropDb = db.drop;
  stack = await useStack({
    controlPlane: true,
    worker: true,
    sip: true,
    env: { DATABASE_URL: db.url, SSRF_ALLOWLIST: '127.0.0.1,localhost', WORKER_SILENCE_SECONDS: '15', DISPATCH_TIMEOUT_SECONDS: '30' },
  });
  sql = createSql(db.url, { max: 2 });
  ({ api_key: key, org_id: orgId } = (await createOrgWithKey(sql, 'inbound')) as { api_key: string; org_id: string });
  const model = await api('POST', '/v1/models', { name: 'stand-in', model: 'fake-model', base_url: llm.url, system_prompt: 'You are the receptionist of Acme Dental.' });
  expect(model.status).toBe(201);
  modelId = model.body.id;
  agentId = await createAgent('Receptionist', FIRST_MESSAGE);
}, 240_000);

afterAll(async () => {
  await sql?.end();
  await llm?.close();
  await dropDb?.();
});

describe.skipIf(!sipBridgeVersion())('inbound phone calls over the SIP bridge', () => {
  it('buys a number, a SIP caller reaches the agent, hears the first message, and the call is recorded', { timeout: 240_000 }, async () => {
    const search = await api('GET', '/phone-numbers/search?country=US&area_code=415&limit=3');
    expect(search.status).toBe(200);
    expect(search.body.items).toHaveLength(3);
    expect(search.body.items[0]).toMatchObject({ country: 'US', region: 'CA', locality: 'San Francisco', capabilities: { voice: true, sms: true } });
    const number = await buy(agentId, { phone_number: search.body.items[0].phone_number, friendly_name: 'Front desk' });
    expect(number).toMatchObject({ phone_number: search.body.items[0].phone_number, provider: 'simulated', status: 'active', agent_id: agentId, sms_capable: true });
    expect(number.inbound_trunk_id).toMatch(/^ST_/);
    expect(number.dispatch_rule_id).toMatch(/^SDR_/);
    expect(number.outbound_trunk_id).toMatch(/^ST_/);

    const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: number.phone_number, from: '+15550100199' });
    try {
      await phone.startMedia();
      expect(await heardUtterance(phone)).toBe('hello thank you for calling acme dental');
      await phone.hangUp();
    } finally {
      await phone.close();
    }

    const [row] = await callsTo(number.phone_number);
    const call = await until('the call to complete', async () => {
      const c = (await api('GET', `/v1/calls/${row!.id}`)).body;
      return c.status === 'completed' && c.messages ? c : null;
    });
    expect(call).toMatchObject({
      type: 'inbound',
      direction: 'inbound',
      agent_id: agentId,
      to_number: number.phone_number,
      from_number: '+15550100199',
      end_reason: 'user_hangup',
    });
    expect(call.carrier_call_sid).toBe(phone.sipCallId);
    expect(call.started_at).toBeTruthy();
    expect(call.ended_at).toBeTruthy();
    expect(call.messages[0]).toMatchObject({ role: 'agent', content: FIRST_MESSAGE });
    expect(call.latency.tts_ttfb.samples).toBeGreaterThanOrEqual(1);
    // The simulated carrier's inbound rate (1 cent a minute) times the billed minutes (rounded up).
    expect(call.cost_cents).toBe(Math.ceil(call.duration_seconds / 60) * 1);
    const events = await sql<{ type: string }[]>`select type from events where call_id = ${call.id} order by seq`;
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['call.started', 'call.ended']));
    expect(events.findIndex((e) => e.type === 'call.started')).toBeLessThan(events.findIndex((e) => e.type === 'call.ended'));
    const usage = await api('GET', '/v1/usage');
    expect(usage.body.cost_cents_this_month).toBe(call.cost_cents);
    expect(usage.body.calls_made_today).toBe(1);
  });
});
