// The simulated caller's speech: which providers and voices it picks from the agent and the org's keys, and
// that the engines it builds talk to the providers (local stand-ins speaking their protocols) with the org's
// key and never a platform key.
import { initializeLogger } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startFakeDeepgram, type FakeDeepgram } from '../../../../test/support/fake-deepgram.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../../../test/support/fake-openai.ts';
import { LocalSTT } from '../../../../shared/speech/local-stt.ts';
import { LocalTTS } from '../../../../shared/speech/local-tts.ts';
import { findVoice } from '../../../../shared/voices.ts';
import { transcribeFrames } from '../../../../shared/sim-caller.ts';
import { toneFrames } from '../../../../test/support/voice-io.ts';
import { OFFLINE_CALLER, planCallerSpeech, type CallerSpeechPlan } from './caller-speech.ts';
import { buildCallerSpeech } from './caller-engines.ts';

type Agent = Parameters<typeof planCallerSpeech>[0];
const agent = (over: Partial<Agent> = {}): Agent => ({
  transcriber: { provider: 'deepgram', model: 'nova-2', language: 'en-US' },
  tts: { provider: 'openai', model: 'gpt-4o-mini-tts', voice_id: 'nova' },
  language: 'en-US',
  ...over,
});

/** 1 s of a loud tone (speech to the stand-ins' energy detectors), then 0.5 s of silence, at 16 kHz. */
const toneUtterance = () => toneFrames(16000, 1000, 500);

