import { initializeLogger, llm } from '@livekit/agents';
import * as google from '@livekit/agents-plugin-google';
import * as openai from '@livekit/agents-plugin-openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../../../test/support/fake-anthropic.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { AnthropicLLM, ProviderConfigError, createLLM, resolveKey } from './index.ts';

let anthropic: FakeAnthropic;
let openaiServer: FakeOpenAI;

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'error' });
  anthropic = await startFakeAnthropic(() => ({ text: 'From Claude.' }));
  openaiServer = await startFakeOpenAI({ responder: () => ({ text: 'From a local model.' }) });
});
afterAll(async () => {
  await Promise.all([anthropic.close(), openaiServer.close()]);
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
