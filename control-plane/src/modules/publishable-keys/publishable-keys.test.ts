// Publishable keys: management (create, list, get, update, revoke) and the scope and origin checks that
// every request made with one goes through.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { looksLikeKey, PUBLISHABLE_PREFIX } from '../../auth/keys.ts';
import { PUBLISHABLE_SCOPES } from '../../../../schemas/publishable-keys.ts';
import { allRoutes } from '../../app.ts';
import { buildOpenApi } from '../../http/openapi.ts';

let tp: TestPlatform;
let key: string;
let orgId: string;
let other: { orgId: string; key: string };

beforeAll(async () => {
  tp = await usePlatform();
  ({ key, orgId } = await tp.createOrg('pk'));
  other = await tp.createOrg('other');
});

const create = (body: Record<string, unknown>, k = key) => tp.request('post', '/v1/publishable-keys', { key: k, body });
const valid = { name: 'Widget', allowed_origins: ['https://www.example.com'], scopes: ['voices:read'] };
const auditOf = (resourceId: string) =>
  tp.sql<{ action: string; actor_type: string; details: Record<string, unknown> }[]>`
    select action, actor_type, details from audit_events where resource_id = ${resourceId} order by created_at`;

async function agentOf(org: string, opts: { deleted?: boolean } = {}): Promise<string> {
  const [model] = await tp.sql<{ id: string }[]>`
    insert into llm_models (org_id, name, provider, model, temperature) values (${org}, 'm', 'openai', 'gpt-4o-mini', 0.7) returning id`;
  const [agent] = await tp.sql<{ id: string }[]>`
    insert into agents (org_id, name, llm_id, transcriber, tts, deleted_at)
    values (${org}, 'a', ${model!.id}, '{}', '{}', ${opts.deleted ? new Date() : null}) returning id`;
  return agent!.id;
}

/** GET /v1/voices (scope `voices:read`) with a publishable key, from a browser at `origin`. */
async function voices(pk: string, origin?: string) {
  const res = await tp.request('get', '/v1/voices?limit=1', { key: pk, headers: origin ? { origin } : {} });
  return { status: res.status, body: res.body };
}

describe('scopes', () => {
  it('are a documented list with calls:web and voices:read', () => {
    expect(PUBLISHABLE_SCOPES).toEqual(['calls:web', 'voices:read']);
    const doc = buildOpenApi(allRoutes()) as any;
    expect(doc.components.schemas.PublishableKey.properties.scopes.items.enum).toEqual(['calls:web', 'voices:read']);
    for (const name of ['PublishableKey', 'CreatePublishableKey', 'UpdatePublishableKey', 'PublishableKeyList', 'Workspace', 'UpdateWorkspace']) {
      expect(doc.components.schemas[name]?.examples?.length, name).toBeGreaterThan(0);
    }
  });
});

