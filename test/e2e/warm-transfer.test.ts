// Warm transfer end to end over the real SIP bridge, with two SIPp peers: the caller (SipPhone, dialling the
// number) and the person the agent transfers to (SipCallee, reached through the simulated carrier's edge on
// the number's outbound trunk). The caller asks for a person with the keypad; the model stand-in calls the
// warm transfer_call tool. Answered: the caller hears hold music (not the briefing), the person hears the
// briefing, then the two legs hear each other, and the call ends when one hangs up. Busy and no answer: the
// agent comes back and tells the caller, and the call goes on.
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SipClient } from 'livekit-server-sdk';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { startFakeOpenAI, contentText, lastUserText, pendingToolResult, type FakeOpenAI } from '../support/fake-openai.ts';
import { envelopeMatch, synthesize, transcribe, wordsFound, writeWav, type Pcm } from '../support/speech.ts';
import { SipPhone } from '../support/sip-phone.ts';
import { SipCallee } from '../support/sip-callee.ts';
import { GREETINGS, spelled } from '../support/greetings.ts';
import { untilEvery } from '../support/e2e.ts';
import { loudCount, utterance } from '../support/phone-audio.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';
import { startSimulatedEdge, type SimulatedEdge } from '../../control-plane/src/modules/phone-numbers/carriers/simulated-edge.ts';

const FIRST_MESSAGE = 'Hello, thank you for calling Acme Dental.';
const BRIEFING = 'Hello, Ada is calling about a broken tooth and wants an appointment today.';
/** The briefing's own words: none is a word the recogniser makes of music or of the greeting. */
const BRIEFING_WORDS = ['ada', 'broken', 'tooth', 'appointment', 'wants', 'today'];
const BUSY_SENTENCE = 'I am sorry, the line of my colleague is busy.';
const NO_ANSWER_SENTENCE = 'I am sorry, my colleague did not answer.';
const TO_HUMAN = '+15550000003';
const TO_BUSY = '+15550000001';
const TO_NO_ANSWER = '+15550000002';
const RING_TIMEOUT = 8;

const SENTENCES = [...GREETINGS, BRIEFING, BUSY_SENTENCE, NO_ANSWER_SENTENCE];
const GRAMMAR = `#JSGF V1.0;\ngrammar transfer;\npublic <s> = ${SENTENCES.map(spelled).join('\n  | ')};\n`;

let stack: TestStack;
let llm: FakeOpenAI;
let sql: Sql;
let edge: SimulatedEdge;
let human: SipCallee;
let busy: SipCallee;
let noAnswer: SipCallee;
let number: string;

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250);

/** The hold music's notes (media-worker/src/session/warm-transfer.ts TUNE). */
const HOLD_NOTES = [523.25, 587.33, 659.25, 783.99, 880.0];

/**
 * Quarter-second windows of `pcm` that sound like the hold music: loud, with most of their energy in one of its
 * pure notes (Goertzel). Speech spreads its energy over many frequencies: its windows stay well under the mark.
 */
function musicWindows(pcm: Pcm): number {
  const n = pcm.sampleRate / 4;
  let count = 0;
  for (let i = 0; i + n <= pcm.samples.length; i += n) {
    const seg = pcm.samples.subarray(i, i + n);
    const rms = Math.sqrt(seg.reduce((a, s) => a + s * s, 0) / n);
    if (rms < 500) continue;
    const tone = Math.max(
      ...HOLD_NOTES.map((f) => {
        const k = 2 * Math.cos((2 * Math.PI * f) / pcm.sampleRate);
        let s1 = 0;
        let s2 = 0;
        for (const x of seg) [s1, s2] = [x + k * s1 - s2, s1];
        return Math.sqrt(Math.max(0, s1 * s1 + s2 * s2 - k * s1 * s2)) / n;
      }),
    );
    if (tone > 0.3 * rms) count++;
  }
  return count;
}

