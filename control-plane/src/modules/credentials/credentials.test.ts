// Credentials (integrations): CRUD under both prefixes, exact 422 bodies, tenancy, audit, and encryption at rest.
import { randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { Secrets, secretsFromEnv } from '../../crypto/secrets.ts';
import { keyHints, maskedKey, resolveProviderKeys, sealKey } from './service.ts';
import { allRoutes } from '../../app.ts';
import { buildOpenApi } from '../../http/openapi.ts';

let tp: TestPlatform;
let key: string;
let orgId: string;
let other: { orgId: string; key: string };

const OPENAI_KEY = 'sk-proj-Abc123def456ghi789jkl012mno345pqr678stu901vwxQz';

beforeAll(async () => {
  tp = await usePlatform();
  ({ key, orgId } = await tp.createOrg('creds'));
  other = await tp.createOrg('other');
});

const create = (body: Record<string, unknown>, k = key) => tp.request('post', '/v1/integrations', { key: k, body });
const auditOf = (resourceId: string) =>
  tp.sql<{ action: string; actor_type: string; details: Record<string, unknown> }[]>`
    select action, actor_type, details from audit_events where resource_id = ${resourceId} order by created_at, action`;

describe('masking', () => {
  it('shows the first 3 and last 4 characters of long keys only', () => {
    expect(maskedKey(keyHints(OPENAI_KEY))).toBe('sk-...wxQz');
    expect(maskedKey(keyHints('0123456789abcdef'))).toBe('012...cdef');
    expect(maskedKey(keyHints('0123456789abcde'))).toBe('****');
    expect(maskedKey(keyHints('x'))).toBe('****');
  });
});

describe('POST /v1/integrations', () => {
  it('stores the key encrypted and answers 201 with it masked', async () => {
    const res = await create({ name: 'Prod OpenAI', provider: 'openai', api_key: OPENAI_KEY, metadata: { team: 'support' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Prod OpenAI',
      provider: 'openai',
      masked_key: 'sk-...wxQz',
      metadata: { team: 'support' },
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(JSON.stringify(res.body)).not.toContain(OPENAI_KEY.slice(3, -4));
    const audit = await auditOf(res.body.id);
    expect(audit).toEqual([{ action: 'credential.create', actor_type: 'api_key', details: { name: 'Prod OpenAI', provider: 'openai' } }]);
  });

  it('masks short keys completely and defaults metadata to {}', async () => {
    const res = await create({ name: 'short', provider: 'deepgram', api_key: 'abc' });
    expect(res.status).toBe(201);
    expect(res.body.masked_key).toBe('****');
    expect(res.body.metadata).toEqual({});
  });

  it('is served identically under /v1/credentials', async () => {
    const res = await tp.request('post', '/v1/credentials', { key, body: { name: 'alias', provider: 'cartesia', api_key: 'cartesia-key-0123456789' } });
    expect(res.status).toBe(201);
    expect(res.body.masked_key).toBe('car...6789');
    const viaPrimary = await tp.request('get', `/v1/integrations/${res.body.id}`, { key });
    expect(viaPrimary.body).toEqual(res.body);
  });

  it('422: missing fields', async () => {
    const res = await create({});
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: {} },
        { type: 'missing', loc: ['body', 'provider'], msg: 'Field required', input: {} },
        { type: 'missing', loc: ['body', 'api_key'], msg: 'Field required', input: {} },
      ],
    });
  });

  it('422: unknown provider', async () => {
    const res = await create({ name: 'x', provider: 'mistral', api_key: 'k' });
    expect(res.status).toBe(422);
    const expected = "'openai', 'anthropic', 'gemini', 'deepgram', 'elevenlabs' or 'cartesia'";
    expect(res.body).toEqual({
      detail: [{ type: 'enum', loc: ['body', 'provider'], msg: `Input should be ${expected}`, input: 'mistral', ctx: { expected } }],
    });
  });

  it('422: name length 1-255 and api_key min length 1', async () => {
    const long = 'n'.repeat(256);
    const res = await create({ name: long, provider: 'openai', api_key: '' });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: 'string_too_long', loc: ['body', 'name'], msg: 'String should have at most 255 characters', input: long, ctx: { max_length: 255 } },
        { type: 'string_too_short', loc: ['body', 'api_key'], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } },
      ],
    });
    const empty = await create({ name: '', provider: 'openai', api_key: 'k' });
    expect(empty.body).toEqual({
      detail: [{ type: 'string_too_short', loc: ['body', 'name'], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } }],
    });
  });

  it('422: metadata must be an object, unknown fields are rejected', async () => {
    const res = await create({ name: 'x', provider: 'openai', api_key: 'k', metadata: [1], key_version: 3 });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: 'extra_forbidden', loc: ['body', 'key_version'], msg: 'Extra inputs are not permitted', input: 3 },
        { type: 'dict_type', loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', input: [1] },
      ],
    });
  });
});

