// The STT and TTS factories shared by the media workers and the control plane's simulated caller.
import { initializeLogger } from '@livekit/agents';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import * as elevenlabs from '@livekit/agents-plugin-elevenlabs';
import * as openai from '@livekit/agents-plugin-openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeCartesia, type FakeCartesia } from '../../test/support/fake-cartesia.ts';
import { startFakeDeepgram } from '../../test/support/fake-deepgram.ts';
import { CartesiaTTS } from './cartesia-tts.ts';
import { FirstClauseTTS } from './first-clause.ts';
import { LocalSTT } from './local-stt.ts';
import { LocalTTS } from './local-tts.ts';
import { createSTT, createTTS, inputSampleRateFor } from './providers.ts';

let cartesia: FakeCartesia;

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'error' });
  cartesia = await startFakeCartesia('sk_car_org');
});
afterAll(async () => {
  await cartesia.close();
});

const noEnv = {};

describe('createSTT', () => {
  it('builds each provider', () => {
    expect(createSTT({ provider: 'local', model: null, language: 'en-US' }, {}, noEnv)).toBeInstanceOf(LocalSTT);
    const dg = createSTT({ provider: 'deepgram', model: 'nova-2', language: 'en-GB' }, { deepgram: 'k' }, noEnv);
    expect(dg).toBeInstanceOf(deepgram.STT);
    expect(dg.model).toBe('nova-2');
    expect(createSTT({ provider: 'openai', model: null, language: 'en-US' }, {}, { OPENAI_API_KEY: 'k' })).toBeInstanceOf(openai.STT);
  });

  it("builds Deepgram Flux (STTv2) for a Flux model, at the operator's v2 endpoint, with the org's key else the platform's", async () => {
    const dg = await startFakeDeepgram();
    try {
      const env = { DEEPGRAM_BASE_URL: dg.httpUrl, DEEPGRAM_API_KEY: 'platform-key' };
      const open = async (transcriber: { provider: string; model: string; language: string }, keys: { deepgram?: string }) => {
        const engine = createSTT(transcriber, keys, env);
        expect(engine).toBeInstanceOf(deepgram.STTv2);
        const stream = engine.stream();
        const conn = await dg.nextFluxConnection();
        // Ended as a call ends: CloseStream, which the stand-in answers by closing.
        stream.endInput();
        while (!conn.closed) await new Promise((r) => setTimeout(r, 10));
        await engine.close();
        return conn;
      };
      const en = await open({ provider: 'deepgram', model: 'flux-general-en', language: 'en-US' }, { deepgram: 'org-key' });
      expect(en.key).toBe('org-key');
      expect(Object.fromEntries(en.params)).toMatchObject({ model: 'flux-general-en', encoding: 'linear16', sample_rate: '16000' });
      // Deepgram's own turn options until the call sets its turn taking (media-worker stt-turns.ts).
      expect(en.params.has('eager_eot_threshold')).toBe(false);
      const multi = await open({ provider: 'deepgram', model: 'flux-general-multi', language: 'de-DE' }, {});
      expect(multi.key).toBe('platform-key');
      expect(multi.params.getAll('language_hint')).toEqual(['de']);
      expect((await open({ provider: 'deepgram', model: 'flux-general-multi', language: 'multi' }, {})).params.has('language_hint')).toBe(false);
      expect(() => createSTT({ provider: 'deepgram', model: 'flux-general-en', language: 'en-US' }, {}, noEnv)).toThrow(/no deepgram key/);
    } finally {
      await dg.close();
    }
  });

  it('rejects an unknown provider and a missing key', () => {
    expect(() => createSTT({ provider: 'whisper-x', model: null, language: null }, {}, noEnv)).toThrow(/unknown transcriber provider/);
    expect(() => createSTT({ provider: 'deepgram', model: null, language: null }, {}, noEnv)).toThrow(/no deepgram key/);
  });
});

describe('createTTS', () => {
  it('builds local voices with the agent speed', () => {
    const festival = createTTS({ provider: 'local', voice_id: null, model: 'festival' }, {}, { speed: 1.2 }, noEnv);
    expect(festival).toBeInstanceOf(LocalTTS);
    expect(festival.model).toBe('festival');
    expect((festival as LocalTTS).voice).toBe('us-slt-hts');
    const espeak = createTTS({ provider: 'local', voice_id: 'en-gb', model: null }, {}, {}, noEnv) as LocalTTS;
    expect([espeak.model, espeak.voice, espeak.sampleRate]).toEqual(['espeak-ng', 'en-gb', 22050]);
  });

  it('builds the cloud providers', () => {
    // OpenAI's speech endpoint takes whole texts: wrapped to go first clause first, reporting its own model.
    const speech = createTTS({ provider: 'openai', voice_id: 'nova', model: null }, { openai: 'k' }, { speed: 1.1 }, noEnv);
    expect(speech).toBeInstanceOf(FirstClauseTTS);
    expect((speech as FirstClauseTTS).engine).toBeInstanceOf(openai.TTS);
    expect(speech.model).toBe((speech as FirstClauseTTS).engine.model);
    expect(speech.capabilities.streaming).toBe(true);
    expect(createTTS({ provider: 'deepgram', voice_id: 'aura-2-thalia-en', model: null }, { deepgram: 'k' }, {}, noEnv).model).toBe('aura-2-thalia-en');
    expect(createTTS({ provider: 'elevenlabs', voice_id: 'v1', model: null }, { elevenlabs: 'k' }, { speed: 2, emotions: true }, noEnv)).toBeInstanceOf(
      elevenlabs.TTS,
    );
    expect(() => createTTS({ provider: 'polly', voice_id: null, model: null }, {}, {}, noEnv)).toThrow(/unknown TTS provider/);
  });

  it("sends Cartesia requests with the org's key, the agent speed, to the configured base URL", async () => {
    const engine = createTTS({ provider: 'cartesia', voice_id: 'voice-9', model: 'sonic-3' }, { cartesia: 'sk_car_org' }, { speed: 0.9, language: 'en-US' }, {
      CARTESIA_API_KEY: 'sk_car_platform',
      CARTESIA_BASE_URL: cartesia.url,
    });
    expect(engine).toBeInstanceOf(CartesiaTTS);
    const frames = [];
    for await (const audio of engine.synthesize('Hi there.')) frames.push(audio);
    expect(frames.length).toBeGreaterThan(0);
    expect(cartesia.requests.at(-1)!.body).toMatchObject({ voice: { id: 'voice-9' }, language: 'en', generation_config: { speed: 0.9 } });
  });
});

describe('inputSampleRateFor', () => {
  it("takes the caller's audio at the STT's own rate", () => {
    expect(inputSampleRateFor('local')).toBe(16000);
    expect(inputSampleRateFor('deepgram')).toBe(16000);
    expect(inputSampleRateFor('openai')).toBe(24000);
  });
});
