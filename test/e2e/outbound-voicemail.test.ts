// Outbound calls answered by an answering machine, over the real stack: POST /v1/calls, the dial job, LiveKit's
// CreateSIPParticipant through the real SIP bridge and the simulated carrier's edge, and SIPp as the machine. Like
// a real machine, the callee rings a few seconds, then plays its greeting (festival speech, longer than the
// agent's 4 s greeting wait) as soon as it answers, then a 1000 Hz beep, then records. The real media worker (local STT and TTS) has to tell
// the machine from a person, stay quiet through the greeting, and then leave the agent's voicemail_message
// after the beep, or hang up when the agent has none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { synthesize, spokenSeconds, type Pcm } from '../support/speech.ts';
import { SipCallee } from '../support/sip-callee.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { until } from '../support/e2e.ts';
import { soundSeconds } from '../support/phone-audio.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';
import type { SimulatedEdge } from '../../control-plane/src/modules/phone-numbers/carriers/simulated-edge.ts';
import { addOutboundNumber, startCalleeEdge } from '../support/outbound-edge.ts';

const FIRST_MESSAGE = 'Hello, this is Acme Dental calling about your appointment.';
const VOICEMAIL = 'Hi, this is Acme Dental. Please call us back about your appointment tomorrow.';
const GREETING = 'Hello, you have reached the Smith family. We are not available right now. Please leave a message after the tone.';
const FROM = '+14155550100';
const TO_MACHINE = '+15550000004';
const TO_MACHINE_2 = '+15550000005';

let stack: TestStack;
let llm: FakeOpenAI;
let sql: Sql;
let orgId: string;
let llmId: string;
let edge: SimulatedEdge;
let machine: SipCallee;
let machine2: SipCallee;
let hooks: Receiver;
let greeting: Pcm;
let beep: Pcm;

const fixture = stackFixture();
const { api } = fixture;
const getCall = async (id: string) => (await api('GET', `/v1/calls/${id}`)).body;

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder(() => ({ text: 'Sure, I can help with that.' }));
  greeting = await synthesize(GREETING);
  // The machine's beep: 1000 Hz for 0.6 s at 8 kHz, as answering machines do.
  beep = { samples: new Int16Array(4800), sampleRate: 8000 };
  for (let i = 0; i < beep.samples.length; i++) beep.samples[i] = Math.round(12000 * Math.sin((2 * Math.PI * 1000 * i) / 8000));
  // A machine picks up after a few rings.
  [machine, machine2] = await Promise.all([SipCallee.start('answer', { ringMs: 3000 }), SipCallee.start('answer', { ringMs: 3000 })]);
  edge = await startCalleeEdge([
    [TO_MACHINE, machine],
    [TO_MACHINE_2, machine2],
  ]);
  hooks = await new Receiver().start();
  ({ stack, sql, orgId } = await fixture.start({
    org: 'voicemail',
    worker: true,
    sip: true,
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      WORKER_SILENCE_SECONDS: '15',
      DISPATCH_TIMEOUT_SECONDS: '30',
      OUTBOUND_RING_TIMEOUT_SECONDS: '15',
      STOP_REPORT_GRACE_SECONDS: '20',
    },
  }));
  llmId = await createStandInModel(api, llm.url, { system_prompt: 'You are the receptionist of Acme Dental.' });
  // The number (routed to an agent, as every number is) and its outbound trunk, on the edge.
  const owner = await agentWith(null);
  await addOutboundNumber(stack, sql, edge, { trunkName: 'voicemail-test', orgId, from: FROM, agentId: owner });
}, 240_000);

afterAll(async () => {
  await fixture.stop();
  await Promise.all([machine?.close(), machine2?.close()]);
  await edge?.close();
  await hooks?.close();
  await llm?.close();
});

async function agentWith(voicemailMessage: string | null): Promise<string> {
  return createLocalAgent(api, {
    name: voicemailMessage ? 'Leaves voicemail' : 'Hangs up on machines',
    llm_id: llmId,
    first_message: FIRST_MESSAGE,
    voicemail_detection: true,
    voicemail_message: voicemailMessage,
  });
}

/** Plays the machine's greeting from the moment it answers, then its beep; returns the sample index heard at the beep's end. */
async function playMachine(callee: SipCallee): Promise<{ answeredAt: number; beepEnd: number }> {
  await callee.waitFor('the answer', () => callee.answered, 60_000);
  callee.startMedia();
  const answeredAt = callee.received.length;
  await callee.speak(greeting);
  await callee.speak(beep);
  return { answeredAt, beepEnd: callee.received.length };
}

/** Sound the callee heard between two sample indexes (8 kHz), in seconds: loud samples from first to last. */
const soundBetween = (callee: SipCallee, from: number, to: number) => soundSeconds(callee.received, from, to);

describe.skipIf(!sipBridgeVersion())('outbound calls answered by an answering machine', () => {
  it('an agent with voicemail_message stays quiet through the greeting and leaves the message after the beep', { timeout: 240_000 }, async () => {
    const agentId = await agentWith(VOICEMAIL);
    const created = await api('POST', '/v1/calls', { agent_id: agentId, to_number: TO_MACHINE, from_number: FROM, webhook_url: hooks.url('/voicemail') });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    const { answeredAt, beepEnd } = await playMachine(machine);
    // Nothing of the agent's over the machine's greeting: no first message spoken into the recording.
    expect(soundBetween(machine, answeredAt, beepEnd)).toBe(0);
    // After the beep: the message, checked by its length (the offline recogniser cannot read the 8 kHz decoded
    // audio; the words are checked in the call record below), then the platform hangs up.
    await machine.waitFor('the BYE', () => machine.hungUp, 90_000);
    const left = soundBetween(machine, beepEnd, machine.received.length);
    const expected = await spokenSeconds(VOICEMAIL);
    expect(left, `heard ${left.toFixed(2)} s after the beep, the message is ${expected.toFixed(2)} s`).toBeGreaterThan(expected * 0.7);
    expect(left).toBeLessThan(expected * 1.6);
    const done = await until('the voicemail record', async () => {
      const c = await getCall(id);
      return c.status === 'completed' && c.messages?.some((m: { content: string }) => m.content === VOICEMAIL) ? c : null;
    }, 60_000);
    expect(done).toMatchObject({ status: 'completed', end_reason: 'voicemail' });
    expect(done.messages.filter((m: { role: string }) => m.role === 'agent').map((m: { content: string }) => m.content)).toEqual([VOICEMAIL]);
    await hooks.until(() => hooks.requests.some((r) => r.json?.call_id === id && r.json?.event === 'call.ended'), `call.ended for ${id}`, 30_000);
  });

  it('an agent without voicemail_message hangs up on the machine: BYE, end_reason voicemail, nothing said', { timeout: 240_000 }, async () => {
    const agentId = await agentWith(null);
    const created = await api('POST', '/v1/calls', { agent_id: agentId, to_number: TO_MACHINE_2, from_number: FROM });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    const { answeredAt } = await playMachine(machine2);
    await machine2.waitFor('the BYE', () => machine2.hungUp, 90_000);
    expect(soundBetween(machine2, answeredAt, machine2.received.length)).toBe(0);
    const done = await until('the call to end', async () => {
      const c = await getCall(id);
      return c.status === 'completed' || c.status === 'failed' ? c : null;
    }, 60_000);
    expect(done).toMatchObject({ status: 'completed', end_reason: 'voicemail' });
    expect((done.messages ?? []).filter((m: { role: string }) => m.role === 'agent')).toEqual([]);
  });
});
