// Supervising a live phone call end to end (docs/guides/calls.md, "Supervising a live call"): a number bought from
// the simulated carrier, the real LiveKit SIP bridge, SIPp dialling it, the real media worker. A supervisor listens
// through a hidden participant and hears both sides (the phone caller is a SIP participant); `say` is heard on the
// phone; after `takeover` a person speaks from a LiveKit client and the phone hears the person, not the agent;
// after `hand_back` the agent answers the phone caller again, and the person's words are in its model's context.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { contentText, startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { RtcClient, disposeRtc } from '../support/rtc-client.ts';
import { synthesize, transcribe, resample } from '../support/speech.ts';
import { SipPhone } from '../support/sip-phone.ts';
import { utterance } from '../support/phone-audio.ts';
import { untilEvery } from '../support/e2e.ts';
import { ANSWER, FIRST_MESSAGE, GRAMMAR } from '../support/dental-phrases.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';

/** Sentences of the grammar the agent never says by itself: hearing one, the phone heard the supervisor's words. */
const SAY = 'Sorry, we are closed on Sundays.';
const PERSON = 'Goodbye and have a nice day.';
// Local TTS on a loaded machine can pause mid-sentence: an utterance ends after this much quiet.
const QUIET_SECONDS = 3;

let stack: TestStack;
let llm: FakeOpenAI;
let sql: Sql;
let agentId: string;
const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250, 120_000);

/** What the phone heard from sample `from` to its next quiet, as the grammar's closest sentence. */
async function phoneHeard(phone: SipPhone, from: number): Promise<string> {
  const { end } = await utterance(phone, { from, quietSeconds: QUIET_SECONDS, minSoundSeconds: 0.5, timeoutMs: 120_000 });
  const pcm = phone.audio(from);
  return transcribe({ samples: pcm.samples.subarray(0, end - from), sampleRate: pcm.sampleRate }, { jsgf: GRAMMAR });
}

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    if (String(req.messages[0]?.content ?? '').startsWith('You analyse')) return { text: JSON.stringify({ summary: 'A supervised phone call.', outcome: 'supervised' }) };
    // Whatever the local recogniser made of the phone's 8 kHz question: hearing this answer, the phone heard the agent.
    return { text: ANSWER };
  });
  ({ stack, sql } = await fixture.start({
    org: 'supervise-phone',
    worker: true,
    sip: true,
    env: { SSRF_ALLOWLIST: '127.0.0.1,localhost', WORKER_SILENCE_SECONDS: '15', DISPATCH_TIMEOUT_SECONDS: '90', JOB_INIT_TIMEOUT_MS: '60000', SIP_RINGING_TIMEOUT_SECONDS: '90' },
  }));
  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'You are the receptionist of Acme Dental. Answer in one short sentence.' });
  agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, first_message: FIRST_MESSAGE, silence_timeout_seconds: 600 });
}, 240_000);

afterAll(async () => {
  await disposeRtc();
  await fixture.stop();
  await llm?.close();
});