describe('POST /v1/publishable-keys', () => {
  it('creates a vap_pk_ key, returns it in full once and stores only its hash', async () => {
    const res = await create({
      name: 'Website',
      allowed_origins: ['HTTPS://WWW.Example.com:443/', 'https://*.example.com', 'http://localhost:3000'],
      scopes: ['calls:web', 'voices:read'],
    });
    expect(res.status).toBe(201);
    expect(looksLikeKey(res.body.key, PUBLISHABLE_PREFIX)).toBe(true);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Website',
      key: res.body.key,
      key_prefix: 'vap_pk_',
      is_active: true,
      allowed_origins: ['https://www.example.com', 'https://*.example.com', 'http://localhost:3000'],
      scopes: ['calls:web', 'voices:read'],
      agent_ids: null,
      allowed_overrides: [],
      last_used_at: null,
      revoked_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    // Public by design (it sits in a page): kept, and answered whole later, so a client can embed a listed key.
    const got = await tp.request('get', `/v1/publishable-keys/${res.body.id}`, { key });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);

    expect(await auditOf(res.body.id)).toEqual([
      {
        action: 'publishable_key.create',
        actor_type: 'api_key',
        details: {
          name: 'Website',
          scopes: ['calls:web', 'voices:read'],
          allowed_origins: ['https://www.example.com', 'https://*.example.com', 'http://localhost:3000'],
          agent_ids: null,
          allowed_overrides: [],
        },
      },
    ]);
  });

  it('422: missing fields', async () => {
    const res = await create({});
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: {} },
        { type: 'missing', loc: ['body', 'allowed_origins'], msg: 'Field required', input: {} },
        { type: 'missing', loc: ['body', 'scopes'], msg: 'Field required', input: {} },
      ],
    });
  });

  it('422: unknown scope, empty scope list', async () => {
    const res = await create({ ...valid, scopes: ['calls:web', 'agents:write'] });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: 'enum', loc: ['body', 'scopes', 1], msg: "Input should be 'calls:web' or 'voices:read'", input: 'agents:write', ctx: { expected: "'calls:web' or 'voices:read'" } },
      ],
    });
    const empty = await create({ ...valid, scopes: [] });
    expect(empty.body).toEqual({
      detail: [{ type: 'too_short', loc: ['body', 'scopes'], msg: 'List should have at least 1 item', input: [], ctx: { min_length: 1 } }],
    });
  });

  it('422: every entry that is not an origin is named', async () => {
    const bad = ['https://example.com/path', '*', 'https://*.com', 'ftp://example.com', 'https://a.*.example.com'];
    const res = await create({ ...valid, allowed_origins: ['https://ok.example.com', ...bad] });
    expect(res.status).toBe(422);
    const msg = 'Input should be an origin: http or https, a host (optionally starting with "*."), an optional port, and no path';
    expect(res.body).toEqual({ detail: bad.map((input, i) => ({ type: 'origin_format', loc: ['body', 'allowed_origins', i + 1], msg, input })) });
    const none = await create({ ...valid, allowed_origins: [] });
    expect(none.body).toEqual({
      detail: [{ type: 'too_short', loc: ['body', 'allowed_origins'], msg: 'List should have at least 1 item', input: [], ctx: { min_length: 1 } }],
    });
  });

  it('limits calls:web to agent_ids, which must be live agents of the organisation', async () => {
    const mine = await agentOf(orgId);
    const ok = await create({ ...valid, scopes: ['calls:web'], agent_ids: [mine] });
    expect(ok.status).toBe(201);
    expect(ok.body.agent_ids).toEqual([mine]);

    const [theirs, deleted, stranger] = [await agentOf(other.orgId), await agentOf(orgId, { deleted: true }), randomUUID()];
    const res = await create({ ...valid, agent_ids: [mine, theirs, deleted, stranger] });
    expect(res.status).toBe(422);
    const msg = 'No agent with this id in your organisation';
    expect(res.body).toEqual({
      detail: [
        { type: 'reference_not_found', loc: ['body', 'agent_ids', 1], msg, input: theirs },
        { type: 'reference_not_found', loc: ['body', 'agent_ids', 2], msg, input: deleted },
        { type: 'reference_not_found', loc: ['body', 'agent_ids', 3], msg, input: stranger },
      ],
    });
    const patched = await tp.request('patch', `/v1/publishable-keys/${ok.body.id}`, { key, body: { agent_ids: [theirs] } });
    expect(patched.body).toEqual({ detail: [{ type: 'reference_not_found', loc: ['body', 'agent_ids', 0], msg, input: theirs }] });
    const all = await tp.request('patch', `/v1/publishable-keys/${ok.body.id}`, { key, body: { agent_ids: null } });
    expect(all.body.agent_ids).toBeNull();
    const notUuid = await create({ ...valid, agent_ids: ['abc'] });
    expect(notUuid.body).toEqual({ detail: [{ type: 'uuid_parsing', loc: ['body', 'agent_ids', 0], msg: 'Input should be a valid UUID', input: 'abc' }] });
  });
});

