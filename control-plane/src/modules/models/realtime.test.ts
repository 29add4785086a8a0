// Realtime (speech-to-speech) model records and the agents on them: the settings and their defaults, the 422s for
// fields that make no sense (another provider, a field of the other turn detection, temperature, an agent's
// transcriber or tts), and the settings in the agent's version snapshot (what a call's config is built from).
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';

let tp: TestPlatform;
let key: string;

beforeAll(async () => {
  tp = await usePlatform();
  ({ key } = await tp.createOrg('realtime-models'));
});

const req = (method: 'post' | 'patch' | 'get', path: string, body?: Record<string, unknown>) => tp.request(method, path, { key, ...(body ? { body } : {}) });
const locs = (res: { body: { detail?: { loc: string[] }[] } }) => (res.body.detail ?? []).map((d) => d.loc.join('.'));

describe('realtime model records', () => {
  it('a realtime model id gets the defaults; given settings are kept; a text model has none', async () => {
    const byId = await req('post', '/v1/models', { name: 'rt', model: 'gpt-realtime' });
    expect(byId.status).toBe(201);
    expect(byId.body).toMatchObject({ provider: 'openai', realtime: { voice: 'marin', turn_detection: 'semantic_vad', eagerness: 'auto', silence_duration_ms: null } });
    const given = await req('post', '/v1/models', { name: 'rt2', model: 'gpt-realtime', realtime: { voice: 'cedar', turn_detection: 'server_vad', silence_duration_ms: 400 } });
    expect(given.body.realtime).toEqual({ voice: 'cedar', turn_detection: 'server_vad', eagerness: 'auto', silence_duration_ms: 400 });
    const text = await req('post', '/v1/models', { name: 'chat', model: 'gpt-4o-mini' });
    expect(text.body.realtime).toBeNull();
    // Opting out: a realtime id used as a text model.
    expect((await req('post', '/v1/models', { name: 'plain', model: 'gpt-4o-realtime-preview', realtime: null })).body.realtime).toBeNull();
    const listed = await req('get', '/v1/models?limit=10');
    expect(listed.body.items.find((m: { id: string }) => m.id === given.body.id).realtime.voice).toBe('cedar');
  });

  it('answers 422 naming the field for what a realtime model cannot take', async () => {
    const anthropic = await req('post', '/v1/models', { name: 'c', model: 'claude-sonnet-4-5', realtime: { voice: 'marin' } });
    expect(anthropic.status).toBe(422);
    expect(locs(anthropic)).toEqual(['body.realtime']);
    const mixed = await req('post', '/v1/models', { name: 'm', model: 'gpt-realtime', realtime: { turn_detection: 'semantic_vad', silence_duration_ms: 300 } });
    expect(locs(mixed)).toEqual(['body.realtime.silence_duration_ms']);
    const eager = await req('post', '/v1/models', { name: 'm', model: 'gpt-realtime', realtime: { turn_detection: 'platform', eagerness: 'high' } });
    expect(locs(eager)).toEqual(['body.realtime.eagerness']);
    const sampling = await req('post', '/v1/models', { name: 'm', model: 'gpt-realtime', temperature: 0.2, max_tokens: 100 });
    expect(locs(sampling)).toEqual(['body.temperature', 'body.max_tokens']);
    const badVoice = await req('post', '/v1/models', { name: 'm', model: 'gpt-realtime', realtime: { voice: 'a b' } });
    expect(badVoice.status).toBe(422);
    expect(locs(badVoice)[0]).toMatch(/^body\.realtime\.voice/);
  });

  it('PATCH merges the settings over the stored ones, and null makes it a text model', async () => {
    const m = (await req('post', '/v1/models', { name: 'rt', model: 'gpt-realtime' })).body;
    const patched = await req('patch', `/v1/models/${m.id}`, { realtime: { turn_detection: 'server_vad', silence_duration_ms: 700 } });
    expect(patched.status).toBe(200);
    expect(patched.body.realtime).toEqual({ voice: 'marin', turn_detection: 'server_vad', eagerness: 'auto', silence_duration_ms: 700 });
    expect((await req('patch', `/v1/models/${m.id}`, { name: 'renamed' })).body.realtime.silence_duration_ms).toBe(700);
    expect((await req('patch', `/v1/models/${m.id}`, { realtime: null })).body.realtime).toBeNull();
  });
});

