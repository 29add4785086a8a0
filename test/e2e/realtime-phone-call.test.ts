// A phone call to an agent on a realtime (speech-to-speech) model, end to end: a number bought from the simulated
// carrier, the real LiveKit SIP bridge, SIPp dialling it, the real media worker, and the agent's model OpenAI
// Realtime pointed at the local Realtime double (test/support/fake-openai-realtime.ts) as the org's own server. The
// phone hears the first message in the model's voice, asks a question over the 8 kHz line, hears the model's answer,
// and the call record holds the provider's transcript and the turn's latency.
// The double hears speech by energy and its words are scripted (it does no recognition); what the phone hears is
// festival's speech of the double's reply, transcribed here with a grammar.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { resample, synthesize, transcribe } from '../support/speech.ts';
import { SipPhone } from '../support/sip-phone.ts';
import { utterance } from '../support/phone-audio.ts';
import { untilEvery } from '../support/e2e.ts';
import { ANSWER, FIRST_MESSAGE, GRAMMAR } from '../support/dental-phrases.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';

let stack: TestStack;
let sql: Sql;
let fake: FakeOpenAI;
let agentId: string;
const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250, 120_000);

/** What the phone heard from sample `from` to its next 3 s of quiet, as the grammar's closest sentence. */
async function phoneHeard(phone: SipPhone, from: number): Promise<string> {
  const { end } = await utterance(phone, { from, quietSeconds: 3, minSoundSeconds: 0.5, timeoutMs: 120_000 });
  const pcm = phone.audio(from);
  return transcribe({ samples: pcm.samples.subarray(0, end - from), sampleRate: pcm.sampleRate }, { jsgf: GRAMMAR });
}

beforeAll(async () => {
  // The model's voice: festival's speech of its words, at the API's 24 kHz.
  fake = await startFakeOpenAI({ ttftMs: 20, speaker: async (text) => resample(await synthesize(text), 24000).samples });
  fake.setResponder(() => ({ text: JSON.stringify({ summary: 'The caller asked when the practice opens.', outcome: 'question_answered' }) }));
  fake.setRealtimeTranscriber(() => 'What time do you open tomorrow morning?');
  fake.setRealtimeResponder((turn) => {
    const fixed = /Say exactly [^"]*"([^"]*)"\s*$/.exec(turn.responseInstructions ?? '');
    return { text: fixed ? fixed[1]! : ANSWER };
  });
  ({ stack, sql } = await fixture.start({
    org: 'e2e-realtime-phone',
    worker: true,
    sip: true,
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      WORKER_SILENCE_SECONDS: '15',
      DISPATCH_TIMEOUT_SECONDS: '90',
      JOB_INIT_TIMEOUT_MS: '60000',
      SIP_RINGING_TIMEOUT_SECONDS: '90',
      ANALYSIS_BASE_URL: fake.url,
      ANALYSIS_MODEL: 'analysis-mini',
    },
  }));
  const key = await api('POST', '/v1/integrations', { name: 'openai', provider: 'openai', api_key: 'sk-org-openai-0123456789' });
  expect(key.status, JSON.stringify(key.body)).toBe(201);
  const model = await api('POST', '/v1/models', {
    name: 'Realtime',
    model: 'gpt-realtime',
    base_url: fake.url,
    system_prompt: 'You are the receptionist of Acme Dental.',
    realtime: { voice: 'marin', turn_detection: 'server_vad', silence_duration_ms: 500 },
  });
  expect(model.status, JSON.stringify(model.body)).toBe(201);
  const agent = await api('POST', '/v1/agents', { name: 'Realtime receptionist', llm_id: model.body.id, first_message: FIRST_MESSAGE, silence_timeout_seconds: 120 });
  expect(agent.status, JSON.stringify(agent.body)).toBe(201);
  agentId = agent.body.id as string;
}, 240_000);

afterAll(async () => {
  await fixture.stop();
  await fake?.close();
});

describe.skipIf(!sipBridgeVersion())('a phone call to a realtime agent', () => {
  it('greets in the model voice over the SIP bridge, answers a spoken question, and records the conversation', { timeout: 300_000 }, async () => {
    const bought = await api('POST', '/v1/phone-numbers', { agent_id: agentId, area_code: '415' });
    expect(bought.status, JSON.stringify(bought.body)).toBe(200);
    const connections = fake.realtime.length;
    const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: bought.body.phone_number, from: '+15550100124' });
    try {
      await phone.startMedia();
      expect(await phoneHeard(phone, 0)).toBe('hello thank you for calling acme dental');
      const asked = phone.received.length;
      await phone.speak(await synthesize('What time do you open tomorrow morning'));
      expect(await phoneHeard(phone, asked)).toBe('we open at nine in the morning');
      await phone.hangUp();
    } finally {
      await phone.close();
    }
    // The double heard the phone's speech (upsampled from the 8 kHz line) and was configured by the agent.
    const conn = fake.realtime[connections]!;
    expect(conn.session.audio.input.turn_detection).toMatchObject({ type: 'server_vad', silence_duration_ms: 500 });
    expect(conn.responses.some((r) => r.text === ANSWER)).toBe(true);
    const [row] = await sql<{ id: string }[]>`select id from calls where to_number = ${bought.body.phone_number as string}`;
    const callId = row!.id;
    const call = await until('the record', async () => {
      const c = (await api('GET', `/v1/calls/${callId}`)).body;
      return c.status === 'completed' && c.messages?.some((m: { content: string }) => m.content === ANSWER) ? c : null;
    });
    expect(call).toMatchObject({ type: 'inbound', end_reason: 'user_hangup' });
    expect(call.messages[0]).toMatchObject({ role: 'agent', content: FIRST_MESSAGE });
    expect(call.messages).toEqual(expect.arrayContaining([expect.objectContaining({ role: 'user', content: 'What time do you open tomorrow morning?' })]));
    expect(call.latency.e2e.samples).toBeGreaterThanOrEqual(1);
  });
});
