// Recording consent `ask` on a realtime (speech-to-speech) model: the real CallSession and the openai plugin's
// RealtimeModel against the local Realtime double, whose server VAD ends the caller's turn and answers it on its
// own. The question is said first; the caller's yes (read from the provider's input transcription) starts the
// recording, a no leaves it off; the model's own reply to that answer is cut before it plays; the first message follows; and the
// caller's next question is answered by the model as usual (nothing more is cut).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inference, initializeLogger } from '@livekit/agents';
import { RECORDING_CONSENT_DEFAULTS } from '../../../schemas/agents.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { CaptureAudioOutput, LineAudioInput, synthesize } from '../../../test/support/voice-io.ts';
import { createLogger } from '../../../shared/logger.ts';
import { createRealtimeModel } from '../providers/realtime.ts';
import { CallSession } from './call-session.ts';
import { baseConfig, waitUntil } from './harness.test-support.ts';
import { nullSink } from './metrics-sink.ts';

const OWN_REPLY = 'This is my own reply.';
let fake: FakeOpenAI;
/** The caller's answer to the question, as the provider transcribes it. */
let answer = '';

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'warn' });
  fake = await startFakeOpenAI({ realtime: { apiKeys: ['sk-platform'], firstAudioMs: [300, 500] } });
  fake.setRealtimeTranscriber(({ index }) => (index === 0 ? answer : 'What time do you open?'));
  fake.setRealtimeResponder((turn) => {
    const fixed = /Say exactly [^"]*"([^"]*)"\s*$/.exec(turn.responseInstructions ?? '');
    return { text: fixed ? fixed[1]! : OWN_REPLY };
  });
});
afterAll(async () => {
  await fake?.close();
});

describe('recording consent on a realtime model', () => {
  it.each([
    { said: 'Yes, that is fine.', allowed: true, result: 'accepted' },
    { said: 'No, please do not.', allowed: false, result: 'declined' },
  ])("asks, takes the caller's answer ($said) from the input transcription, cuts the model's reply to it, then greets", async ({ said: spoken, allowed, result }) => {
    answer = spoken;
    const config = baseConfig({
      call: { id: `call_rt_consent_${result}` },
      agent: { first_message: 'Hello, Acme.', recording_consent: 'ask' },
      llm: { provider: 'openai', model: 'gpt-realtime', base_url: null, temperature: null, max_tokens: null, realtime: { voice: 'marin', turn_detection: 'server_vad', eagerness: 'auto', silence_duration_ms: 400 } },
      recording: { enabled: true },
    });
    const realtime = createRealtimeModel(config.llm as Parameters<typeof createRealtimeModel>[0], {}, { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-platform' });
    const line = new LineAudioInput();
    const out = new CaptureAudioOutput();
    const call = new CallSession({
      config,
      models: { stt: null, llm: realtime, tts: null, vad: new inference.VAD({ minSilenceDuration: 250 }), turnDetection: 'vad' },
      labels: { stt: { provider: 'openai', model: 'gpt-realtime' }, llm: { provider: 'openai', model: 'gpt-realtime' }, tts: { provider: 'openai', model: 'gpt-realtime' } },
      reporter: null,
      api: null,
      metrics: nullSink,
      logger: createLogger('test', 'warn'),
    });
    line.start();
    await call.start({ audioInput: line, audioOutput: out });
    const agentTexts = () => call.messages().filter((m) => m.role === 'agent' && !m.tool_call).map((m) => m.content);
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