describe('GET /v1/publishable-keys', () => {
  it('lists newest first with limit 20 by default; revoked keys only with include_revoked', async () => {
    const org = await tp.createOrg('lister');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create({ ...valid, name: `k${i}` }, org.key)).body.id);
    expect((await tp.request('delete', `/v1/publishable-keys/${ids[0]}`, { key: org.key })).status).toBe(204);

    const list = await tp.request('get', '/v1/publishable-keys', { key: org.key });
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 2, limit: 20, offset: 0 });
    expect(list.body.items.map((k: { name: string }) => k.name)).toEqual(['k2', 'k1']);
    // Whole, as created: the listed key works (a spec client lists keys to embed one).
    expect(list.body.items[0].key).toMatch(/^vap_pk_[0-9A-Za-z]{43}$/);
    const voices = await fetch(`${tp.url}/v1/voices`, { headers: { authorization: `Bearer ${list.body.items[0].key}`, origin: valid.allowed_origins[0]! } });
    expect(voices.status).toBe(200);

    const all = await tp.request('get', '/v1/publishable-keys?include_revoked=true&limit=2&offset=1', { key: org.key });
    expect(all.body).toMatchObject({ total: 3, limit: 2, offset: 1 });
    expect(all.body.items.map((k: { name: string; is_active: boolean }) => [k.name, k.is_active])).toEqual([
      ['k1', true],
      ['k0', false],
    ]);
  });

  it('422: limit out of range, bad include_revoked', async () => {
    const zero = await tp.request('get', '/v1/publishable-keys?limit=0', { key });
    expect(zero.body).toEqual({
      detail: [{ type: 'greater_than_equal', loc: ['query', 'limit'], msg: 'Input should be greater than or equal to 1', input: 0, ctx: { ge: 1 } }],
    });
    const high = await tp.request('get', '/v1/publishable-keys?limit=101', { key });
    expect(high.body).toEqual({
      detail: [{ type: 'less_than_equal', loc: ['query', 'limit'], msg: 'Input should be less than or equal to 100', input: 101, ctx: { le: 100 } }],
    });
    const neg = await tp.request('get', '/v1/publishable-keys?offset=-1', { key });
    expect(neg.body).toEqual({
      detail: [{ type: 'greater_than_equal', loc: ['query', 'offset'], msg: 'Input should be greater than or equal to 0', input: -1, ctx: { ge: 0 } }],
    });
    const flag = await tp.request('get', '/v1/publishable-keys?include_revoked=maybe', { key });
    expect(flag.body).toEqual({
      detail: [{ type: 'bool_type', loc: ['query', 'include_revoked'], msg: 'Input should be a valid boolean', input: 'maybe' }],
    });
  });
});

describe('GET /v1/publishable-keys/{publishable_key_id}', () => {
  it("answers 404 for another organisation's key and unknown ids, 422 for a non-uuid", async () => {
    const mine = await create(valid);
    const theirs = await tp.request('get', `/v1/publishable-keys/${mine.body.id}`, { key: other.key });
    expect({ status: theirs.status, type: theirs.body.type }).toEqual({ status: 404, type: 'not_found' });
    expect((await tp.request('get', `/v1/publishable-keys/${randomUUID()}`, { key })).status).toBe(404);
    const bad = await tp.request('get', '/v1/publishable-keys/x', { key });
    expect(bad.body).toEqual({ detail: [{ type: 'uuid_parsing', loc: ['path', 'publishable_key_id'], msg: 'Input should be a valid UUID', input: 'x' }] });
  });
});

