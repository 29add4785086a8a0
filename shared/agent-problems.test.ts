// What keeps a model or an agent from running, as the platform's settings say it (the API's `warnings`).
import { describe, expect, it } from 'vitest';
import { modelProblems, speechProblems } from './agent-problems.ts';

const none = new Set<string>();

describe('modelProblems', () => {
  it('a cloud model needs its key: the org credential or one of the platform variables', () => {
    expect(modelProblems({ provider: 'gemini', base_url: null }, none, {})).toEqual([
      { code: 'provider_key_missing', field: 'provider', message: expect.stringContaining('GOOGLE_API_KEY or GEMINI_API_KEY') },
    ]);
    expect(modelProblems({ provider: 'gemini', base_url: null }, none, { GEMINI_API_KEY: 'k' })).toEqual([]);
    expect(modelProblems({ provider: 'gemini', base_url: null }, new Set(['gemini']), {})).toEqual([]);
  });

  it('a local model needs the operator’s local server or GGUF file', () => {
    expect(modelProblems({ provider: 'local', base_url: null }, none, {})[0]?.code).toBe('local_model_missing');
    expect(modelProblems({ provider: 'local', base_url: null }, none, { LOCAL_LLM_BASE_URL: 'http://127.0.0.1:11434/v1' })).toEqual([]);
    expect(modelProblems({ provider: 'local', base_url: null }, none, { LLM_MODEL_PATH: '/models/m.gguf' })).toEqual([]);
  });

  it('a base_url on a private host is refused unless the operator allows it; a public one needs no key', () => {
    const url = 'http://10.20.0.7:8000/v1';
    const [p] = modelProblems({ provider: 'openai', base_url: url }, none, {}, 'agent');
    expect(p).toMatchObject({ code: 'model_host_refused', field: 'llm_id' });
    expect(p!.message).toContain('LLM_PRIVATE_HOSTS=10.20.0.7');
    expect(p!.message).toContain('address 10.20.0.7 is not public');
    expect(modelProblems({ provider: 'openai', base_url: url }, none, { LLM_PRIVATE_HOSTS: '10.20.0.0/16' })).toEqual([]);
    expect(modelProblems({ provider: 'openai', base_url: url }, none, { LLM_PRIVATE_HOSTS: '10.20.0.7' })).toEqual([]);
    expect(modelProblems({ provider: 'openai', base_url: 'http://localhost:11434/v1' }, none, {})[0]?.message).toContain('LLM_PRIVATE_HOSTS=localhost');
    expect(modelProblems({ provider: 'openai', base_url: 'https://llm.example.com/v1' }, none, {})).toEqual([]);
    // Production wants https even on a public host.
    expect(modelProblems({ provider: 'openai', base_url: 'http://llm.example.com/v1' }, none, { NODE_ENV: 'production' })[0]?.code).toBe('model_host_refused');
  });
});

describe('speechProblems', () => {
  it('cloud speech needs a key, local speech none', () => {
    expect(speechProblems({ transcriber: { provider: 'local' }, tts: { provider: 'local' } }, none, {})).toEqual([]);
    expect(speechProblems({ transcriber: { provider: 'openai' }, tts: { provider: 'elevenlabs' } }, none, { OPENAI_API_KEY: 'k' })).toEqual([
      { code: 'provider_key_missing', field: 'tts.provider', message: expect.stringContaining('ELEVEN_API_KEY or ELEVENLABS_API_KEY') },
    ]);
  });
});
