// Inbound calls to a number with an inbound_routing.voicemail_message, over the real stack: a number bought from
// the simulated carrier, the real LiveKit SIP bridge, SIPp dialling it, the real media worker (local STT and TTS).
// First a call that reaches a mailbox (a forwarded call landing on an answering machine): the agent greets as
// usual, the mailbox plays its greeting (festival speech) over it, then a 1000 Hz beep; the worker must tell the
// machine, leave the number's message after the beep and hang up, with end_reason voicemail. Then a person calls
// the same number with a short request and is answered by the agent as usual.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { synthesize, spokenSeconds, type Pcm } from '../support/speech.ts';
import { SipPhone } from '../support/sip-phone.ts';
import { untilEvery } from '../support/e2e.ts';
import { quietSince, soundSeconds } from '../support/phone-audio.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';

const FIRST_MESSAGE = 'Thank you for calling Acme Dental.';
const VOICEMAIL = 'Hi, this is Acme Dental returning your call. Please ring us back when you can.';
const GREETING = 'Hello, you have reached the Smith family. We are not available right now. Please leave a message after the tone.';
const REQUEST = 'Hi, I would like to book a cleaning for next Tuesday.';
const REPLY = 'Sure, I can help with that.';

let stack: TestStack;
let llm: FakeOpenAI;
let sql: Sql;
let number: { id: string; phone_number: string };
let greeting: Pcm;
let beep: Pcm;
let request: Pcm;

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250);

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    const system = String(req.messages[0]?.content ?? '');
    if (system.startsWith('You analyse')) return { text: JSON.stringify({ summary: 'A call to the practice.', outcome: 'voicemail' }) };
    return { text: REPLY };
  });
  [greeting, request] = await Promise.all([synthesize(GREETING), synthesize(REQUEST)]);
  // The mailbox's beep: 1000 Hz for 0.6 s at 8 kHz, as answering machines do.
  beep = { samples: new Int16Array(4800), sampleRate: 8000 };
  for (let i = 0; i < beep.samples.length; i++) beep.samples[i] = Math.round(12000 * Math.sin((2 * Math.PI * 1000 * i) / 8000));
  ({ stack, sql } = await fixture.start({
    org: 'inbound-voicemail',
    worker: true,
    sip: true,
    // A loaded machine can take a while to start an agent job (a job process's start and prewarm went past
    // agents-js's 10 s there): let calls ring long enough, and the job process start.
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      WORKER_SILENCE_SECONDS: '15',
      DISPATCH_TIMEOUT_SECONDS: '30',
      SIP_RINGING_TIMEOUT_SECONDS: '90',
      JOB_INIT_TIMEOUT_MS: '60000',
    },
  }));
  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'You are the receptionist of Acme Dental.' });
  // The agent's own voicemail_detection stays off: on inbound calls the number's message is what turns it on.
  const agentId = await createLocalAgent(api, { name: 'Front desk', llm_id: modelId, first_message: FIRST_MESSAGE });
  const bought = await api('POST', '/v1/phone-numbers', { agent_id: agentId, area_code: '415', inbound_routing: { voicemail_message: VOICEMAIL } });
  expect(bought.status, JSON.stringify(bought.body)).toBe(200);
  number = bought.body;
}, 240_000);

afterAll(async () => {
  await fixture.stop();
  await llm?.close();
});

/** Sound the caller heard between two sample indexes (8 kHz), in seconds: loud samples from first to last. */
const soundBetween = (phone: SipPhone, from: number, to: number) => soundSeconds(phone.received, from, to);

/** The caller heard sound after `from`, then 3 s of quiet (local TTS on a loaded machine can pause mid-sentence). */
const heardThenQuiet = (phone: SipPhone, from: number) => (quietSince(phone.received, from) ?? 0) >= 3;

/** Dials the number and waits for the agent's first sound (the first message: the session is running). */
async function dialAndHearGreeting(): Promise<SipPhone> {
  const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: number.phone_number, from: '+15550100188' });
  await phone.waitFor('an answer', () => phone.answered || phone.finalStatus, 120_000);
  expect(phone.answered, phone.messages.slice(-2000)).toBe(true);
  await phone.startMedia();
  await phone.waitFor("the agent's first message", () => phone.firstAudioAt !== null, 90_000);
  return phone;
}

const callOf = async (phone: SipPhone) => {
  const [row] = await sql<{ id: string }[]>`select id from calls where carrier_call_sid = ${phone.sipCallId}`;
  return row!.id;
};

describe.skipIf(!sipBridgeVersion())('inbound calls to a number with a voicemail_message', () => {
  it('a call that reaches a mailbox: the message is left after the beep, then the agent hangs up (end_reason voicemail)', { timeout: 240_000 }, async () => {
    const phone = await dialAndHearGreeting();
    let beepEnd = 0;
    let id = '';
    try {
      id = await callOf(phone);
      // The mailbox's greeting over the agent's first message, then its beep; then it records.
      await phone.speak(greeting);
      await phone.speak(beep);
      beepEnd = phone.received.length;
      // The platform hangs up once the message is said.
      expect(await phone.waitFor('the agent to hang up', () => phone.ended, 90_000)).toBe('remote');
    } finally {
      await phone.close();
    }
    // After the beep: the message, checked by its length (the offline recogniser cannot read the 8 kHz decoded
    // audio; the words are checked in the call record below).
    const left = soundBetween(phone, beepEnd, phone.received.length);
    const expected = await spokenSeconds(VOICEMAIL);
    expect(left, `heard ${left.toFixed(2)} s after the beep, the message is ${expected.toFixed(2)} s`).toBeGreaterThan(expected * 0.7);
    expect(left).toBeLessThan(expected * 1.6);
    const done = await until('the voicemail record', async () => {
      const c = (await api('GET', `/v1/calls/${id}`)).body;
      return c.status === 'completed' && c.messages?.some((m: { content: string }) => m.content === VOICEMAIL) ? c : null;
    }, 60_000);
    expect(done).toMatchObject({ type: 'inbound', status: 'completed', end_reason: 'voicemail', to_number: number.phone_number });
    const agentSaid = done.messages.filter((m: { role: string }) => m.role === 'agent').map((m: { content: string }) => m.content);
    expect(agentSaid.at(-1)).toBe(VOICEMAIL);
  });

  it('a person calling the same number with a short request is answered by the agent, not taken for a mailbox', { timeout: 240_000 }, async () => {
    const phone = await dialAndHearGreeting();
    let id = '';
    try {
      id = await callOf(phone);
      await phone.waitFor('the first message to end', () => heardThenQuiet(phone, 0), 60_000);
      await phone.speak(request);
      const askedEnd = phone.received.length;
      // The agent's reply, heard to its end; the call goes on (no BYE) until the caller hangs up.
      await phone.waitFor('the reply', () => heardThenQuiet(phone, askedEnd), 60_000);
      expect(phone.ended).toBeNull();
      await phone.hangUp();
    } finally {
      await phone.close();
    }
    const done = await until('the call to complete', async () => {
      const c = (await api('GET', `/v1/calls/${id}`)).body;
      return c.status === 'completed' && c.messages ? c : null;
    }, 60_000);
    expect(done.end_reason).toBe('user_hangup');
    expect(done.messages.some((m: { role: string; content: string }) => m.role === 'agent' && m.content === REPLY)).toBe(true);
    expect(done.messages.some((m: { role: string }) => m.role === 'user')).toBe(true);
  });
});
