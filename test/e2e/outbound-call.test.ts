// Outbound phone calls end to end: POST /v1/calls on the real control plane, the dial job, LiveKit's
// CreateSIPParticipant through the real SIP bridge, the simulated carrier's termination edge, and SIPp as the
// callee (answering, busy, never answering). The answered call runs the real media worker: the agent greets,
// the callee asks a question in synthesized speech, the agent answers, the call is stopped.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { startFakeOpenAI, lastUserText, type FakeOpenAI } from '../support/fake-openai.ts';
import { synthesize, writeWav, spokenSeconds } from '../support/speech.ts';
import { SipCallee } from '../support/sip-callee.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { until } from '../support/e2e.ts';
import { utterance } from '../support/phone-audio.ts';
import { freeTcpUdpPort } from '../../scripts/stack/ports.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';
import type { SimulatedEdge } from '../../control-plane/src/modules/phone-numbers/carriers/simulated-edge.ts';
import { addOutboundNumber, startCalleeEdge } from '../support/outbound-edge.ts';

const FIRST_MESSAGE = 'Hello, this is Acme Dental calling about your appointment.';
const ANSWER = 'We open at nine in the morning.';

const FROM = '+14155550100';
const TO_BUSY = '+15550000001';
const TO_NO_ANSWER = '+15550000002';
const TO_ANSWER = '+15550000003';
const TO_DEAD = '+15550000009';
const TO_UNKNOWN = '+19995550123';
const RING_TIMEOUT = 8;

let stack: TestStack;
let llm: FakeOpenAI;
let sql: Sql;
let orgId: string;
let agentId: string;
let edge: SimulatedEdge;
let busy: SipCallee;
let noAnswer: SipCallee;
let answer: SipCallee;
let hooks: Receiver;

const fixture = stackFixture();
const { api } = fixture;
const getCall = async (id: string) => (await api('GET', `/v1/calls/${id}`)).body;
const finalCall = (id: string, timeoutMs = 60_000) =>
  until(`call ${id} to end`, async () => {
    const c = await getCall(id);
    return c.status === 'completed' || c.status === 'failed' ? c : null;
  }, timeoutMs);

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    const system = String(req.messages[0]?.content ?? '');
    if (system.startsWith('You analyse')) return { text: JSON.stringify({ summary: 'The callee asked about opening hours.', outcome: 'question_answered' }) };
    return { text: ANSWER };
  });
  [busy, noAnswer, answer] = await Promise.all([SipCallee.start('busy'), SipCallee.start('no-answer'), SipCallee.start('answer')]);
  const deadPort = await freeTcpUdpPort();
  edge = await startCalleeEdge([
    [TO_BUSY, busy],
    [TO_NO_ANSWER, noAnswer],
    [TO_ANSWER, answer],
    [TO_DEAD, { port: deadPort }],
  ]);
  hooks = await new Receiver().start();

  ({ stack, sql, orgId } = await fixture.start({
    org: 'outbound',
    worker: true,
    sip: true,
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      WORKER_SILENCE_SECONDS: '15',
      DISPATCH_TIMEOUT_SECONDS: '30',
      OUTBOUND_RING_TIMEOUT_SECONDS: String(RING_TIMEOUT),
      STOP_REPORT_GRACE_SECONDS: '20',
    },
  }));
  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'You are the receptionist of Acme Dental.' });
  agentId = await createLocalAgent(api, { name: 'Caller', llm_id: modelId, first_message: FIRST_MESSAGE });
  // The number and its outbound trunk (as a purchase from the simulated carrier leaves them), on the edge.
  await addOutboundNumber(stack, sql, edge, { trunkName: 'outbound-test', orgId, from: FROM, agentId });
}, 240_000);

afterAll(async () => {
  await fixture.stop();
  await Promise.all([busy?.close(), noAnswer?.close(), answer?.close()]);
  await edge?.close();
  await hooks?.close();
  await llm?.close();
});

/** The call's own webhook deliveries, verified with the org's signing secret. */
async function failedEventFor(callId: string) {
  await hooks.until(() => hooks.requests.some((r) => r.json?.call_id === callId && r.json?.event === 'call.failed'), `call.failed for ${callId}`, 30_000);
  const req = hooks.requests.find((r) => r.json?.call_id === callId && r.json?.event === 'call.failed')!;
  return req;
}