describe('GET /v1/integrations', () => {
  it('lists newest first in the envelope, filters by provider, under both prefixes', async () => {
    const org = await tp.createOrg('lister');
    for (const provider of ['openai', 'anthropic', 'openai'] as const) {
      expect((await create({ name: provider, provider, api_key: `${provider}-key-0123456789abcdef` }, org.key)).status).toBe(201);
    }
    for (const prefix of ['/v1/integrations', '/v1/credentials']) {
      const all = await tp.request('get', prefix, { key: org.key });
      expect(all.status).toBe(200);
      expect(all.body).toMatchObject({ total: 3, limit: 50, offset: 0 });
      expect(all.body.items.map((c: { provider: string }) => c.provider)).toEqual(['openai', 'anthropic', 'openai']);
      const page = await tp.request('get', `${prefix}?provider=openai&limit=1&offset=1`, { key: org.key });
      expect(page.body).toMatchObject({ total: 2, limit: 1, offset: 1 });
      expect(page.body.items).toHaveLength(1);
    }
    const bad = await tp.request('get', '/v1/integrations?limit=101', { key: org.key });
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({
      detail: [{ type: 'less_than_equal', loc: ['query', 'limit'], msg: 'Input should be less than or equal to 100', input: 101, ctx: { le: 100 } }],
    });
  });
});

describe('GET /v1/integrations/{credential_id}', () => {
  it('answers 404 for unknown ids and for other organisations, 422 for a non-uuid', async () => {
    const mine = await create({ name: 'mine', provider: 'gemini', api_key: 'gemini-key-0123456789' });
    for (const prefix of ['/v1/integrations', '/v1/credentials']) {
      expect((await tp.request('get', `${prefix}/${mine.body.id}`, { key })).status).toBe(200);
      const theirs = await tp.request('get', `${prefix}/${mine.body.id}`, { key: other.key });
      expect({ status: theirs.status, type: theirs.body.type }).toEqual({ status: 404, type: 'not_found' });
      expect((await tp.request('get', `${prefix}/${randomUUID()}`, { key })).status).toBe(404);
    }
    const bad = await tp.request('get', '/v1/integrations/nope', { key });
    expect(bad.body).toEqual({ detail: [{ type: 'uuid_parsing', loc: ['path', 'credential_id'], msg: 'Input should be a valid UUID', input: 'nope' }] });
  });
});

