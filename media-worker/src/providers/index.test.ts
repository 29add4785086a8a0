import { initializeLogger, llm } from '@livekit/agents';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import * as elevenlabs from '@livekit/agents-plugin-elevenlabs';
import * as google from '@livekit/agents-plugin-google';
import * as openai from '@livekit/agents-plugin-openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../../../test/support/fake-anthropic.ts';
import { startFakeCartesia, type FakeCartesia } from '../../../test/support/fake-cartesia.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { FirstClauseTTS } from './first-clause.ts';
import { AnthropicLLM, CartesiaTTS, LocalSTT, LocalTTS, ProviderConfigError, createLLM, createSTT, createTTS, inputSampleRateFor, resolveKey } from './index.ts';

let anthropic: FakeAnthropic;
let cartesia: FakeCartesia;
let openaiServer: FakeOpenAI;

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'error' });
  anthropic = await startFakeAnthropic(() => ({ text: 'From Claude.' }));
  cartesia = await startFakeCartesia('sk_car_org');
  openaiServer = await startFakeOpenAI({ responder: () => ({ text: 'From a local model.' }) });
});
afterAll(async () => {
  await Promise.all([anthropic.close(), cartesia.close(), openaiServer.close()]);
});

const noEnv = {};
const ask = async (model: llm.LLM) => {
  const chatCtx = llm.ChatContext.empty();
  chatCtx.addMessage({ role: 'user', content: 'Hello?' });
  return (await model.chat({ chatCtx, connOptions: { maxRetry: 0, retryIntervalMs: 10, timeoutMs: 5000 } }).collect()).text;
};

describe('resolveKey', () => {
  it("prefers the org's key, then the platform's env keys in order, else explains what is missing", () => {
    expect(resolveKey('openai', { openai: 'org' }, { OPENAI_API_KEY: 'platform' })).toBe('org');
    expect(resolveKey('openai', {}, { OPENAI_API_KEY: 'platform' })).toBe('platform');
    expect(resolveKey('elevenlabs', {}, { ELEVENLABS_API_KEY: 'b' })).toBe('b');
    expect(resolveKey('gemini', {}, { GOOGLE_API_KEY: 'g', GEMINI_API_KEY: 'h' })).toBe('g');
    expect(() => resolveKey('deepgram', {}, noEnv)).toThrow(ProviderConfigError);
    expect(() => resolveKey('deepgram', {}, noEnv)).toThrow(/DEEPGRAM_API_KEY/);
  });
});

describe('createSTT', () => {
  it('builds each provider', () => {
    expect(createSTT({ provider: 'local', model: null, language: 'en-US' }, {}, noEnv)).toBeInstanceOf(LocalSTT);
    const dg = createSTT({ provider: 'deepgram', model: 'nova-2', language: 'en-GB' }, { deepgram: 'k' }, noEnv);
    expect(dg).toBeInstanceOf(deepgram.STT);
    expect(dg.model).toBe('nova-2');
    expect(createSTT({ provider: 'openai', model: null, language: 'en-US' }, {}, { OPENAI_API_KEY: 'k' })).toBeInstanceOf(openai.STT);
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

describe('createLLM', () => {
  it("talks to Anthropic with the org's key", async () => {
    const model = createLLM(
      { provider: 'anthropic', model: 'claude-x', base_url: null, temperature: 0.2, max_tokens: 200 },
      { anthropic: 'sk-ant-org' },
      { ANTHROPIC_API_KEY: 'sk-ant-platform', ANTHROPIC_BASE_URL: anthropic.url },
    );
    expect(model).toBeInstanceOf(AnthropicLLM);
    expect(await ask(model)).toBe('From Claude.');
    const req = anthropic.requests.at(-1)!;
    expect(req.headers['x-api-key'] ?? req.headers.authorization?.replace(/^Bearer /, '')).toBe('sk-ant-org');
    expect(req.body).toMatchObject({ model: 'claude-x', temperature: 0.2, max_tokens: 200 });
  });

  it('talks to any OpenAI-compatible base URL without a key (openai with base_url, or local)', async () => {
    // The stand-in is on loopback: a private host the operator lists (shared/model-egress.ts).
    const lan = { LLM_PRIVATE_HOSTS: '127.0.0.1' };
    const viaOpenai = createLLM({ provider: 'openai', model: 'llama3', base_url: openaiServer.url, temperature: null, max_tokens: null }, {}, lan);
    expect(viaOpenai).toBeInstanceOf(openai.LLM);
    expect(await ask(viaOpenai)).toBe('From a local model.');
    const local = createLLM({ provider: 'local', model: 'qwen', base_url: openaiServer.url, temperature: null, max_tokens: 64 }, {}, lan);
    expect(await ask(local)).toBe('From a local model.');
    expect(openaiServer.requests.at(-1)!.model).toBe('qwen');
  });

  it("takes the caller's audio at the STT's own rate", () => {
    expect(inputSampleRateFor('local')).toBe(16000);
    expect(inputSampleRateFor('deepgram')).toBe(16000);
    expect(inputSampleRateFor('openai')).toBe(24000);
  });

  it('builds Gemini, and explains a local LLM without a model', () => {
    expect(createLLM({ provider: 'gemini', model: 'gemini-2.5-flash', base_url: null, temperature: null, max_tokens: null }, { gemini: 'k' }, noEnv)).toBeInstanceOf(
      google.LLM,
    );
    expect(() => createLLM({ provider: 'local', model: 'x', base_url: null, temperature: null, max_tokens: null }, {}, noEnv)).toThrow(/LLM_MODEL_PATH/);
    expect(() =>
      createLLM({ provider: 'local', model: 'x', base_url: null, temperature: null, max_tokens: null }, {}, { LLM_MODEL_PATH: '/nonexistent/model.gguf' }),
    ).toThrow(/LLM model file not found/);
  });
});