describe.skipIf(!sipBridgeVersion())('outbound phone calls over the SIP bridge', () => {
  it('a callee answering 486 fails the call with reason busy, sent to its webhook_url', { timeout: 90_000 }, async () => {
    const created = await api('POST', '/v1/calls', { agent_id: agentId, to_number: TO_BUSY, webhook_url: hooks.url('/call') });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ type: 'outbound', status: 'queued', direction: 'outbound', to_number: TO_BUSY, from_number: FROM });
    const call = await finalCall(created.body.id);
    expect(call).toMatchObject({ status: 'failed', end_reason: 'busy', duration_seconds: 0 });
    expect(busy.invites).toHaveLength(1);
    const req = await failedEventFor(call.id);
    expect(req.json).toMatchObject({ event: 'call.failed', call_id: call.id, reason: 'busy', to_number: TO_BUSY, from_number: FROM });
    // Signed with the org's call signing secret (Standard Webhooks), and recorded as a delivery.
    const signing = await api('GET', '/v1/webhooks/call-signing-secret');
    expect(signing.status).toBe(200);
    expect(() => new Webhook(signing.body.secret).verify(req.body, req.headers as Record<string, string>)).not.toThrow();
    // The attempt is recorded once the receiver's answer is back, which can be after the request arrived here.
    const deliveries = await until('the delivery record', async () => {
      const rows = await sql`select status, attempt from webhook_deliveries where event = 'call.failed' and url = ${hooks.url('/call')} and event_id = ${req.json.id}`;
      return rows.length > 0 ? rows : null;
    });
    expect(deliveries).toEqual([{ status: 'succeeded', attempt: 1 }]);
  });

  it('a callee that never answers fails with no_answer after the ring timeout', { timeout: 90_000 }, async () => {
    const created = await api('POST', '/v1/calls', { agent_id: agentId, to_number: TO_NO_ANSWER, webhook_url: hooks.url('/call') });
    expect(created.status).toBe(201);
    const ringing = await until('the call to ring', async () => ((await getCall(created.body.id)).status === 'initiated' ? true : null));
    expect(ringing).toBe(true);
    const call = await finalCall(created.body.id);
    expect(call).toMatchObject({ status: 'failed', end_reason: 'no_answer' });
    expect(noAnswer.invites).toHaveLength(1);
    expect((await failedEventFor(call.id)).json).toMatchObject({ reason: 'no_answer' });
  });

  it('an unknown number fails with invalid_number in seconds; a dead destination with no_answer', { timeout: 90_000 }, async () => {
    const unknown = await api('POST', '/v1/calls', { agent_id: agentId, to_number: TO_UNKNOWN, webhook_url: hooks.url('/call') });
    const dead = await api('POST', '/v1/calls', { agent_id: agentId, to_number: TO_DEAD });
    expect([unknown.status, dead.status]).toEqual([201, 201]);
    expect(await finalCall(unknown.body.id, 20_000)).toMatchObject({ status: 'failed', end_reason: 'invalid_number' });
    expect((await failedEventFor(unknown.body.id)).json).toMatchObject({ reason: 'invalid_number' });
    expect(await finalCall(dead.body.id, 20_000)).toMatchObject({ status: 'failed', end_reason: 'no_answer' });
  });

  it('an answered call: the agent greets, answers a spoken question, and a stop completes it at once', { timeout: 240_000 }, async () => {
    const created = await api('POST', '/v1/calls', { agent_id: agentId, to_number: TO_ANSWER, variables: { customer_name: 'Ada' } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await answer.waitFor('the answer', () => answer.answered, 60_000);
    answer.startMedia();
    const started = await until('in_progress', async () => {
      const c = await getCall(id);
      return c.status === 'in_progress' ? c : null;
    });
    expect(started.started_at).not.toBeNull();
    expect(started.carrier_call_sid).toEqual(expect.any(String));

    // The callee stays silent: the agent greets after its short wait. The offline recogniser cannot read 8 kHz
    // telephone audio reliably, so what is heard is checked by its length against the same sentence spoken by
    // the agent's voice, and the words by the platform's record of the conversation below.
    const greeting = await heard(answer, 0);
    if (process.env.VAP_DEBUG_AUDIO) writeWav(process.env.VAP_DEBUG_AUDIO, answer.audio(0));
    expect(greeting.seconds).toBeGreaterThan((await spokenSeconds(FIRST_MESSAGE)) * 0.7);
    expect(greeting.seconds).toBeLessThan((await spokenSeconds(FIRST_MESSAGE)) * 1.6);
    await answer.speak(await synthesize('What time do you open tomorrow morning'));
    const reply = await heard(answer, greeting.end);
    expect(reply.seconds).toBeGreaterThan((await spokenSeconds(ANSWER)) * 0.7);
    expect(reply.seconds).toBeLessThan((await spokenSeconds(ANSWER)) * 1.6);
    // The worker's own STT turned the callee's question into a user turn for the LLM.
    const asked = llm.requests.filter((r) => !String(r.messages[0]?.content).startsWith('You analyse')).map(lastUserText);
    expect(asked.some((t) => t.trim().length > 0), `the LLM was asked ${JSON.stringify(asked)}`).toBe(true);

    // Hang up: stop answers the completed call; it stays completed at the stop moment.
    const t0 = Date.now();
    const stopped = await api('POST', `/v1/calls/${id}/stop`);
    expect(stopped.body).toMatchObject({ status: 'completed', end_reason: 'api_stop' });
    const polled = await until('completed', async () => ((await getCall(id)).status === 'completed' ? Date.now() : null), 2000);
    expect(polled - t0).toBeLessThanOrEqual(2000);
    await answer.waitFor('the BYE', () => answer.hungUp, 20_000);
    const done = await until('the conversation', async () => {
      const c = await getCall(id);
      return c.messages?.some((m: { content: string }) => m.content === ANSWER) && (c.latency?.llm_ttft.samples ?? 0) > 0 ? c : null;
    }, 60_000);
    expect(done.ended_at).toBe(stopped.body.ended_at);
    expect(done.duration_seconds).toBe(stopped.body.duration_seconds);
    expect(done.messages[0]).toMatchObject({ role: 'agent', content: FIRST_MESSAGE });
    expect(done.messages.some((m: { role: string }) => m.role === 'user')).toBe(true);
    // The simulated carrier's outbound rate (SIMULATED_CARRIER_OUTBOUND_RATE_CENTS, 2) times the billed minutes.
    expect(done.cost_cents).toBe(2 * Math.ceil(done.duration_seconds / 60));
    const usage = await api('GET', '/v1/usage');
    expect(usage.body.minutes_used_this_month).toBeGreaterThan(0);
    expect(usage.body.cost_cents_this_month).toBeGreaterThanOrEqual(done.cost_cents);
  });

  it('a scheduled call dials at its time; one stopped before its time never dials', { timeout: 90_000 }, async () => {
    const before = busy.invites.length;
    const at = new Date(Date.now() + 6000).toISOString();
    const kept = await api('POST', '/v1/calls', { agent_id: agentId, to_number: TO_BUSY, scheduled_at: at });
    const dropped = await api('POST', '/v1/calls', { agent_id: agentId, to_number: TO_BUSY, scheduled_at: at });
    expect([kept.status, dropped.status]).toEqual([201, 201]);
    expect(kept.body).toMatchObject({ status: 'queued', scheduled_at: at });
    const stop = await api('POST', `/v1/calls/${dropped.body.id}/stop`);
    // A call stopped before it rang never connected: failed, canceled (issue 51), with no analysis.
    expect(stop.body).toMatchObject({ status: 'failed', end_reason: 'canceled', duration_seconds: 0 });
    expect((await getCall(kept.body.id)).status).toBe('queued');
    const call = await finalCall(kept.body.id, 40_000);
    expect(call).toMatchObject({ status: 'failed', end_reason: 'busy' });
    const dialledAt = await sql<{ dialed_at: Date }[]>`select dialed_at from calls where id = ${kept.body.id}`;
    expect(dialledAt[0]!.dialed_at.getTime()).toBeGreaterThanOrEqual(Date.parse(at));
    // The stopped call's job ran at the same time and did nothing.
    await until('the stopped call’s dial job', async () => {
      const [job] = await sql`select state from pgboss.job where name = 'calls.dial' and singleton_key = ${dropped.body.id}`;
      return job?.state === 'completed';
    }, 30_000);
    expect(busy.invites.length).toBe(before + 1);
    expect((await getCall(dropped.body.id)).status).toBe('failed');
  });
});

/** The next utterance the callee hears after sample `from`: at least half a second of sound (not a click), then 1.2 s of quiet. */
const heard = (callee: SipCallee, from: number) => utterance(callee, { from, quietSeconds: 1.2, minSoundSeconds: 0.5 });