/** Where a failing run's audio is kept, for a listen. */
function keep(name: string, pcm: Pcm): string {
  const file = path.join(tmpdir(), `warm-transfer-${name}-${Date.now()}.wav`);
  writeWav(file, pcm);
  return file;
}

/** Waits for audio from `from` on, then `quietSeconds` of quiet after it (an utterance heard to its end). */
async function heardUtterance(peer: SipPhone, from: number, timeoutMs = 90_000, quietSeconds = 3): Promise<Pcm> {
  await utterance(peer, { from, quietSeconds, timeoutMs });
  return peer.audio(from);
}

const transferOf = async (callId: string) =>
  (await sql<{ id: string; status: string; destination: string }[]>`select id, status, destination from call_transfers where call_id = ${callId} order by started_at`).at(-1);

async function dialIn(): Promise<{ phone: SipPhone; callId: string }> {
  const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: number, from: '+15550100199' });
  await phone.waitFor('the answer', () => phone.answered || phone.finalStatus, 120_000);
  expect(phone.answered, phone.messages.slice(-2000)).toBe(true);
  await phone.startMedia();
  const call = await until('the call to start', async () => {
    const [c] = await sql<{ id: string; status: string }[]>`select id, status from calls where to_number = ${number} and status = 'in_progress'`;
    return c;
  });
  // The greeting, heard to its end, before the caller asks for a person.
  await heardUtterance(phone, 0);
  return { phone, callId: call.id };
}

async function press(phone: SipPhone, digit: string) {
  await phone.pressKey(digit);
  await phone.pressKey('#');
}

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    const system = String(req.messages[0]?.content ?? '');
    if (system.startsWith('You analyse')) return { text: JSON.stringify({ summary: 'A caller asked for a person.', outcome: 'transferred' }) };
    if (system.startsWith('You brief')) return { text: BRIEFING };
    const tool = pendingToolResult(req);
    if (tool) {
      const out = contentText(tool);
      if (/busy/i.test(out)) return { text: BUSY_SENTENCE };
      if (/answer/i.test(out)) return { text: NO_ANSWER_SENTENCE };
      return { text: 'Done.' };
    }
    const said = lastUserText(req);
    if (/pressed 1/.test(said)) return { toolCalls: [{ name: 'transfer_to_person', arguments: {} }] };
    if (/pressed 2/.test(said)) return { toolCalls: [{ name: 'transfer_to_busy', arguments: {} }] };
    if (/pressed 3/.test(said)) return { toolCalls: [{ name: 'transfer_to_nobody', arguments: {} }] };
    return { text: 'Sorry, we are closed on Sundays.' };
  });
  [human, busy, noAnswer] = await Promise.all([SipCallee.start('answer'), SipCallee.start('busy'), SipCallee.start('no-answer')]);
  edge = await startSimulatedEdge({
    listen: '127.0.0.1:0',
    routes: [
      { prefix: TO_HUMAN, target: { host: '127.0.0.1', port: human.port } },
      { prefix: TO_BUSY, target: { host: '127.0.0.1', port: busy.port } },
      { prefix: TO_NO_ANSWER, target: { host: '127.0.0.1', port: noAnswer.port } },
    ],
    noAnswerMs: 3000,
  });
  ({ stack, sql } = await fixture.start({
    org: 'warm-transfer',
    worker: true,
    sip: true,
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      WORKER_SILENCE_SECONDS: '15',
      DISPATCH_TIMEOUT_SECONDS: '30',
      SIP_RINGING_TIMEOUT_SECONDS: '90',
      TRANSFER_RING_TIMEOUT_SECONDS: String(RING_TIMEOUT),
    },
  }));
  const tools: string[] = [];
  for (const [name, destination] of [['transfer_to_person', TO_HUMAN], ['transfer_to_busy', TO_BUSY], ['transfer_to_nobody', TO_NO_ANSWER]] as const) {
    const tool = await api('POST', '/v1/tools', { type: 'transfer_call', name, destination, mode: 'warm' });
    expect(tool.status, JSON.stringify(tool.body)).toBe(201);
    expect(tool.body).toMatchObject({ mode: 'warm', destination });
    tools.push(tool.body.id);
  }
  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'You are the receptionist of Acme Dental.', tool_ids: tools });
  const agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, first_message: FIRST_MESSAGE });
  const bought = await api('POST', '/v1/phone-numbers', { agent_id: agentId, area_code: '415' });
  expect(bought.status, JSON.stringify(bought.body)).toBe(200);
  number = bought.body.phone_number;
  // The number's outbound trunk reaches the people through this test's edge (as outbound-call.test.ts does).
  const sip = new SipClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  const trunk = await sip.createSipOutboundTrunk('warm-transfer-test', `${edge.address.host}:${edge.address.port}`, [number]);
  await sql`update phone_numbers set outbound_trunk_id = ${trunk.sipTrunkId} where phone_number = ${number}`;
}, 240_000);

