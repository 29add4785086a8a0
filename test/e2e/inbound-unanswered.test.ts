// Inbound calls that no worker takes, over the real SIP bridge with the media worker stopped: LiveKit drops
// the number's dispatch, the control plane notices (participant_joined webhook, then the inbound watch job),
// dispatches the number's fallback agent, and when that is not taken either plays the number's
// voicemail_message itself (no worker) and fails the call with call.failed `agent_unavailable`. Without a
// message the ringing INVITE is refused with 486 long before the trunk's ringing timeout.
// A squad as the fallback is opened on its entry agent with the squad, as the worker would open it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentDispatchClient } from 'livekit-server-sdk';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createStandInModel } from '../support/stand-in-agent.ts';
import { spokenSeconds } from '../support/speech.ts';
import { SipPhone } from '../support/sip-phone.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { untilEvery } from '../support/e2e.ts';
import { soundSeconds } from '../support/phone-audio.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';

const MESSAGE = 'Sorry, nobody can take your call right now. Please call again later.';
let stack: TestStack;
let sql: Sql;
let modelId: string;
let hooks: Receiver;

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(100);

/**
 * Waits for LiveKit to list the agent dispatch made for `call` in its room. The control plane commits the call's
 * row and then makes the dispatch, so a call seen through the API may not have it yet; it stays listed while it
 * waits for a worker (none takes it here), until the fallback wait ends.
 */
async function dispatchedFor(call: { id: string; room_name: string }): Promise<void> {
  const dispatches = new AgentDispatchClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  await until(`the dispatch of call ${call.id}`, async () => (await dispatches.listDispatch(call.room_name)).some((d) => JSON.parse(d.metadata).call_id === call.id) || null, 8_000);
}

type CallRow = { id: string; status: string; agent_id: string; end_reason: string | null; room_name: string; metadata: Record<string, unknown>; messages: { role: string; content: string }[] | null };
const callsTo = (number: string) => sql<CallRow[]>`select id, status, agent_id, end_reason, room_name, metadata, messages from calls where to_number = ${number} order by created_at`;

async function createAgent(name: string) {
  const agent = await api('POST', '/v1/agents', { name, llm_id: modelId, transcriber: { provider: 'local' }, tts: { provider: 'local' }, first_message: 'Hello.' });
  expect(agent.status).toBe(201);
  return agent.body.id as string;
}

async function buy(agent: string, routing: Record<string, unknown>) {
  const res = await api('POST', '/v1/phone-numbers', { agent_id: agent, area_code: '415', inbound_routing: routing });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { id: string; phone_number: string };
}

/** Loud samples from the first to the last after `from`, in seconds (8 kHz). */
const soundAfter = (phone: SipPhone, from = 0) => soundSeconds(phone.received, from);

beforeAll(async () => {
  hooks = await new Receiver().start();
  ({ stack, sql } = await fixture.start({
    org: 'unanswered',
    // No media worker: every dispatch goes untaken.
    worker: false,
    sip: true,
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      INBOUND_ANSWER_WAIT_SECONDS: '2',
      // Long enough for the test to see the fallback's dispatch in LiveKit while it waits.
      INBOUND_FALLBACK_WAIT_SECONDS: '10',
      SIP_RINGING_TIMEOUT_SECONDS: '90',
    },
  }));
  modelId = await createStandInModel(api, 'http://127.0.0.1:9/v1');
  const hook = await api('POST', '/v1/webhooks', { name: 'failures', url: hooks.url('/unanswered'), events: ['call.failed'] });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);
}, 240_000);

afterAll(async () => {
  await fixture.stop();
  await hooks?.close();
});