describe('PATCH /v1/integrations/{credential_id}', () => {
  it('renames, replaces the key and metadata; null and absent fields keep their value', async () => {
    const c = await create({ name: 'el', provider: 'elevenlabs', api_key: 'el-key-aaaaaaaaaaaaaaaa1111', metadata: { a: 1 } });
    const renamed = await tp.request('patch', `/v1/integrations/${c.body.id}`, { key, body: { name: 'ElevenLabs', api_key: null } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'ElevenLabs', masked_key: 'el-...1111', metadata: { a: 1 }, provider: 'elevenlabs' });
    expect(Date.parse(renamed.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(c.body.updated_at));

    const rekeyed = await tp.request('patch', `/v1/credentials/${c.body.id}`, { key, body: { api_key: 'el-key-bbbbbbbbbbbbbbbb2222', metadata: { b: 2 } } });
    expect(rekeyed.status).toBe(200);
    expect(rekeyed.body).toMatchObject({ name: 'ElevenLabs', masked_key: 'el-...2222', metadata: { b: 2 } });

    const org = await resolveProviderKeys(tp.sql, tp.platform.services.secrets, orgId);
    expect(org.elevenlabs).toBe('el-key-bbbbbbbbbbbbbbbb2222');

    const audit = await auditOf(c.body.id);
    expect(audit.map((a) => [a.action, a.details])).toEqual([
      ['credential.create', { name: 'el', provider: 'elevenlabs' }],
      ['credential.update', { fields: ['name'] }],
      ['credential.update', { fields: ['api_key', 'metadata'] }],
    ]);
    expect(JSON.stringify(audit)).not.toContain('bbbbbbbb');
  });

  it('422 cases have the exact body', async () => {
    const c = await create({ name: 'p', provider: 'openai', api_key: 'k' });
    const path = `/v1/integrations/${c.body.id}`;
    const res = await tp.request('patch', path, { key, body: { name: '', api_key: '', provider: 'anthropic' } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: 'extra_forbidden', loc: ['body', 'provider'], msg: 'Extra inputs are not permitted', input: 'anthropic' },
        { type: 'string_too_short', loc: ['body', 'name'], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } },
        { type: 'string_too_short', loc: ['body', 'api_key'], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } },
      ],
    });
    const types = await tp.request('patch', path, { key, body: { name: 5, metadata: 'x' } });
    expect(types.body).toEqual({
      detail: [
        { type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string', input: 5 },
        { type: 'dict_type', loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', input: 'x' },
      ],
    });
    const badId = await tp.request('patch', '/v1/integrations/123', { key, body: {} });
    expect(badId.body).toEqual({ detail: [{ type: 'uuid_parsing', loc: ['path', 'credential_id'], msg: 'Input should be a valid UUID', input: '123' }] });
  });

  it("answers 404 for another organisation's credential and leaves it unchanged", async () => {
    const c = await create({ name: 'keep', provider: 'openai', api_key: 'k' });
    const res = await tp.request('patch', `/v1/integrations/${c.body.id}`, { key: other.key, body: { name: 'stolen' } });
    expect({ status: res.status, type: res.body.type }).toEqual({ status: 404, type: 'not_found' });
    expect((await tp.request('get', `/v1/integrations/${c.body.id}`, { key })).body.name).toBe('keep');
  });
});

describe('DELETE /v1/credentials/{credential_id}', () => {
  it('deletes with 204 under both prefixes, then 404', async () => {
    for (const prefix of ['/v1/credentials', '/v1/integrations']) {
      const c = await create({ name: 'gone', provider: 'anthropic', api_key: 'k' });
      const theirs = await tp.request('delete', `${prefix}/${c.body.id}`, { key: other.key });
      expect({ status: theirs.status, type: theirs.body.type }).toEqual({ status: 404, type: 'not_found' });
      const res = await tp.request('delete', `${prefix}/${c.body.id}`, { key });
      expect(res.status).toBe(204);
      expect(res.body).toBe('');
      expect((await tp.request('get', `${prefix}/${c.body.id}`, { key })).status).toBe(404);
      expect((await tp.request('delete', `${prefix}/${c.body.id}`, { key })).status).toBe(404);
      const [row] = await tp.sql`select count(*)::int as n from credentials where id = ${c.body.id}`;
      expect(row!.n).toBe(0);
      const audit = await auditOf(c.body.id);
      expect(audit.map((a) => [a.action, a.details])).toEqual([
        ['credential.create', { name: 'gone', provider: 'anthropic' }],
        ['credential.delete', { name: 'gone', provider: 'anthropic' }],
      ]);
    }
  });

  it('takes any string id, as the spec types it: a non-uuid is simply not found', async () => {
    const res = await tp.request('delete', '/v1/credentials/not-a-uuid', { key });
    expect({ status: res.status, type: res.body.type }).toEqual({ status: 404, type: 'not_found' });
  });
});