describe('planCallerSpeech', () => {
  it('without speech credentials: the offline voices, listening only for a persona', () => {
    for (const keys of [{}, { anthropic: 'sk-ant-org', gemini: 'g-org' }]) {
      expect(planCallerSpeech(agent(), keys, true)).toEqual({ language: 'en-US', ...OFFLINE_CALLER });
      expect(planCallerSpeech(agent(), keys, false)).toEqual({ language: 'en-US', stt: null, tts: OFFLINE_CALLER.tts });
    }
    expect(OFFLINE_CALLER).toEqual({
      stt: { provider: 'local', model: 'pocketsphinx', language: 'en-US' },
      tts: { provider: 'local', model: 'festival', voice_id: 'us-slt-hts' },
    });
  });

  it("with the agent's providers' keys: the agent's STT, and its TTS in a voice of the other gender", () => {
    const plan = planCallerSpeech(agent(), { deepgram: 'dg-org', openai: 'sk-org' }, true);
    expect(plan.stt).toEqual({ provider: 'deepgram', model: 'nova-2', language: 'en-US' });
    expect(plan.tts).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini-tts' });
    expect(plan.tts.voice_id).not.toBe('nova');
    expect(findVoice('openai', plan.tts.voice_id)?.gender).toBe('male');
    // A male agent voice: a female caller.
    const other = planCallerSpeech(agent({ tts: { provider: 'openai', model: 'tts-1', voice_id: 'onyx' } }), { openai: 'sk-org' }, false);
    expect(other.tts).toMatchObject({ provider: 'openai', model: 'tts-1' });
    expect(findVoice('openai', other.tts.voice_id)?.gender).toBe('female');
  });

  it("an agent on Deepgram Flux: the caller listens with the provider's default model (it transcribes whole clips; Flux ends turns on silence)", () => {
    const flux = agent({ transcriber: { provider: 'deepgram', model: 'flux-general-multi', language: 'de' }, language: 'de' });
    expect(planCallerSpeech(flux, { deepgram: 'dg-org' }, true).stt).toEqual({ provider: 'deepgram', model: 'nova-3', language: 'de' });
  });

  it("without a key for the agent's providers: the org's other providers, in order, with their defaults", () => {
    // The agent hears with pocketsphinx and speaks with espeak; the org has OpenAI only.
    const local = agent({ transcriber: { provider: 'local', model: 'pocketsphinx', language: 'en-US' }, tts: { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' } });
    expect(planCallerSpeech(local, { openai: 'sk-org' }, true)).toMatchObject({
      stt: { provider: 'openai', model: 'gpt-4o-transcribe', language: 'en-US' },
      tts: { provider: 'openai', model: 'gpt-4o-mini-tts' },
    });
    // Deepgram before OpenAI for listening; OpenAI before Cartesia, ElevenLabs and Deepgram for speaking.
    const all = { openai: 'sk-org', deepgram: 'dg-org', cartesia: 'car-org', elevenlabs: 'el-org' };
    const plan = planCallerSpeech(local, all, true);
    expect([plan.stt?.provider, plan.tts.provider]).toEqual(['deepgram', 'openai']);
    expect(planCallerSpeech(local, { cartesia: 'car-org', elevenlabs: 'el-org', deepgram: 'dg-org' }, false).tts.provider).toBe('cartesia');
    expect(planCallerSpeech(local, { elevenlabs: 'el-org', deepgram: 'dg-org' }, false).tts.provider).toBe('elevenlabs');
    const dg = planCallerSpeech(local, { deepgram: 'dg-org' }, true);
    expect(dg.stt).toEqual({ provider: 'deepgram', model: 'nova-3', language: 'en-US' });
    expect(dg.tts).toMatchObject({ provider: 'deepgram', model: 'aura-2' });
    expect(findVoice('deepgram', dg.tts.voice_id)?.languages).toEqual(['en-US']);
  });

  it("speaks the agent's language: a provider with no voice for it is passed over", () => {
    const french = agent({ transcriber: { provider: 'local', model: 'pocketsphinx', language: 'en-US' }, tts: { provider: 'local', model: 'espeak-ng', voice_id: 'fr-fr' }, language: 'fr' });
    // Deepgram transcribes French (nova-3) but has no French voice: the caller listens with it and speaks offline.
    const plan = planCallerSpeech(french, { deepgram: 'dg-org' }, true);
    expect(plan.stt).toEqual({ provider: 'deepgram', model: 'nova-3', language: 'fr' });
    expect(plan.tts).toEqual(OFFLINE_CALLER.tts);
    expect(planCallerSpeech(french, { deepgram: 'dg-org', cartesia: 'car-org' }, false).tts.provider).toBe('cartesia');
  });
});

describe('buildCallerSpeech', () => {
  const ORG_DEEPGRAM = 'dg-org-own-key-0123';
  const ORG_OPENAI = 'sk-org-own-key-0123';
  const PLATFORM = { DEEPGRAM_API_KEY: 'dg-canary-platform', OPENAI_API_KEY: 'sk-canary-platform' };
  let deepgram: FakeDeepgram;
  let openai: FakeOpenAI;

  beforeAll(async () => {
    initializeLogger({ pretty: false, level: 'error' });
    // Only the org's key opens the stand-in: a connection is proof of the key it came with.
    deepgram = await startFakeDeepgram({ apiKeys: [ORG_DEEPGRAM], finalDelayMs: 100 });
    openai = await startFakeOpenAI({ transcription: { apiKeys: [ORG_OPENAI] } });
    // The platform's keys are in the process's environment, as on a control plane that has them.
    for (const [k, v] of Object.entries(PLATFORM)) vi.stubEnv(k, v);
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    await Promise.all([deepgram?.close(), openai?.close()]);
  });
  const built: { tts: { close(): Promise<void> }; stt: { close(): Promise<void> } | null }[] = [];
  afterEach(async () => {
    for (const s of built.splice(0)) await Promise.all([s.tts.close(), s.stt?.close()]);
  });
  const config = () => ({ DEEPGRAM_BASE_URL: deepgram.httpUrl, OPENAI_BASE_URL: openai.url });

  it('builds the offline voices with no key at all', () => {
    const speech = buildCallerSpeech({ language: 'en-US', ...OFFLINE_CALLER }, {}, {});
    built.push(speech);
    expect(speech.tts).toBeInstanceOf(LocalTTS);
    expect(speech.tts.model).toBe('festival');
    expect(speech.stt).toBeInstanceOf(LocalSTT);
  });

  it("listens with Deepgram at the operator's base URL with the org's key, and speaks with OpenAI with the org's key", async () => {
    const plan: CallerSpeechPlan = {
      language: 'en-US',
      stt: { provider: 'deepgram', model: 'nova-3', language: 'en-US' },
      tts: { provider: 'openai', model: 'gpt-4o-mini-tts', voice_id: 'ash' },
    };
    const speech = buildCallerSpeech(plan, { deepgram: ORG_DEEPGRAM, openai: ORG_OPENAI, anthropic: 'sk-ant-org' }, config());
    built.push(speech);

    // The caller's line: synthesised by the stand-in, asked for with the org's key and the chosen voice.
    const fromHeader = openai.headers.length;
    const frames: AudioFrame[] = [];
    for await (const audio of speech.tts.synthesize('Hello, I would like to book a visit.')) frames.push(audio.frame);
    expect(frames.length).toBeGreaterThan(0);
    expect(openai.speechRequests.at(-1)).toBe('Hello, I would like to book a visit.');
    const auth = openai.headers.slice(fromHeader).map((h) => h.authorization);
    expect(auth.length).toBeGreaterThan(0);
    expect(new Set(auth)).toEqual(new Set([`Bearer ${ORG_OPENAI}`]));

    // The agent's speech heard as the caller hears it (sim-caller.ts): the whole utterance pushed into a new
    // stream at once, before the engine has connected.
    void deepgram.nextConnection(20_000).then((conn) => conn.expect({ segments: [{ text: 'We open at nine.', startMs: 0, endMs: 800 }] }));
    const heard = await transcribeFrames(speech.stt!, toneUtterance());
    const conn = deepgram.connections.at(-1)!;
    expect(heard).toBe('We open at nine.');
    expect(conn.audioMs).toBeGreaterThanOrEqual(1000);
    expect(conn.params.get('language')).toBe('en-US');
  });

  it("listens with OpenAI's realtime STT at the operator's base URL with the org's key, and hears the whole utterance", async () => {
    const plan: CallerSpeechPlan = {
      language: 'en-US',
      stt: { provider: 'openai', model: 'gpt-4o-transcribe', language: 'en-US' },
      tts: { provider: 'openai', model: 'gpt-4o-mini-tts', voice_id: 'ash' },
    };
    const speech = buildCallerSpeech(plan, { openai: ORG_OPENAI, deepgram: ORG_DEEPGRAM }, config());
    built.push(speech);
    openai.setTranscriber(() => 'We open at nine.');
    const before = openai.transcriptions.length;

    // As the caller hears an utterance: pushed whole, flushed, the input ended once the engine has answered.
    const heard = await transcribeFrames(speech.stt!, toneUtterance());
    expect(heard).toBe('We open at nine.');
    const conn = openai.transcriptions[before]!;
    expect(openai.transcriptions).toHaveLength(before + 1);
    expect(conn.headers.authorization).toBe(`Bearer ${ORG_OPENAI}`);
    expect(conn.params.get('intent')).toBe('transcription');
    expect(conn.params.get('model')).toBe('gpt-4o-transcribe');
    // A clip is committed by the flush: no server VAD, which would wait for more silence than its tail holds.
    expect(conn.sessions[0]).toMatchObject({ type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: { model: 'gpt-4o-transcribe', language: 'en' }, turn_detection: null } } });
    expect(conn.received).toEqual(['session.update', 'input_audio_buffer.commit']);
    // The 16 kHz clip reaches it resampled to 24 kHz (the resampler holds back a few ms of the tail).
    expect(conn.audioMs).toBeGreaterThan(1400);
    expect(conn.completed()).toEqual(['We open at nine.']);
  });

  it('never falls back to a platform key: a provider the org has no key for cannot be built', () => {
    const plan: CallerSpeechPlan = {
      language: 'en-US',
      stt: { provider: 'deepgram', model: 'nova-3', language: 'en-US' },
      tts: { provider: 'openai', model: 'gpt-4o-mini-tts', voice_id: 'ash' },
    };
    // The platform keys are in process.env, and even in the settings passed in: neither is read.
    const withPlatform = { ...config(), ...PLATFORM } as ReturnType<typeof config>;
    expect(() => buildCallerSpeech(plan, { deepgram: ORG_DEEPGRAM }, withPlatform)).toThrow(/no openai key/);
    expect(() => buildCallerSpeech(plan, { openai: ORG_OPENAI }, withPlatform)).toThrow(/no deepgram key/);
    // And the plan never names such a provider: with no key of the org's, the caller speaks offline.
    expect(planCallerSpeech(agent(), {}, true)).toEqual({ language: 'en-US', ...OFFLINE_CALLER });
  });
});