describe.skipIf(!sipBridgeVersion())('a supervisor on a live phone call', () => {
  it('listens to both sides, says, takes over and hands back; the phone hears each', { timeout: 600_000 }, async () => {
    const bought = await api('POST', '/v1/phone-numbers', { agent_id: agentId, area_code: '415' });
    expect(bought.status, JSON.stringify(bought.body)).toBe(200);
    const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: bought.body.phone_number, from: '+15550100123' });
    let listener: RtcClient | null = null;
    let person: RtcClient | null = null;
    try {
      await phone.startMedia();
      expect(await phoneHeard(phone, 0)).toBe('hello thank you for calling acme dental');
      const [row] = await sql<{ id: string }[]>`select id from calls where to_number = ${bought.body.phone_number as string}`;
      const callId = row!.id;
      expect((await api('GET', `/v1/calls/${callId}`)).body.status).toBe('in_progress');

      // 1. Listen: the hidden participant hears the agent and the phone caller (a SIP participant).
      const listen = await api('POST', `/v1/calls/${callId}/listen`);
      expect(listen.status, JSON.stringify(listen.body)).toBe(200);
      listener = await RtcClient.join(listen.body.server_url, listen.body.participant_token);
      const participants = await until('both sides in the room', async () => {
        const ps = [...listener!.room.remoteParticipants.values()];
        const sip = ps.find((p) => p.identity.startsWith('sip'));
        const agent = ps.find((p) => !p.identity.startsWith('sip'));
        return sip && agent ? { sip: sip.identity, agent: agent.identity } : null;
      });
      const heardAgent = listener.record({ from: participants.agent });
      const heardCaller = listener.record({ from: participants.sip });
      await until('the listener subscribed to both sides', async () => heardAgent.identity !== undefined && heardCaller.identity !== undefined);
      const asked = phone.received.length;
      await phone.speak(await synthesize('What time do you open tomorrow morning'));
      expect(await phoneHeard(phone, asked)).toBe('we open at nine in the morning');
      await until('the listener heard the caller and the agent', async () => heardCaller.firstSpeechAt !== undefined && heardAgent.firstSpeechAt !== undefined);

      // 2. say: the phone hears the supervisor's words in the agent's voice.
      const beforeSay = phone.received.length;
      const say = await api('POST', `/v1/calls/${callId}/control`, { action: 'say', text: SAY, when: 'now' });
      expect(say.status, JSON.stringify(say.body)).toBe(200);
      expect(await phoneHeard(phone, beforeSay)).toBe('sorry we are closed on sundays');

      // 3. takeover: a person joins with the token and speaks; the phone hears the person, and the agent is quiet.
      const takeover = await api('POST', `/v1/calls/${callId}/control`, { action: 'takeover' });
      expect(takeover.status, JSON.stringify(takeover.body)).toBe(200);
      expect((await api('POST', `/v1/calls/${callId}/control`, { action: 'takeover' })).status).toBe(409);
      person = await RtcClient.join(takeover.body.takeover.server_url, takeover.body.takeover.participant_token);
      await person.publishMicrophone();
      heardAgent.reset();
      const beforePerson = phone.received.length;
      await person.speak(resample(await synthesize(PERSON), 48000), { trailingSilenceMs: 500 });
      expect(await phoneHeard(phone, beforePerson)).toBe('goodbye and have a nice day');
      // The phone caller asks while the person holds the call: the agent says nothing.
      const held = phone.received.length;
      const requestsBefore = llm.requests.length;
      await phone.speak(await synthesize('What time do you open tomorrow morning'));
      await new Promise((r) => setTimeout(r, 4000));
      expect(heardAgent.firstSpeechAt, 'the agent spoke during the takeover').toBeUndefined();
      expect(phone.received.length).toBeGreaterThan(held);

      // 4. hand_back: the person leaves the room; the agent answers the phone again, knowing what the person said.
      const handBack = await api('POST', `/v1/calls/${callId}/control`, { action: 'hand_back' });
      expect(handBack.status, JSON.stringify(handBack.body)).toBe(200);
      await until('the person to leave the room', async () => ![...listener!.room.remoteParticipants.keys()].includes(takeover.body.takeover.identity as string));
      const afterBack = phone.received.length;
      await phone.speak(await synthesize('What time do you open tomorrow morning'));
      expect(await phoneHeard(phone, afterBack)).toBe('we open at nine in the morning');
      const request = llm.requests.slice(requestsBefore).findLast((r) => !String(r.messages[0]?.content ?? '').startsWith('You analyse'));
      expect(request, 'the agent was asked after the hand-back').toBeDefined();
      const text = JSON.stringify(request!.messages.map((m) => contentText(m)));
      // The person's words reached the model (its second transcription, as the agent's side); the local recogniser
      // may not get every word of synthesized speech, so two of its words suffice.
      expect(['goodbye', 'nice', 'day'].filter((w) => text.toLowerCase().includes(w)).length, text).toBeGreaterThanOrEqual(2);

      // The record keeps every action.
      const call = (await api('GET', `/v1/calls/${callId}`)).body;
      expect((call.supervision as { action: string }[]).map((s) => s.action)).toEqual(['listen', 'say', 'takeover', 'hand_back']);
    } finally {
      await person?.leave().catch(() => {});
      await listener?.leave().catch(() => {});
      await phone.hangUp().catch(() => {});
      await phone.close();
    }
  });
});
