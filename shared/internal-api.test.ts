import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeInternalApi, type FakeInternalApi } from '../test/support/fake-internal-api.ts';
import { InternalApiClient, InternalApiError } from './internal-api.ts';

let api: FakeInternalApi;
beforeAll(async () => {
  api = await startFakeInternalApi();
});
afterAll(() => api.close());

const client = (token = api.token) => new InternalApiClient({ baseUrl: api.url, token, retry: { baseDelayMs: 5, maxDelayMs: 20, maxAttempts: 5 } });

const minimalConfig = (id: string) => ({
  call: { id, type: 'web', direction: null, to_number: null, from_number: null, variables: {}, metadata: {} },
  agent: {
    id: 'a', name: 'A', transcriber: { provider: 'local', model: 'pocketsphinx', language: 'en-US' }, tts: { provider: 'local', voice_id: 'en-us', model: 'espeak-ng' },
    first_message: null, end_call_phrases: [], max_duration_seconds: 60, interruption_sensitivity: 0.5, silence_timeout_seconds: 10,
    enable_recording: false, language: 'en-US', dynamic_variables: {}, voicemail_detection: false, voicemail_message: null,
    responsiveness: 0.5, speed: 1, background_sound: null, emotions: false, job_description: null, metadata: {},
    turn_taking: { detection: 'model', endpointing: 'fixed', min_delay_ms: 600, max_delay_ms: 2500, preemptive_generation: true, ignore_backchannels: false, barge_in: 'words' },
  },
  prompt: 'p', llm: { provider: 'openai', model: 'm', base_url: null, temperature: null, max_tokens: null },
  tools: [], knowledge: { knowledge_base_ids: [], mode: 'stuff' }, provider_keys: {}, recording: { enabled: false },
});

describe('internal API client', () => {
  it('fetches and validates the call config with the worker token', async () => {
    api.configs.set('c1', minimalConfig('c1') as never);
    const cfg = await client().getConfig('c1');
    expect(cfg.call.id).toBe('c1');
    await expect(client().getConfig('missing')).rejects.toMatchObject({ status: 404, retryable: false });
    await expect(client('wrong-token-wrong-token-wrong-token').getConfig('c1')).rejects.toMatchObject({ status: 401 });
  });

  it('rejects a config that breaks the contract', async () => {
    api.configs.set('bad', { ...minimalConfig('bad'), prompt: 42 } as never);
    await expect(client().getConfig('bad')).rejects.toBeInstanceOf(InternalApiError);
  });

  it('sends reports in order with seq, retrying 5xx, and supersedes unsent partials', async () => {
    api.failNextReports = { count: 2, status: 503 };
    const r = client().reporter('c2');
    expect(r.started({ started_at: new Date().toISOString() })).toBe(1);
    r.transcript([{ role: 'agent', content: 'a' }]);
    r.transcript([{ role: 'agent', content: 'a' }, { role: 'user', content: 'b' }]);
    r.ended({
      end_reason: 'user_hangup', ended_at: new Date().toISOString(), duration_seconds: 1, messages: [],
      usage: { stt_seconds: 0, llm_prompt_tokens: 0, llm_completion_tokens: 0, tts_characters: 0 },
      latency: { llm_ttft: z(), tts_ttfb: z(), eou_delay: z(), e2e: z() },
    });
    expect(await r.flush(5000)).toBe(true);
    const mine = api.reports.filter((x) => x.callId === 'c2');
    expect(mine.map((x) => x.kind)).toEqual(['started', 'ended']);
    expect(mine.map((x) => x.body.seq)).toEqual([1, 4]);
    expect(r.failed).toEqual([]);
  });

  it('gives up on a final 4xx without throwing', async () => {
    api.failNextReports = { count: 1, status: 422 };
    const r = client().reporter('c3');
    r.started({ started_at: new Date().toISOString() });
    await r.flush(5000);
    expect(r.failed.map((f) => (f.error as InternalApiError).status)).toEqual([422]);
  });
});

function z() {
  return { avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 };
}
