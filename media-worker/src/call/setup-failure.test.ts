// A call whose agent cannot be built: each cause named with its fix (never a key or an operator's path), and the
// `failed` report the control plane turns into a failed call.
import { initializeLogger } from '@livekit/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InternalApiClient } from '../../../shared/internal-api.ts';
import { startFakeInternalApi, type FakeInternalApi } from '../../../test/support/fake-internal-api.ts';
import { baseConfig } from '../session/harness.test-support.ts';
import { CallSetupError, buildCallModels, failCallSetup } from './setup-failure.ts';

let api: FakeInternalApi;
beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'error' });
  api = await startFakeInternalApi();
});
afterAll(() => api.close());

/** The problem buildCallModels throws for this config and environment (null: it built). */
function problemOf(config = baseConfig(), env: Record<string, string> = {}) {
  try {
    buildCallModels(config, env);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(CallSetupError);
    return (err as CallSetupError).problem;
  }
}

describe('buildCallModels', () => {
  it('a model without a key: provider_key_missing naming the credential and the variable', () => {
    expect(problemOf()).toEqual({
      code: 'provider_key_missing',
      field: 'llm_id',
      message: "The agent's model uses OpenAI and there is no openai key: add the organisation's openai credential (POST /v1/integrations) or set OPENAI_API_KEY on the platform",
    });
  });

  it('a model host the egress rule refuses: model_host_refused naming LLM_PRIVATE_HOSTS with the host', () => {
    const config = baseConfig({ llm: { provider: 'openai', model: 'llama3.2', base_url: 'http://127.0.0.1:11434/v1', temperature: null, max_tokens: null } });
    const p = problemOf(config);
    expect(p).toMatchObject({ code: 'model_host_refused', field: 'llm_id' });
    expect(p!.message).toContain('address 127.0.0.1 is not public');
    expect(p!.message).toContain('LLM_PRIVATE_HOSTS=127.0.0.1');
    expect(problemOf(config, { LLM_PRIVATE_HOSTS: '127.0.0.1' })).toBeNull();
  });

  it('a local model with no local server nor GGUF file, or a GGUF path that is wrong (the path stays out)', () => {
    const local = baseConfig({ llm: { provider: 'local', model: 'llama3.2', base_url: null, temperature: null, max_tokens: null } });
    expect(problemOf(local)).toMatchObject({ code: 'local_model_missing', message: expect.stringContaining('LOCAL_LLM_BASE_URL') });
    const missing = problemOf(local, { LLM_MODEL_PATH: '/srv/secret-models/missing.gguf' });
    expect(missing).toMatchObject({ code: 'model_file_missing', field: 'llm_id' });
    expect(missing!.message).not.toContain('/srv/secret-models');
    expect(problemOf(local, { LOCAL_LLM_BASE_URL: 'http://127.0.0.1:11434/v1' })).toBeNull();
  });

  it('speech without a key, and a voice this worker lacks', () => {
    const env = { OPENAI_API_KEY: 'sk-platform-key-1234567890' };
    expect(problemOf(baseConfig({ agent: { transcriber: { provider: 'deepgram', model: 'nova-3', language: 'en-US' } } }), env)).toMatchObject({
      code: 'provider_key_missing',
      field: 'transcriber.provider',
      message: expect.stringContaining('DEEPGRAM_API_KEY'),
    });
    const voice = problemOf(baseConfig({ agent: { tts: { provider: 'local', model: 'festival', voice_id: 'kal-diphone' } } }), env);
    expect(voice).toMatchObject({ code: 'voice_unavailable', field: 'tts.voice_id', message: expect.stringContaining('GET /v1/voices') });
    // No key is ever part of a message.
    expect(JSON.stringify(voice)).not.toContain('sk-platform');
  });
});

describe('failCallSetup', () => {
  it('reports failed with the problem and waits for the control plane to take it', async () => {
    const client = new InternalApiClient({ baseUrl: api.url, token: api.token, retry: { baseDelayMs: 10, maxDelayMs: 50 } });
    api.failNextReports = { count: 1, status: 503 };
    const logged: unknown[] = [];
    let err: CallSetupError | null = null;
    try {
      buildCallModels(baseConfig(), {});
    } catch (e) {
      err = e as CallSetupError;
    }
    const reason = await failCallSetup(err!, { reporter: client.reporter('call-1'), logger: { error: (o: unknown) => void logged.push(o) } as never });
    expect(reason).toBe('configuration error');
    // Retried past the 503, delivered before it returned.
    expect(api.reports).toEqual([
      { kind: 'failed', callId: 'call-1', body: { seq: 1, end_reason: 'configuration_error', error: err!.problem } },
    ]);
    expect(logged[0]).toMatchObject({ code: 'provider_key_missing', field: 'llm_id' });
  });
});