describe('encryption at rest', () => {
  it('never stores the plain key: neither the row nor its bytes contain it', async () => {
    const res = await create({ name: 'secret', provider: 'openai', api_key: OPENAI_KEY });
    const [row] = await tp.sql<{ text: string; ciphertext: Buffer; key_version: number; key_prefix: string; last4: string }[]>`
      select c::text as text, ciphertext, key_version, key_prefix, last4 from credentials c where id = ${res.body.id}`;
    expect(row!.text).not.toContain(OPENAI_KEY);
    expect(row!.text).not.toContain(Buffer.from(OPENAI_KEY).toString('hex'));
    expect(row!.ciphertext.includes(Buffer.from(OPENAI_KEY))).toBe(false);
    expect(row!.ciphertext.length).toBe(12 + 16 + Buffer.byteLength(OPENAI_KEY));
    expect(row!.key_version).toBe(1);
    expect([row!.key_prefix, row!.last4]).toEqual(['sk-', 'wxQz']);
  });

  it('round trip: resolveProviderKeys opens the newest key of each provider of the org only', async () => {
    const org = await tp.createOrg('resolver');
    await create({ name: 'old', provider: 'openai', api_key: 'sk-old-0000000000000000' }, org.key);
    await create({ name: 'new', provider: 'openai', api_key: 'sk-new-1111111111111111' }, org.key);
    await create({ name: 'dg', provider: 'deepgram', api_key: 'dg-2222222222222222' }, org.key);
    const keys = await resolveProviderKeys(tp.sql, tp.platform.services.secrets, org.orgId);
    expect(keys).toEqual({ openai: 'sk-new-1111111111111111', deepgram: 'dg-2222222222222222' });
    expect(await resolveProviderKeys(tp.sql, tp.platform.services.secrets, (await tp.createOrg('empty')).orgId)).toEqual({});
  });

  it('binds each ciphertext to its credential: copied onto another row it does not open', async () => {
    const org = await tp.createOrg('swap');
    const a = await create({ name: 'a', provider: 'openai', api_key: 'sk-aaaaaaaaaaaaaaaaaaaa' }, org.key);
    const b = await create({ name: 'b', provider: 'anthropic', api_key: 'sk-ant-bbbbbbbbbbbbbbbbbb' }, org.key);
    await tp.sql`update credentials set ciphertext = (select ciphertext from credentials where id = ${a.body.id}) where id = ${b.body.id}`;
    await expect(resolveProviderKeys(tp.sql, tp.platform.services.secrets, org.orgId)).rejects.toThrow();
  });

  it('rotation: a key sealed under version 1 still opens once version 2 is current', async () => {
    const org = await tp.createOrg('rotation');
    await create({ name: 'v1', provider: 'gemini', api_key: 'gemini-sealed-under-v1' }, org.key);
    const v1Key = tp.config.MASTER_KEY!;
    const v2Key = randomBytes(32).toString('base64');
    const rotated = secretsFromEnv({ masterKey: v2Key, version: 2, previous: `1:${v1Key}`, dataDir: '/nonexistent', production: true });
    expect(rotated.currentVersion).toBe(2);
    expect(await resolveProviderKeys(tp.sql, rotated, org.orgId)).toEqual({ gemini: 'gemini-sealed-under-v1' });

    // A key written after the rotation is sealed under version 2, which the old configuration cannot open.
    const [row] = await tp.sql<{ id: string }[]>`select id from credentials where org_id = ${org.orgId}`;
    const sealed = sealKey(rotated, row!.id, 'gemini-sealed-under-v2');
    await tp.sql`update credentials set ciphertext = ${sealed.ciphertext}, key_version = ${sealed.keyVersion} where id = ${row!.id}`;
    expect(await resolveProviderKeys(tp.sql, rotated, org.orgId)).toEqual({ gemini: 'gemini-sealed-under-v2' });
    const [stored] = await tp.sql<{ key_version: number }[]>`select key_version from credentials where id = ${row!.id}`;
    expect(stored!.key_version).toBe(2);
    const withoutV2 = new Secrets(Buffer.from(v1Key, 'base64'), 1);
    await expect(resolveProviderKeys(tp.sql, withoutV2, org.orgId)).rejects.toThrow(/version 2/);
  });
});

describe('OpenAPI', () => {
  it('documents every operation under both prefixes, with distinct operationIds and examples', () => {
    const doc = buildOpenApi(allRoutes()) as any;
    const ops: string[] = [];
    for (const path of ['/v1/integrations', '/v1/credentials', '/v1/integrations/{credential_id}', '/v1/credentials/{credential_id}']) {
      const item = doc.paths[path];
      expect(item, path).toBeDefined();
      for (const op of Object.values(item) as { operationId: string; tags: string[] }[]) {
        expect(op.tags).toEqual(['integrations']);
        ops.push(op.operationId);
      }
    }
    expect(ops.sort()).toEqual(
      [
        'createIntegration', 'listIntegrations', 'getIntegration', 'updateIntegration', 'deleteIntegration',
        'createCredential', 'listCredentials', 'getCredential', 'updateCredential', 'deleteCredential',
      ].sort(),
    );
    for (const name of ['Credential', 'CreateCredential', 'UpdateCredential', 'CredentialList']) {
      expect(doc.components.schemas[name]?.examples?.length, name).toBeGreaterThan(0);
    }
    expect(doc.paths['/v1/credentials/{credential_id}'].delete.responses['204']).toEqual({ description: 'Deleted' });
  });
});