afterAll(async () => {
  await fixture.stop();
  await Promise.all([human?.close(), busy?.close(), noAnswer?.close()]);
  await edge?.close();
  await llm?.close();
});

describe.skipIf(!sipBridgeVersion())('warm transfer over the SIP bridge', () => {
  it('answered: the caller holds with music, the person hears the briefing, then the two hear each other', { timeout: 300_000 }, async () => {
    const { phone, callId } = await dialIn();
    let holdAudio: Pcm;
    try {
      const mark = phone.received.length;
      // The person's phone sends its (silent) media once it answers, as a phone does.
      void human.waitFor('the answer', () => human.answered, 120_000).then(() => human.startMedia(), () => {});
      await press(phone, '1');
      await until('the second leg to ring', async () => (await transferOf(callId))?.status, 60_000);
      expect(await transferOf(callId)).toMatchObject({ destination: TO_HUMAN });
      await until('the person to be briefed and joined', async () => (await transferOf(callId))?.status === 'joined', 120_000);
      // While the person was rung and briefed, the caller heard music: loud, and not the briefing's words.
      holdAudio = phone.audio(mark);
      expect(loudCount(phone.received, mark), 'hold music energy').toBeGreaterThan(8000 * 2);
      expect(musicWindows(holdAudio), 'quarter seconds of hold music the caller heard').toBeGreaterThanOrEqual(8);
      expect(human.answered).toBe(true);
      // The person heard the briefing (and nothing before it: no music, no caller).
      const briefed = human.audio();
      if (process.env.VAP_DEBUG_AUDIO) {
        writeWav(`${process.env.VAP_DEBUG_AUDIO}-person.wav`, briefed);
        writeWav(`${process.env.VAP_DEBUG_AUDIO}-caller.wav`, phone.audio());
      }
      expect(loudCount(human.received), `the person heard ${human.received.length} samples`).toBeGreaterThan(8000);
      // No music reached the person, but for the moment its leg's media starts (the SIP bridge subscribes it to
      // every track then, and the worker's next pass undoes it: docs/decisions/036-warm-transfer.md).
      const music = musicWindows(briefed);
      expect(music, `hold music at the person (${music >= 3 ? keep('person', briefed) : ''})`).toBeLessThan(3);
      // The briefing, by the shape of its loudness against the same voice saying the same sentence: the
      // recogniser misreads 8 kHz telephone audio too often to decide a test ("Ada is" as "neighbor and"), while
      // the envelope of this deterministic voice matches above 0.9, and another sentence, the music or silence
      // stay well under 0.7 (test/phone-speech.test.ts).
      const match = envelopeMatch(await synthesize(BRIEFING), briefed);
      expect(match, `the person heard the briefing (envelope match ${match.toFixed(2)}${match > 0.8 ? '' : `, ${keep('person', briefed)}`})`).toBeGreaterThan(0.8);

      // Joined: what one says, the other hears.
      const words = await synthesize('We open at nine in the morning.');
      const callerMark = phone.received.length;
      await human.speak(words);
      await phone.waitFor("the person's voice at the caller", () => loudCount(phone.received, callerMark) > 4000, 20_000);
      const humanMark = human.received.length;
      await phone.speak(words);
      await human.waitFor("the caller's voice at the person", () => loudCount(human.received, humanMark) > 4000, 20_000);

      // The caller hangs up: the platform hangs up the person's leg and ends the call.
      await phone.hangUp();
      await human.waitFor('the BYE to the person', () => human.hungUp, 30_000);
    } finally {
      await phone.close();
    }
    const heardOnHold = await transcribe(holdAudio);
    expect(wordsFound(BRIEFING_WORDS.join(' '), heardOnHold).length, `heard on hold: "${heardOnHold}"`).toBeLessThan(2);

    const call = await until('the call to complete with its transfer', async () => {
      const c = (await api('GET', `/v1/calls/${callId}`)).body;
      return c.status === 'completed' && c.messages ? c : null;
    }, 60_000);
    expect(call.end_reason).toBe('transferred');
    expect(call.transfers).toHaveLength(1);
    const t = call.transfers[0];
    expect(t).toMatchObject({ mode: 'warm', destination: TO_HUMAN, status: 'ended', sip_status: null });
    expect(t.answered_at && t.joined_at && t.ended_at).toBeTruthy();
    expect(Date.parse(t.answered_at)).toBeLessThanOrEqual(Date.parse(t.joined_at));
    expect(Date.parse(t.joined_at)).toBeLessThanOrEqual(Date.parse(t.ended_at));
    expect(t.duration_seconds).toBeGreaterThanOrEqual(1);
    expect(t.credits_used).toBeCloseTo(t.duration_seconds / 60, 5);
    // The caller's leg lasts from the start of the call to its end, the person's leg from the answer.
    expect(call.duration_seconds).toBeGreaterThanOrEqual(t.duration_seconds);
    // The conversation the agent had is kept (held while the legs talked on).
    expect(call.messages[0]).toMatchObject({ role: 'agent', content: FIRST_MESSAGE });
    // Both legs are billed.
    const usage = (await api('GET', '/v1/usage')).body;
    expect(usage.minutes_used_this_month).toBeCloseTo(Math.round(((call.duration_seconds + t.duration_seconds) / 60) * 100) / 100, 2);
  });

  for (const [digit, callee, status, sentence] of [
    ['2', () => busy, 'busy', BUSY_SENTENCE],
    ['3', () => noAnswer, 'no_answer', NO_ANSWER_SENTENCE],
  ] as const) {
    it(`${status}: the agent comes back and tells the caller, and the call goes on`, { timeout: 240_000 }, async () => {
      const { phone, callId } = await dialIn();
      try {
        const requests = llm.requests.length;
        await press(phone, digit);
        await until(`the transfer to be ${status}`, async () => (await transferOf(callId))?.status === status, 90_000);
        expect(callee().invites.length).toBeGreaterThanOrEqual(1);
        // The tool's error reached the model (the music has stopped by then): what the agent says next is for the caller.
        await until('the tool result at the model', () => llm.requests.slice(requests).some((r) => pendingToolResult(r)), 30_000);
        const mark = phone.received.length;
        const heard = await heardUtterance(phone, mark);
        expect(await transcribe(heard, { jsgf: GRAMMAR })).toBe(spelled(sentence));
        // The call goes on.
        const [row] = await sql<{ status: string }[]>`select status from calls where id = ${callId}`;
        expect(row!.status).toBe('in_progress');
        await phone.hangUp();
      } finally {
        await phone.close();
      }
      const call = await until('the call to complete', async () => {
        const c = (await api('GET', `/v1/calls/${callId}`)).body;
        return c.status === 'completed' ? c : null;
      }, 60_000);
      expect(call.end_reason).toBe('user_hangup');
      expect(call.transfers).toEqual([
        expect.objectContaining({ mode: 'warm', destination: status === 'busy' ? TO_BUSY : TO_NO_ANSWER, status, answered_at: null, joined_at: null, duration_seconds: null }),
      ]);
      if (status === 'busy') expect(call.transfers[0].sip_status).toBe(486);
    });
  }
});