describe('PATCH /v1/publishable-keys/{publishable_key_id}', () => {
  it('updates fields, and the change applies to the very next request', async () => {
    const pk = await create({ ...valid, scopes: ['calls:web'] });
    const origin = 'https://www.example.com';
    expect((await voices(pk.body.key, origin)).status).toBe(403);

    const res = await tp.request('patch', `/v1/publishable-keys/${pk.body.id}`, {
      key,
      body: { name: 'Renamed', scopes: ['voices:read'], allowed_origins: ['https://APP.example.com'] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'Renamed', scopes: ['voices:read'], allowed_origins: ['https://app.example.com'], is_active: true });
    expect(res.body.key).toBe(pk.body.key);
    expect((await voices(pk.body.key, 'https://app.example.com')).status).toBe(200);
    expect((await voices(pk.body.key, origin)).status).toBe(403);

    // Pausing refuses the key (401, as for any inactive key); resuming lets it in again.
    const paused = await tp.request('patch', `/v1/publishable-keys/${pk.body.id}`, { key, body: { is_active: false } });
    expect(paused.body).toMatchObject({ is_active: false, revoked_at: null });
    expect((await voices(pk.body.key, 'https://app.example.com')).status).toBe(401);
    await tp.request('patch', `/v1/publishable-keys/${pk.body.id}`, { key, body: { is_active: true } });
    expect((await voices(pk.body.key, 'https://app.example.com')).status).toBe(200);

    expect((await auditOf(pk.body.id)).map((a) => [a.action, a.details])).toEqual([
      ['publishable_key.create', expect.any(Object)],
      ['publishable_key.update', { name: 'Renamed', scopes: ['voices:read'], allowed_origins: ['https://app.example.com'] }],
      ['publishable_key.update', { is_active: false }],
      ['publishable_key.update', { is_active: true }],
    ]);
  });

  it('422 cases have the exact body', async () => {
    const pk = await create(valid);
    const path = `/v1/publishable-keys/${pk.body.id}`;
    const res = await tp.request('patch', path, { key, body: { name: '', is_active: 'yes', key: 'vap_pk_x' } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: 'extra_forbidden', loc: ['body', 'key'], msg: 'Extra inputs are not permitted', input: 'vap_pk_x' },
        { type: 'string_too_short', loc: ['body', 'name'], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } },
        { type: 'bool_type', loc: ['body', 'is_active'], msg: 'Input should be a valid boolean', input: 'yes' },
      ],
    });
    const origins = await tp.request('patch', path, { key, body: { allowed_origins: ['example.com'] } });
    expect(origins.body).toEqual({
      detail: [
        {
          type: 'origin_format',
          loc: ['body', 'allowed_origins', 0],
          msg: 'Input should be an origin: http or https, a host (optionally starting with "*."), an optional port, and no path',
          input: 'example.com',
        },
      ],
    });
  });

  it("answers 404 for another organisation's key, 409 for a revoked one", async () => {
    const pk = await create(valid);
    const theirs = await tp.request('patch', `/v1/publishable-keys/${pk.body.id}`, { key: other.key, body: { name: 'x' } });
    expect({ status: theirs.status, type: theirs.body.type }).toEqual({ status: 404, type: 'not_found' });
    await tp.request('delete', `/v1/publishable-keys/${pk.body.id}`, { key });
    const revoked = await tp.request('patch', `/v1/publishable-keys/${pk.body.id}`, { key, body: { is_active: true } });
    expect(revoked.status).toBe(409);
    expect(revoked.body).toMatchObject({ type: 'conflict', publishable_key_id: pk.body.id });
  });
});

describe('DELETE /v1/publishable-keys/{publishable_key_id}', () => {
  it('revokes (204), keeps the record, refuses the key at once (401)', async () => {
    const pk = await create(valid);
    const origin = 'https://www.example.com';
    expect((await voices(pk.body.key, origin)).status).toBe(200);
    const theirs = await tp.request('delete', `/v1/publishable-keys/${pk.body.id}`, { key: other.key });
    expect({ status: theirs.status, type: theirs.body.type }).toEqual({ status: 404, type: 'not_found' });

    const res = await tp.request('delete', `/v1/publishable-keys/${pk.body.id}`, { key });
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    const kept = await tp.request('get', `/v1/publishable-keys/${pk.body.id}`, { key });
    expect(kept.body).toMatchObject({ is_active: false, revoked_at: expect.any(String) });
    const refused = await voices(pk.body.key, origin);
    expect({ status: refused.status, type: refused.body.type }).toEqual({ status: 401, type: 'unauthorized' });
    expect((await tp.request('delete', `/v1/publishable-keys/${pk.body.id}`, { key })).status).toBe(404);
    expect((await auditOf(pk.body.id)).map((a) => a.action)).toEqual(['publishable_key.create', 'publishable_key.revoke']);
  });
});