describe('Gemini Live model records', () => {
  it("a live or native-audio gemini id gets Gemini's defaults (Puck, its activity detection); a text gemini id has none", async () => {
    for (const model of ['gemini-2.5-flash-native-audio-preview-09-2025', 'gemini-live-2.5-flash-preview']) {
      const res = await req('post', '/v1/models', { name: 'live', model });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({ provider: 'gemini', realtime: { voice: 'Puck', turn_detection: 'server_vad', silence_duration_ms: null } });
    }
    expect((await req('post', '/v1/models', { name: 'text', model: 'gemini-2.5-flash' })).body.realtime).toBeNull();
    // A text gemini id can still be made realtime explicitly; a voice in any case is stored as Google writes it.
    const explicit = await req('post', '/v1/models', { name: 'x', model: 'gemini-2.5-flash', realtime: { voice: 'kore', turn_detection: 'server_vad', silence_duration_ms: 300 } });
    expect(explicit.body.realtime).toMatchObject({ voice: 'Kore', turn_detection: 'server_vad', silence_duration_ms: 300 });
    const platform = await req('post', '/v1/models', { name: 'p', model: 'gemini-live-2.5-flash-preview', realtime: { voice: 'Charon', turn_detection: 'platform' } });
    expect(platform.body.realtime).toMatchObject({ voice: 'Charon', turn_detection: 'platform', silence_duration_ms: null });
  });

  it("answers 422 naming OpenAI's fields, an OpenAI voice, and a base_url", async () => {
    const model = 'gemini-live-2.5-flash-preview';
    expect(locs(await req('post', '/v1/models', { name: 'g', model, realtime: { turn_detection: 'semantic_vad' } }))).toEqual(['body.realtime.turn_detection']);
    expect(locs(await req('post', '/v1/models', { name: 'g', model, realtime: { eagerness: 'high' } }))).toEqual(['body.realtime.eagerness']);
    const voice = await req('post', '/v1/models', { name: 'g', model, realtime: { voice: 'marin' } });
    expect(locs(voice)).toEqual(['body.realtime.voice']);
    expect(voice.body.detail[0].msg).toMatch(/Puck/);
    expect(locs(await req('post', '/v1/models', { name: 'g', model, realtime: { turn_detection: 'platform', silence_duration_ms: 300 } }))).toEqual(['body.realtime.silence_duration_ms']);
    expect(locs(await req('post', '/v1/models', { name: 'g', model, temperature: 0.5 }))).toEqual(['body.temperature']);
    // Gemini takes no base_url (it is for OpenAI-compatible servers).
    expect((await req('post', '/v1/models', { name: 'g', model, provider: 'gemini', base_url: 'https://example.com/v1' })).status).toBe(422);
  });

  it("PATCH to a Gemini Live id keeps no OpenAI settings silently: the stored OpenAI turn detection and voice are named", async () => {
    const m = (await req('post', '/v1/models', { name: 'rt', model: 'gpt-realtime' })).body;
    const moved = await req('patch', `/v1/models/${m.id}`, { model: 'gemini-live-2.5-flash-preview' });
    expect(moved.status).toBe(422);
    expect(locs(moved)).toEqual(['body.realtime.turn_detection', 'body.realtime.voice']);
    const ok = await req('patch', `/v1/models/${m.id}`, { model: 'gemini-live-2.5-flash-preview', realtime: { voice: 'Aoede', turn_detection: 'server_vad' } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ provider: 'gemini', realtime: { voice: 'Aoede', turn_detection: 'server_vad', eagerness: 'auto' } });
  });
});

describe('agents on a realtime model', () => {
  it('take no transcriber or tts (422 naming each), on create, update and draft; other fields are fine', async () => {
    const rt = (await req('post', '/v1/models', { name: 'rt', model: 'gpt-realtime' })).body.id as string;
    const text = (await req('post', '/v1/models', { name: 'chat', model: 'gpt-4o-mini' })).body.id as string;
    const refused = await req('post', '/v1/agents', { name: 'a', llm_id: rt, transcriber: { provider: 'local' }, tts: { provider: 'local' } });
    expect(refused.status).toBe(422);
    expect(locs(refused)).toEqual(['body.transcriber', 'body.tts']);
    expect(refused.body.detail[1].msg).toMatch(/realtime \(speech-to-speech\).*realtime\.voice/);
    const agent = await req('post', '/v1/agents', { name: 'a', llm_id: rt, first_message: 'Hello!' });
    expect(agent.status).toBe(201);
    expect(locs(await req('patch', `/v1/agents/${agent.body.id}`, { tts: { provider: 'local' } }))).toEqual(['body.tts']);
    expect(locs(await req('patch', `/v1/agents/${agent.body.id}/draft`, { transcriber: { provider: 'local' } }))).toEqual(['body.transcriber']);
    // Moving to a text model with a voice is fine; so is a pipeline agent's voice.
    expect((await req('patch', `/v1/agents/${agent.body.id}`, { llm_id: text, tts: { provider: 'local' } })).status).toBe(200);
    expect((await req('patch', `/v1/agents/${agent.body.id}`, { llm_id: rt, tts: { provider: 'local' } })).status).toBe(422);
  });

  it("carries the model's realtime settings in the agent's version snapshot", async () => {
    const rt = (await req('post', '/v1/models', { name: 'rt', model: 'gpt-realtime', realtime: { voice: 'verse' } })).body.id as string;
    const agent = (await req('post', '/v1/agents', { name: 'a', llm_id: rt })).body;
    const [row] = await tp.sql<{ snapshot: { model: { realtime: { voice: string } } } }[]>`
      select snapshot from agent_versions where agent_id = ${agent.id} order by version desc limit 1`;
    expect(row!.snapshot.model.realtime.voice).toBe('verse');
  });
});
