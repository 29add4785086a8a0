// docs/security.md, "Realtime models": the realtime WebSocket is a model egress path under the text LLMs' rules.
// The platform's OpenAI key (a canary in the worker's environment) reaches only the operator's endpoint
// (OPENAI_BASE_URL, here the realtime double); a tenant's base_url gets the org's own key or none, never the canary,
// even when the operator lets that host through; a tenant's private or metadata address is refused before any
// connection, naming LLM_PRIVATE_HOSTS. Each session really connects (the real openai plugin against the double),
// and the double records the upgrade's Authorization header.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initializeLogger, type llm } from '@livekit/agents';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { createRealtimeModel } from '../../media-worker/src/providers/realtime.ts';
import { SsrfBlockedError } from '../../shared/ssrf.ts';

const CANARY = 'sk-canary-platform-realtime';
const ORG_KEY = 'sk-org-own-key';
const SETTINGS = { voice: 'marin', turn_detection: 'semantic_vad', eagerness: 'auto', silence_duration_ms: null } as const;

let fake: FakeOpenAI;
beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'fatal' });
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake?.close();
});

const config = (base_url: string | null) => ({ provider: 'openai' as const, model: 'gpt-realtime', base_url, temperature: null, max_tokens: null, realtime: { ...SETTINGS } });

/** Opens a session of the model and returns the Authorization header the double received. */
async function authorizationSeen(model: llm.RealtimeModel): Promise<string | undefined> {
  const before = fake.realtime.length;
  const session = model.session();
  const end = Date.now() + 15_000;
  while (fake.realtime.length === before) {
    if (Date.now() > end) throw new Error('no connection');
    await new Promise((r) => setTimeout(r, 20));
  }
  await session.close();
  return fake.realtime[before]!.headers.authorization;
}

describe('realtime model egress and keys', () => {
  it("sends the platform key to the operator's endpoint only", async () => {
    const model = createRealtimeModel(config(null), {}, { OPENAI_API_KEY: CANARY, OPENAI_BASE_URL: fake.url });
    expect(await authorizationSeen(model)).toBe(`Bearer ${CANARY}`);
  });

  it("never sends the platform key to a tenant's base_url, even one the operator lets through", async () => {
    const env = { OPENAI_API_KEY: CANARY, LLM_PRIVATE_HOSTS: '127.0.0.1' };
    const keyless = await authorizationSeen(createRealtimeModel(config(fake.url), {}, env));
    expect(keyless).not.toContain(CANARY);
    expect(keyless).toBe('Bearer not-needed');
    expect(await authorizationSeen(createRealtimeModel(config(fake.url), { openai: ORG_KEY }, env))).toBe(`Bearer ${ORG_KEY}`);
    expect(fake.headers.concat(fake.realtime.map((c) => c.headers)).some((h) => JSON.stringify(h).includes(CANARY) && h.host !== new URL(fake.url).host)).toBe(false);
  });

  it("refuses a tenant's private or metadata address before connecting, naming LLM_PRIVATE_HOSTS", () => {
    const before = fake.realtime.length;
    for (const url of [fake.url, 'http://169.254.169.254/v1', 'http://10.0.0.5:8080/v1', 'http://localhost:9/v1', 'http://[::ffff:127.0.0.1]:9/v1']) {
      expect(() => createRealtimeModel(config(url), { openai: ORG_KEY }, { OPENAI_API_KEY: CANARY }), url).toThrow(SsrfBlockedError);
    }
    expect(() => createRealtimeModel(config('http://169.254.169.254/v1'), {}, {})).toThrow(/LLM_PRIVATE_HOSTS/);
    // In production a public tenant URL must be https (wss for the socket).
    expect(() => createRealtimeModel(config('http://models.example.com/v1'), { openai: ORG_KEY }, { NODE_ENV: 'production' })).toThrow(/https is required/);
    expect(fake.realtime.length).toBe(before);
  });

  it('has no platform key to fall back on for the operator endpoint without one: the call cannot start', () => {
    expect(() => createRealtimeModel(config(null), {}, { OPENAI_BASE_URL: fake.url })).toThrow(/OPENAI_API_KEY/);
  });
});