describe('using a publishable key', () => {
  let pk: string;

  beforeAll(async () => {
    const res = await create({ name: 'site', allowed_origins: ['https://shop.example.com', 'https://*.example.org', 'http://localhost:5173'], scopes: ['voices:read'] });
    pk = res.body.key;
  });

  it('is accepted on a route its scope allows (GET /v1/voices), from an allowed origin', async () => {
    const res = await voices(pk, 'https://shop.example.com');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ limit: 1, offset: 0, items: [expect.any(Object)] });
    expect((await voices(pk, 'http://localhost:5173')).status).toBe(200);
  });

  it('matches wildcard subdomains, and nothing else, for "*." entries', async () => {
    expect((await voices(pk, 'https://a.example.org')).status).toBe(200);
    expect((await voices(pk, 'https://a.b.example.org')).status).toBe(200);
    for (const origin of ['https://example.org', 'http://a.example.org', 'https://evil-example.org', 'https://a.example.org.evil.com']) {
      expect((await voices(pk, origin)).status, origin).toBe(403);
    }
  });

  it('403 without the scope the route needs', async () => {
    const callsOnly = await create({ ...valid, scopes: ['calls:web'] });
    const res = await voices(callsOnly.body.key, 'https://www.example.com');
    expect(res).toMatchObject({ status: 403, body: { type: 'forbidden', detail: 'This publishable key lacks the "voices:read" scope' } });
    // And the other way round, on the web-call route.
    const call = await tp.request('post', '/v1/calls/web', { key: pk, headers: { origin: 'https://shop.example.com' }, body: {} });
    expect({ status: call.status, detail: call.body.detail }).toEqual({ status: 403, detail: 'This publishable key lacks the "calls:web" scope' });
  });

  it('403 from a wrong origin or with no Origin at all (exact match otherwise)', async () => {
    for (const origin of ['https://evil.com', 'https://shop.example.com:8443', 'http://shop.example.com', undefined]) {
      const res = await voices(pk, origin);
      expect(res, String(origin)).toMatchObject({ status: 403, body: { type: 'forbidden', detail: 'Origin is not allowed for this publishable key' } });
    }
  });

  it('CORS: pages on any origin get the preflight and can read the answer, refusals included', async () => {
    const origin = 'https://shop.example.com';
    for (const [method, path] of [['post', '/v1/calls/web'], ['get', '/v1/voices']] as const) {
      const pre = await fetch(tp.platform.url + path, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': method.toUpperCase(), 'access-control-request-headers': 'authorization, content-type' },
      });
      expect(pre.status, path).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe(origin);
      expect(pre.headers.get('access-control-allow-methods')).toBe(method.toUpperCase());
      expect(pre.headers.get('access-control-allow-headers')).toContain('authorization');
    }
    const ok = await tp.request('get', '/v1/voices?limit=1', { key: pk, headers: { origin } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(origin);
    expect(ok.headers.get('vary')).toContain('Origin');
    // A refusal carries the headers too, so the page can read why (here: an origin the key does not allow).
    const refused = await tp.request('get', '/v1/voices?limit=1', { key: pk, headers: { origin: 'https://evil.com' } });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBe('https://evil.com');
    // Routes for secret keys only stay closed to pages: no preflight answer, no CORS header.
    const closed = await fetch(tp.platform.url + '/v1/api-keys', { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'GET' } });
    expect(closed.headers.get('access-control-allow-origin')).toBeNull();
    const secret = await tp.request('get', '/v1/agents', { key, headers: { origin } });
    expect(secret.status).toBe(200);
    expect(secret.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('403 on routes for secret keys only', async () => {
    for (const path of ['/v1/integrations', '/v1/publishable-keys', '/v1/audit-events']) {
      const res = await tp.request('get', path, { key: pk, headers: { origin: 'https://shop.example.com' } });
      expect({ status: res.status, type: res.body.type }, path).toEqual({ status: 403, type: 'forbidden' });
    }
    const create = await tp.request('post', '/v1/publishable-keys', { key: pk, body: valid, headers: { origin: 'https://shop.example.com' } });
    expect(create.status).toBe(403);
  });

  it('records last_used_at (written in batches)', async () => {
    const fresh = await create({ ...valid, name: 'usage' });
    expect((await voices(fresh.body.key, 'https://www.example.com')).status).toBe(200);
    await tp.platform.services.auth.flushUsage();
    const res = await tp.request('get', `/v1/publishable-keys/${fresh.body.id}`, { key });
    expect(res.body.last_used_at).toEqual(expect.any(String));
    expect(Date.parse(res.body.last_used_at)).toBeGreaterThanOrEqual(Date.parse(fresh.body.created_at));
  });
});