describe.skipIf(!sipBridgeVersion())('inbound calls no worker takes', () => {
  it('tries the fallback agent, then plays the voicemail message without a worker, then fails with agent_unavailable', { timeout: 240_000 }, async () => {
    const primary = await createAgent('Front desk');
    const fallback = await createAgent('Overflow desk');
    const number = await buy(primary, { fallback: { agent_id: fallback }, voicemail_message: MESSAGE });
    const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: number.phone_number, from: '+15550100177' });
    try {
      // The primary's dispatch went untaken: the control plane opened the call for the fallback agent and
      // dispatched it by the call's id (LiveKit lists that dispatch while it waits for a worker).
      const opened = await until('the fallback call', async () => (await callsTo(number.phone_number)).find((c) => c.agent_id === fallback));
      expect(opened.metadata).toMatchObject({ routed_via: 'fallback', unanswered_by: [primary] });
      expect(phone.answered).toBe(false);
      await dispatchedFor(opened);

      // Not taken either: the caller is answered by the control plane, hears the message, and is hung up on.
      await phone.waitFor('the answer', () => phone.answered, 90_000);
      await phone.startMedia();
      await phone.waitFor('the BYE', () => phone.ended, 90_000);
      const heard = soundAfter(phone);
      const expected = await spokenSeconds(MESSAGE);
      expect(heard, `heard ${heard.toFixed(2)} s, the message is ${expected.toFixed(2)} s`).toBeGreaterThan(expected * 0.7);
      expect(heard).toBeLessThan(expected * 1.6);
    } finally {
      await phone.close();
    }
    const [call, ...more] = await callsTo(number.phone_number);
    expect(more).toEqual([]);
    expect(call).toMatchObject({
      status: 'failed',
      end_reason: 'dispatch_timeout',
      agent_id: fallback,
      metadata: { routed_via: 'fallback', unanswered_by: [primary, fallback], voicemail_played: true },
      messages: [{ role: 'agent', content: MESSAGE }],
    });
    const failedEvent = () => hooks.requests.find((r) => r.json?.call_id === call!.id && r.json?.event === 'call.failed');
    await hooks.until(() => !!failedEvent(), `call.failed for ${call!.id}`, 60_000);
    expect(failedEvent()!.json).toMatchObject({ event: 'call.failed', call_id: call!.id, reason: 'agent_unavailable', to_number: number.phone_number, from_number: '+15550100177' });
  });

  it('without a fallback or a message: the ringing INVITE is refused (486) and the call fails with agent_unavailable', { timeout: 240_000 }, async () => {
    const primary = await createAgent('Lonely desk');
    const number = await buy(primary, {});
    const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: number.phone_number, from: '+15550100178' });
    try {
      await phone.waitFor('a refusal', () => phone.answered || phone.finalStatus, 90_000);
      expect(phone.answered, phone.messages.slice(-2000)).toBe(false);
      expect(phone.finalStatus, phone.messages.slice(-2000)).toBe(486);
    } finally {
      await phone.close();
    }
    const [call, ...more] = await callsTo(number.phone_number);
    expect(more).toEqual([]);
    expect(call).toMatchObject({ status: 'failed', end_reason: 'dispatch_timeout', agent_id: primary, metadata: { routed_via: 'primary', unanswered_by: [primary] } });
    expect(call!.messages ?? []).toEqual([]);
    const [event] = await sql<{ payload: Record<string, unknown> }[]>`select payload from events where call_id = ${call!.id} and type = 'call.failed'`;
    expect(event!.payload).toMatchObject({ reason: 'agent_unavailable' });
  });

  it("a squad as the fallback: the control plane opens the call on the squad's entry agent, with the squad, and dispatches it", { timeout: 240_000 }, async () => {
    const primary = await createAgent('Day desk');
    const front = await createAgent('Night front');
    const billing = await createAgent('Night billing');
    const squad = await api('POST', '/v1/squads', {
      name: 'Night squad',
      agent_ids: [front, billing],
      entry_agent_id: front,
      handoffs: [{ from_agent_id: front, to_agent_id: billing, description: 'Billing' }],
    });
    expect(squad.status, JSON.stringify(squad.body)).toBe(201);
    const number = await buy(primary, { fallback: { squad_id: squad.body.id } });
    const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: number.phone_number, from: '+15550100179' });
    let callId: string;
    try {
      const opened = await until('the fallback call', async () => (await callsTo(number.phone_number)).find((c) => c.agent_id === front));
      callId = opened.id;
      expect(opened.metadata).toMatchObject({ routed_via: 'fallback', unanswered_by: [primary] });
      const [row] = await sql<{ squad_id: string | null }[]>`select squad_id from calls where id = ${opened.id}`;
      expect(row!.squad_id).toBe(squad.body.id);
      await dispatchedFor(opened);
      // Not taken either, and no message: the ringing INVITE is refused.
      await phone.waitFor('a refusal', () => phone.answered || phone.finalStatus, 90_000);
      expect(phone.finalStatus, phone.messages.slice(-2000)).toBe(486);
    } finally {
      await phone.close();
    }
    const call = (await api('GET', `/v1/calls/${callId!}`)).body;
    expect(call).toMatchObject({ status: 'failed', agent_id: front, squad_id: squad.body.id });
  });
});
