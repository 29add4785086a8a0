// docs/security.md, "Realtime models": the realtime WebSocket is a model egress path under the text LLMs' rules.
// OpenAI Realtime first, then Gemini Live (its key travels in the upgrade's URL, `?key=`, which the double records).
// The platform's OpenAI key (a canary in the worker's environment) reaches only the operator's endpoint
// (OPENAI_BASE_URL, here the realtime double); a tenant's base_url gets the org's own key or none, never the canary,
// even when the operator lets that host through; a tenant's private or metadata address is refused before any
// connection, naming LLM_PRIVATE_HOSTS. Each session really connects (the real openai plugin against the double),
// and the double records the upgrade's Authorization header.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GoogleGenAI } from '@google/genai';
import { initializeLogger, type llm } from '@livekit/agents';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { startFakeGemini, type FakeGemini } from '../support/fake-gemini.ts';
import { createRealtimeModel } from '../../media-worker/src/providers/realtime.ts';
import { GuardedGeminiLiveModel } from '../../media-worker/src/providers/gemini-live.ts';
import { ProviderConfigError } from '../../shared/providers.ts';
import { SsrfBlockedError, type SsrfOptions } from '../../shared/ssrf.ts';

const CANARY = 'sk-canary-platform-realtime';
const ORG_KEY = 'sk-org-own-key';
const SETTINGS = { voice: 'marin', turn_detection: 'semantic_vad', eagerness: 'auto', silence_duration_ms: null } as const;

let fake: FakeOpenAI;
let gemini: FakeGemini;
beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'fatal' });
  fake = await startFakeOpenAI();
  gemini = await startFakeGemini();
});
afterAll(async () => {
  await fake?.close();
  await gemini?.close();
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

const LIVE = { voice: 'Puck', turn_detection: 'server_vad', eagerness: 'auto', silence_duration_ms: null } as const;
const liveConfig = (base_url: string | null) => ({ provider: 'gemini' as const, model: 'gemini-live-2.5-flash-preview', base_url, temperature: null, max_tokens: null, realtime: { ...LIVE } });
const GEMINI_CANARY = 'gm-canary-platform-live';
const GEMINI_ORG_KEY = 'gm-org-own-key';

/** Opens a session of the model; the Live connection the double received, or null when none came within `ms`. */
async function liveConnection(model: llm.RealtimeModel, ms = 15_000) {
  const before = gemini.live.length;
  const session = model.session();
  const errors: { recoverable: boolean }[] = [];
  session.on('error', (e: { recoverable: boolean }) => errors.push(e));
  const end = Date.now() + ms;
  while (gemini.live.length === before && !errors.length && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  await session.close();
  return { conn: gemini.live[before] ?? null, errors };
}

describe('Gemini Live egress and keys', () => {
  it("sends the platform key to the operator's endpoint only, and the org's own key over it", async () => {
    const env = { GOOGLE_API_KEY: GEMINI_CANARY, GEMINI_BASE_URL: gemini.url };
    expect((await liveConnection(createRealtimeModel(liveConfig(null), {}, env))).conn?.key).toBe(GEMINI_CANARY);
    expect((await liveConnection(createRealtimeModel(liveConfig(null), { gemini: GEMINI_ORG_KEY }, env))).conn?.key).toBe(GEMINI_ORG_KEY);
  });

  it('takes no tenant base_url at all (the API refuses one; a forged config is refused before connecting)', () => {
    const before = gemini.live.length;
    for (const url of [gemini.url, 'http://169.254.169.254/v1beta', 'http://10.0.0.5:8080/v1beta', 'https://models.example.com/v1beta']) {
      for (const keys of [{}, { gemini: GEMINI_ORG_KEY }]) {
        expect(() => createRealtimeModel(liveConfig(url), keys, { GOOGLE_API_KEY: GEMINI_CANARY, LLM_PRIVATE_HOSTS: '127.0.0.1' }), url).toThrow(ProviderConfigError);
      }
    }
    expect(gemini.live.length).toBe(before);
  });

  it("refuses at connect time a name the guard's lookup finds private (no rebinding between check and upgrade); other clients are untouched", async () => {
    const port = new URL(gemini.url).port;
    const toLoopback: SsrfOptions['resolve'] = async () => [{ address: '127.0.0.1', family: 4 }];
    const model = (ssrf: SsrfOptions) =>
      new GuardedGeminiLiveModel({ apiKey: GEMINI_CANARY, model: 'gemini-live-2.5-flash-preview', httpOptions: { baseUrl: `http://live.example.com:${port}` }, connOptions: { maxRetry: 0, retryIntervalMs: 0, timeoutMs: 5000 }, guard: { ssrf, timeoutMs: 5000 } });
    // The name passes the URL check; its address is loopback: the upgrade never reaches the double.
    const refused = await liveConnection(model({ resolve: toLoopback }));
    expect(refused.conn).toBeNull();
    expect(refused.errors.length).toBeGreaterThan(0);
    // The same with the operator's range allowed connects: the refusal above was the guard's lookup.
    const allowed = await liveConnection(model({ resolve: toLoopback, allowCidrs: ['127.0.0.0/8'] }));
    expect(allowed.conn?.headers.host).toBe(`live.example.com:${port}`);
    // A GoogleGenAI client of another part of the process connects as it always did (the hook is scoped).
    const before = gemini.live.length;
    const other = new GoogleGenAI({ apiKey: 'gm-other', httpOptions: { baseUrl: gemini.url.replace(/\/v1beta$/, '') } });
    const session = await other.live.connect({ model: 'gemini-live-2.5-flash-preview', callbacks: { onmessage: () => {} } });
    session.close();
    expect(gemini.live[before]?.key).toBe('gm-other');
  });

  it('has no platform key to fall back on for the operator endpoint without one: the call cannot start', () => {
    expect(() => createRealtimeModel(liveConfig(null), {}, { GEMINI_BASE_URL: gemini.url })).toThrow(/GOOGLE_API_KEY/);
  });
});
