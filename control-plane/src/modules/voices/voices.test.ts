// GET /v1/voices: the static catalogue, its filters, and the voices:read scope for publishable keys.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { VOICES } from '../../../../shared/voices.ts';

let tp: TestPlatform;
let key: string;

beforeAll(async () => {
  tp = await usePlatform();
  ({ key } = await tp.createOrg('voices'));
});

describe('GET /v1/voices', () => {
  it('lists the catalogue with the envelope', async () => {
    const res = await tp.request('get', '/v1/voices?limit=100', { key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: VOICES.length, limit: 100, offset: 0 });
    expect(res.body.items[0]).toEqual({
      provider: 'openai',
      voice_id: 'alloy',
      name: 'Alloy',
      gender: 'neutral',
      languages: expect.arrayContaining(['en', 'de']),
      models: ['gpt-4o-mini-tts', 'tts-1', 'tts-1-hd'],
    });
    const page2 = await tp.request('get', '/v1/voices?limit=100&offset=100', { key });
    expect(page2.body.items).toHaveLength(Math.min(100, VOICES.length - 100));
  });

  it('filters by provider, language and model', async () => {
    const local = await tp.request('get', '/v1/voices?provider=local&language=en-GB', { key });
    expect(local.body.items.map((v: { voice_id: string }) => v.voice_id)).toEqual(['en-gb', 'en-gb-scotland', 'en-gb-x-rp', 'en-029']);
    const festival = await tp.request('get', '/v1/voices?provider=local&model=festival', { key });
    expect(festival.body).toEqual({
      items: [{ provider: 'local', voice_id: 'us-slt-hts', name: 'Festival SLT (HTS)', gender: 'female', languages: ['en-US'], models: ['festival'] }],
      total: 1,
      limit: 50,
      offset: 0,
    });
    const german = await tp.request('get', '/v1/voices?language=de&limit=100', { key });
    expect(new Set(german.body.items.map((v: { provider: string }) => v.provider))).toEqual(new Set(['openai', 'elevenlabs', 'cartesia', 'local']));
    const tts1 = await tp.request('get', '/v1/voices?provider=openai&model=tts-1', { key });
    expect(tts1.body.items.map((v: { voice_id: string }) => v.voice_id)).not.toContain('ballad');
  });

  it('422: unknown provider, malformed language, out-of-range limit', async () => {
    const res = await tp.request('get', '/v1/voices?provider=polly&language=english&limit=500', { key });
    expect(res.body).toEqual({
      detail: expect.arrayContaining([
        {
          type: 'enum',
          loc: ['query', 'provider'],
          msg: "Input should be 'openai', 'deepgram', 'elevenlabs', 'cartesia' or 'local'",
          input: 'polly',
          ctx: { expected: "'openai', 'deepgram', 'elevenlabs', 'cartesia' or 'local'" },
        },
        {
          type: 'string_pattern_mismatch',
          loc: ['query', 'language'],
          msg: "String should match pattern '^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$'",
          input: 'english',
          ctx: { pattern: '^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$' },
        },
        { type: 'less_than_equal', loc: ['query', 'limit'], msg: 'Input should be less than or equal to 100', input: 500, ctx: { le: 100 } },
      ]),
    });
    expect(res.body.detail).toHaveLength(3);
  });

  it('needs a credential', async () => {
    expect((await tp.request('get', '/v1/voices')).status).toBe(401);
  });

  it('is documented with its publishable-key scope', async () => {
    const doc = await tp.request('get', '/openapi.json');
    const op = doc.body.paths['/v1/voices'].get;
    expect(op).toMatchObject({ operationId: 'listVoices', tags: ['voices'], 'x-publishable-key-scope': 'voices:read' });
    expect(doc.body.components.schemas.Voice.examples).toHaveLength(2);
  });
});
