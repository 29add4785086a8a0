// Turns a realtime (speech-to-speech) model must not answer by itself (realtime-turn-gate.ts): the real CallSession
// and the openai plugin's RealtimeModel against the local Realtime double, whose server VAD ends the caller's turn
// and answers it on its own.
// - Recording consent `ask`: the question is said first; the caller's yes (read from the provider's input
//   transcription) starts the recording, a no leaves it off; the model's own reply to the answer is cut before it
//   plays; the first message follows; the caller's next question is answered by the model as usual.
// - An outbound call: a person's "Hello?" gets the first message, not the model's own reply, and their next words the
//   model's reply; an answering machine's greeting gets the voicemail message alone, and the call ends `voicemail`.
// - A phone menu gets the key its side-task model chooses.
// - A muted agent's own reply is cancelled; a supervisor's say is spoken by the model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initializeLogger } from '@livekit/agents';
import { RECORDING_CONSENT_DEFAULTS } from '../../../schemas/agents.ts';
import { contentText, startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { synthesize } from '../../../test/support/voice-io.ts';
import type { CallConfig } from '../../../schemas/internal.ts';
import { createRealtimeModel } from '../providers/realtime.ts';
import type { CallSessionOptions } from './call-context.ts';
import { NAVIGATION_PROMPT } from './ivr-navigator.ts';
import { SIDE_TASK_MODELS, createSideLlm } from '../providers/side-llm.ts';
import { baseConfig, startRealtimeCall, waitUntil } from './harness.test-support.ts';

const OWN_REPLY = 'This is my own reply.';
let fake: FakeOpenAI;
/** What the caller says, turn by turn, as the provider transcribes it. */
let transcripts: string[] = [];

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'warn' });
  fake = await startFakeOpenAI({ realtime: { apiKeys: ['sk-platform'], firstAudioMs: [300, 500] } });
  fake.setRealtimeTranscriber(({ index }) => transcripts[index] ?? 'Thank you.');
  fake.setRealtimeResponder((turn) => {
    const fixed = /Say exactly [^"]*"([^"]*)"\s*$/.exec(turn.responseInstructions ?? '');
    return { text: fixed ? fixed[1]! : OWN_REPLY };
  });
});
afterAll(async () => {
  await fake?.close();
});

const REALTIME: CallConfig['llm'] = {
  provider: 'openai',
  model: 'gpt-realtime',
  base_url: null,
  temperature: null,
  max_tokens: null,
  realtime: { voice: 'marin', turn_detection: 'server_vad', eagerness: 'auto', silence_duration_ms: 400 },
};

/** A started call on the realtime model, built as the worker builds it, on a line and a capture. */
async function realtimeCall(config: CallConfig, extra: Partial<CallSessionOptions> = {}) {
  const env = { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-platform' };
  const realtime = createRealtimeModel(config.llm as Parameters<typeof createRealtimeModel>[0], {}, env);
  // With its side-task text model, as the worker builds them (call/setup-failure.ts).
  return startRealtimeCall(config, realtime, { sideLlm: createSideLlm(config.llm, {}, env), extra });
}

describe('recording consent on a realtime model', () => {
  it.each([
    { said: 'Yes, that is fine.', allowed: true, result: 'accepted' },
    { said: 'No, please do not.', allowed: false, result: 'declined' },
  ])("asks, takes the caller's answer ($said) from the input transcription, cuts the model's reply to it, then greets", async ({ said: spoken, allowed, result }) => {
    transcripts = [spoken, 'What time do you open?'];
    const config = baseConfig({
      call: { id: `call_rt_consent_${result}` },
      agent: { first_message: 'Hello, Acme.', recording_consent: 'ask' },
      llm: REALTIME,
      recording: { enabled: true },
    });
    const { call, line, out, agentTexts } = await realtimeCall(config);
    await waitUntil(() => agentTexts().includes(RECORDING_CONSENT_DEFAULTS.ask), 20_000, 'the question');
    expect(agentTexts()).not.toContain('Hello, Acme.');
    await waitUntil(() => !out.playing && call.session.agentState === 'listening', 20_000, 'the question played');
    await line.say(await synthesize(spoken, 'espeak-ng'));
    expect(await call.consent.allowed).toBe(allowed);
    await waitUntil(() => agentTexts().includes('Hello, Acme.'), 30_000, 'the first message after the answer');
    await waitUntil(() => !out.playing && call.session.agentState === 'listening', 20_000, 'the first message played');
    // The model's own reply to "yes" never reached the caller whole.
    expect(agentTexts()).not.toContain(OWN_REPLY);
    // The next turn is the model's as usual.
    await line.say(await synthesize('What time do you open?', 'espeak-ng'));
    await waitUntil(() => agentTexts().includes(OWN_REPLY), 30_000, "the model's reply to the next question");
    const report = await call.end('user_hangup');
    await line.close();
    expect(report.recording_consent).toBe(result);
    const said = report.messages.filter((m) => m.role === 'agent' && m.content).map((m) => m.content);
    expect(said.indexOf(RECORDING_CONSENT_DEFAULTS.ask)).toBeLessThan(said.indexOf('Hello, Acme.'));
    expect(said.filter((t) => t === OWN_REPLY)).toHaveLength(1);
  }, 120_000);
});

describe('an outbound call on a realtime model', () => {
  it('a person\'s "Hello?" gets the first message, not the model\'s own reply; their next words get the model\'s', async () => {
    transcripts = ['Hello?', 'Who is this?'];
    const { call, line, out, agentTexts } = await realtimeCall(
      baseConfig({ call: { id: 'call_rt_outbound', type: 'outbound', direction: 'outbound' }, agent: { first_message: 'Hi, this is Acme calling about your order.' }, llm: REALTIME }),
    );
    await line.say(await synthesize('Hello?', 'espeak-ng'));
    await waitUntil(() => agentTexts().includes('Hi, this is Acme calling about your order.'), 30_000, 'the first message');
    await waitUntil(() => !out.playing && call.session.agentState === 'listening', 20_000, 'the first message played');
    expect(agentTexts()).not.toContain(OWN_REPLY);
    await line.say(await synthesize('Who is this?', 'espeak-ng'));
    await waitUntil(() => agentTexts().includes(OWN_REPLY), 30_000, "the model's reply to the callee's next words");
    const report = await call.end('user_hangup');
    await line.close();
    const said = report.messages.filter((m) => m.role === 'agent' && m.content).map((m) => m.content);
    expect(said).toEqual(['Hi, this is Acme calling about your order.', OWN_REPLY]);
  }, 120_000);

  it("an answering machine's greeting gets the voicemail message alone, and the call ends voicemail", async () => {
    const greeting = 'Hi, you have reached Sam. I am not available. Please leave a message after the tone.';
    transcripts = [greeting];
    const { call, line, agentTexts } = await realtimeCall(
      baseConfig({
        call: { id: 'call_rt_voicemail', type: 'outbound', direction: 'outbound' },
        agent: { voicemail_detection: true, voicemail_message: 'Please call Acme back.', first_message: 'Hello, is this Sam?' },
        llm: REALTIME,
      }),
    );
    await line.say(await synthesize(greeting, 'espeak-ng'));
    const report = await call.ended;
    await line.close();
    expect(report.end_reason).toBe('voicemail');
    expect(call.voicemail?.verdict).toBe('machine');
    expect(agentTexts()).not.toContain(OWN_REPLY);
    expect(report.messages.filter((m) => m.role === 'agent' && m.content).map((m) => m.content)).toEqual(['Please call Acme back.']);
  }, 120_000);
});

describe('a phone menu on a realtime model', () => {
  it("the menu gets no reply of the model's own: its side-task model chooses the key, and the person reached gets the first message", async () => {
    const menu = 'For sales, press 1. For billing, press 2.';
    const person = 'Hello, this is Ann speaking. How can I help you?';
    transcripts = [menu, person];
    // The goal shares no word with the menu's options: only the model can choose (the keyword fallback finds none).
    fake.setResponder((req) => ({ text: contentText(req.messages[0]!) === NAVIGATION_PROMPT ? '2' : 'no' }));
    const pressed: string[] = [];
    const requestsBefore = fake.requests.length;
    const { call, line, agentTexts } = await realtimeCall(
      baseConfig({
        call: { id: 'call_rt_ivr', type: 'outbound', direction: 'outbound', ivr: { goal: 'pay my invoice', max_menus: 4 } },
        agent: { first_message: 'Hi, I am calling about an invoice.' },
        llm: REALTIME,
      }),
      { actions: { sendDtmf: async (keys) => void pressed.push(keys) } },
    );
    await line.say(await synthesize(menu, 'espeak-ng'));
    await waitUntil(() => pressed.length > 0, 30_000, 'a key pressed');
    expect(pressed).toEqual(['2']);
    const asked = fake.requests.slice(requestsBefore).find((r) => contentText(r.messages[0]!) === NAVIGATION_PROMPT);
    expect(asked?.model).toBe(SIDE_TASK_MODELS.openai);
    await line.say(await synthesize(person, 'espeak-ng'));
    await waitUntil(() => agentTexts().includes('Hi, I am calling about an invoice.'), 30_000, 'the first message to the person');
    const report = await call.end('user_hangup');
    await line.close();
    expect(agentTexts()).not.toContain(OWN_REPLY);
    expect(report.messages.filter((m) => m.role === 'agent' && m.content && !m.tool_call).map((m) => m.content)).toEqual(['Hi, I am calling about an invoice.']);
  }, 120_000);
});

describe('supervision on a realtime model', () => {
  it("muted, the caller's turn gets no reply of the model's own; a say is spoken by the model; unmuted, it answers again", async () => {
    transcripts = ['Are you there?', 'Hello again?'];
    const { call, line, out, agentTexts } = await realtimeCall(baseConfig({ call: { id: 'call_rt_supervised' }, agent: { first_message: 'Hello, Acme.' }, llm: REALTIME }));
    await waitUntil(() => agentTexts().includes('Hello, Acme.') && !out.playing && call.session.agentState === 'listening', 30_000, 'the greeting played');
    await call.supervision.apply({ seq: 1, action: 'mute_agent' });
    const conn = fake.realtime.at(-1)!;
    const before = conn.responses.length;
    await line.say(await synthesize('Are you there?', 'espeak-ng'));
    // The provider answered the turn by itself; the worker cancelled that response before any of it was heard.
    await waitUntil(() => conn.responses.slice(before).some((r) => r.status === 'cancelled'), 30_000, "the model's own reply cancelled");
    expect(agentTexts()).not.toContain(OWN_REPLY);
    await call.supervision.apply({ seq: 2, action: 'unmute_agent' });
    await call.supervision.apply({ seq: 3, action: 'say', text: 'A colleague will call you back today.', when: 'now' });
    await waitUntil(() => call.messages().some((m) => m.supervisor?.action === 'say' && m.content === 'A colleague will call you back today.'), 30_000, 'the say spoken and marked');
    await waitUntil(() => !out.playing && call.session.agentState === 'listening', 20_000, 'the say played');
    await line.say(await synthesize('Hello again?', 'espeak-ng'));
    await waitUntil(() => agentTexts().includes(OWN_REPLY), 30_000, 'the reply once unmuted');
    await call.end('user_hangup');
    await line.close();
    expect(agentTexts().filter((t) => t === OWN_REPLY)).toHaveLength(1);
  }, 120_000);
});
