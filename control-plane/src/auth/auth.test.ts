// Authentication: secret keys (missing, malformed, unknown, revoked, expired) and dashboard JWTs.
import { createServer, type Server } from 'node:http';
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import postgres from 'postgres';
import { usePlatform, startTestPlatform, type TestPlatform } from '../../../test/support/platform.ts';
import { AuthService } from './service.ts';
import { createLogger } from '../../../shared/logger.ts';

const JWT_SECRET = 'a-test-secret-that-is-long-enough-0123456789';
let tp: TestPlatform;
let org: { orgId: string; key: string };

const unauthorizedBody = (res: { headers: Headers }, detail: string) => ({
  detail,
  type: 'unauthorized',
  request_id: res.headers.get('x-request-id'),
});

beforeAll(async () => {
  tp = await usePlatform({ JWT_SECRET, JWT_ISSUER: 'https://auth.test/', JWT_AUDIENCE: 'vap' });
  org = await tp.createOrg();
});

describe('API keys', () => {
  it('accepts a valid key', async () => {
    const res = await tp.request('get', '/v1/api-keys', { key: org.key });
    expect(res.status).toBe(200);
    expect(res.body.items[0]).toMatchObject({ key_prefix: 'vap_sk_', last4: org.key.slice(-4), masked_key: `vap_sk_...${org.key.slice(-4)}` });
    expect(JSON.stringify(res.body)).not.toContain(org.key);
  });

  it('401 without an Authorization header', async () => {
    const res = await tp.request('get', '/v1/api-keys');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(res.body).toEqual(unauthorizedBody(res, 'Missing Authorization header; send "Authorization: Bearer <API key>"'));
  });

  it('401 for a malformed header or key', async () => {
    const basic = await tp.request('get', '/v1/api-keys', { headers: { authorization: 'Basic abc' } });
    expect(basic.body).toEqual(unauthorizedBody(basic, 'Malformed Authorization header; expected "Bearer <API key>"'));
    const short = await tp.request('get', '/v1/api-keys', { key: 'vap_sk_short' });
    expect(short.body).toEqual(unauthorizedBody(short, 'Malformed API key'));
    const junk = await tp.request('get', '/v1/api-keys', { key: 'whatever' });
    expect(junk.body).toEqual(unauthorizedBody(junk, 'Malformed credential'));
  });

  it('401 for an unknown key', async () => {
    const res = await tp.request('get', '/v1/api-keys', { key: 'vap_sk_' + 'A'.repeat(43) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(unauthorizedBody(res, 'Invalid or revoked API key'));
  });

  it('a revoked key gets 401 at once', async () => {
    const created = await tp.request('post', '/v1/api-keys', { key: org.key, body: { name: 'temp' } });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^vap_sk_[0-9A-Za-z]{43}$/);
    expect((await tp.request('get', '/v1/api-keys', { key: created.body.key })).status).toBe(200);
    const del = await tp.request('delete', `/v1/api-keys/${created.body.id}`, { key: org.key });
    expect(del.status).toBe(204);
    const after = await tp.request('get', '/v1/api-keys', { key: created.body.key });
    expect(after.status).toBe(401);
    // Revoking twice is a 404: there is no live key of that id any more.
    expect((await tp.request('delete', `/v1/api-keys/${created.body.id}`, { key: org.key })).status).toBe(404);
  });

  it('revocation reaches the cache of another process through NOTIFY', async () => {
    const other = new AuthService(tp.sql, tp.config, createLogger('other', 'silent'));
    await other.start();
    try {
      const created = await tp.request('post', '/v1/api-keys', { key: org.key, body: { name: 'cross-process' } });
      const header = `Bearer ${created.body.key}`;
      await expect(other.authenticate(header)).resolves.toMatchObject({ orgId: org.orgId });
      await tp.request('delete', `/v1/api-keys/${created.body.id}`, { key: org.key });
      // The notification arrives asynchronously; poll a bounded number of times (no timing assertion).
      let rejected = false;
      for (let i = 0; i < 100 && !rejected; i++) {
        rejected = await other.authenticate(header).then(() => false, () => true);
        if (!rejected) await new Promise((r) => setTimeout(r, 20));
      }
      expect(rejected).toBe(true);
    } finally {
      await other.stop();
    }
  });

  it('an expired key gets 401', async () => {
    const created = await tp.request('post', '/v1/api-keys', {
      key: org.key,
      body: { name: 'expiring', expires_at: new Date(Date.now() + 3600_000).toISOString() },
    });
    await tp.sql`update api_keys set expires_at = now() - interval '1 second' where id = ${created.body.id}`;
    const res = await tp.request('get', '/v1/api-keys', { key: created.body.key });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(unauthorizedBody(res, 'API key has expired'));
  });

  it('records last_used_at in batches: nothing written per request, one statement at the flush', async () => {
    const keys = [];
    for (const name of ['usage a', 'usage b', 'usage c']) keys.push((await tp.request('post', '/v1/api-keys', { key: org.key, body: { name } })).body);
    const ids = keys.map((k) => k.id as string);
    // A service of its own, not started (no flush timer), on a connection whose statements are recorded.
    const statements: string[] = [];
    const sql = postgres(tp.config.DATABASE_URL!, { max: 1, onnotice: () => {}, debug: (_conn, query) => statements.push(query) });
    const svc = new AuthService(sql, tp.config, createLogger('batch', 'silent'));
    try {
      for (const k of keys) await svc.authenticate(`Bearer ${k.key}`);
      const afterFirstUse = statements.length; // each key loaded once
      for (let round = 0; round < 3; round++) for (const k of keys) await svc.authenticate(`Bearer ${k.key}`);
      expect(statements.length).toBe(afterFirstUse); // repeated uses cost no statement
      expect(statements.some((q) => /\bupdate\b/i.test(q))).toBe(false);
      const before = await tp.sql`select last_used_at from api_keys where id = any(${ids}::uuid[])`;
      expect(before.map((r) => r.last_used_at)).toEqual([null, null, null]);

      statements.length = 0;
      await svc.flushUsage();
      expect(statements.filter((q) => /\bupdate\b/i.test(q))).toHaveLength(1); // all three keys in one statement
      const after = await tp.sql`select last_used_at from api_keys where id = any(${ids}::uuid[])`;
      for (const r of after) expect(r.last_used_at).toBeInstanceOf(Date);

      // Nothing used since: the next flush writes nothing.
      statements.length = 0;
      await svc.flushUsage();
      expect(statements).toEqual([]);
    } finally {
      await svc.stop();
      await sql.end();
    }
  });

  it('flushes the batch on the platform too', async () => {
    const created = await tp.request('post', '/v1/api-keys', { key: org.key, body: { name: 'usage' } });
    await tp.request('get', '/v1/api-keys', { key: created.body.key });
    await tp.platform.services.auth.flushUsage();
    const [row] = await tp.sql`select last_used_at from api_keys where id = ${created.body.id}`;
    expect(row!.last_used_at).toBeInstanceOf(Date);
  });
});

describe('dashboard JWTs (HS256)', () => {
  const sign = (claims: Record<string, unknown>, opts: { secret?: string; exp?: string | number; aud?: string; iss?: string; nbf?: number } = {}) => {
    const jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('user-1')
      .setIssuedAt()
      .setIssuer(opts.iss ?? 'https://auth.test/')
      .setAudience(opts.aud ?? 'vap')
      .setExpirationTime(opts.exp ?? '5m');
    if (opts.nbf) jwt.setNotBefore(opts.nbf);
    return jwt.sign(new TextEncoder().encode(opts.secret ?? JWT_SECRET));
  };

  it('accepts a valid token, creates the user and audits as that user', async () => {
    const token = await sign({ org_id: org.orgId, email: 'ada@example.com' });
    const res = await tp.request('post', '/v1/api-keys', { key: token, body: { name: 'from dashboard' } });
    expect(res.status).toBe(201);
    const [user] = await tp.sql`select id, email from users where org_id = ${org.orgId} and subject = 'user-1'`;
    expect(user!.email).toBe('ada@example.com');
    const [audit] = await tp.sql`select actor_type, actor_id from audit_events where resource_id = ${res.body.id}`;
    expect(audit).toEqual({ actor_type: 'user', actor_id: user!.id });
  });

  it('401 for an expired token', async () => {
    const token = await sign({ org_id: org.orgId }, { exp: Math.floor(Date.now() / 1000) - 60 });
    const res = await tp.request('get', '/v1/api-keys', { key: token });
    expect(res.body).toEqual(unauthorizedBody(res, 'Token has expired'));
  });

  it('401 for a bad signature', async () => {
    const token = await sign({ org_id: org.orgId }, { secret: 'another-secret-of-sufficient-length-0000000' });
    const res = await tp.request('get', '/v1/api-keys', { key: token });
    expect(res.body).toEqual(unauthorizedBody(res, 'Invalid token'));
  });

  it('401 for a wrong audience or issuer, or a token not yet valid', async () => {
    const aud = await tp.request('get', '/v1/api-keys', { key: await sign({ org_id: org.orgId }, { aud: 'someone-else' }) });
    expect(aud.body).toEqual(unauthorizedBody(aud, 'Token claim "aud" is invalid'));
    const iss = await tp.request('get', '/v1/api-keys', { key: await sign({ org_id: org.orgId }, { iss: 'https://evil.test/' }) });
    expect(iss.body).toEqual(unauthorizedBody(iss, 'Token claim "iss" is invalid'));
    const nbf = await tp.request('get', '/v1/api-keys', { key: await sign({ org_id: org.orgId }, { nbf: Math.floor(Date.now() / 1000) + 600 }) });
    expect(nbf.body).toEqual(unauthorizedBody(nbf, 'Token claim "nbf" is invalid'));
  });

  it('401 for a token without an org or for an unknown org', async () => {
    const none = await tp.request('get', '/v1/api-keys', { key: await sign({}) });
    expect(none.body).toEqual(unauthorizedBody(none, 'Token lacks a valid org_id claim'));
    const unknown = await tp.request('get', '/v1/api-keys', { key: await sign({ org_id: '00000000-0000-4000-8000-000000000000' }) });
    expect(unknown.body).toEqual(unauthorizedBody(unknown, 'Unknown organisation'));
  });
});

describe('dashboard JWTs (RS256 through JWKS)', () => {
  let jwks: Server;
  let other: TestPlatform;
  let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

  beforeAll(async () => {
    const pair = await generateKeyPair('RS256');
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    jwks = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const port = (jwks.address() as { port: number }).port;
    other = await startTestPlatform({ JWT_JWKS_URL: `http://127.0.0.1:${port}/jwks.json`, JWT_AUDIENCE: 'vap' });
  });
  afterAll(async () => {
    await other?.close();
    jwks?.close();
  });

  it('accepts a token signed by a key of the JWKS and rejects an HS256 one', async () => {
    const o = await other.createOrg();
    const token = await new SignJWT({ org_id: o.orgId })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setSubject('u-9')
      .setAudience('vap')
      .setExpirationTime('5m')
      .sign(privateKey);
    expect((await other.request('get', '/v1/api-keys', { key: token })).status).toBe(200);
    const hs = await new SignJWT({ org_id: o.orgId }).setProtectedHeader({ alg: 'HS256' }).setSubject('u').setAudience('vap').setExpirationTime('5m').sign(new TextEncoder().encode(JWT_SECRET));
    expect((await other.request('get', '/v1/api-keys', { key: hs })).status).toBe(401);
  });
});

describe('audit', () => {
  it('writes an audit event in the same transaction as each mutation', async () => {
    const res = await tp.request('post', '/v1/api-keys', { key: org.key, body: { name: 'audited' }, headers: { 'x-request-id': 'audit-test-0001' } });
    const [keyRow] = await tp.sql`select id from api_keys where key_hash is not null and org_id = ${org.orgId} order by created_at limit 1`;
    const [row] = await tp.sql`select * from audit_events where resource_id = ${res.body.id}`;
    expect(row).toMatchObject({
      org_id: org.orgId,
      actor_type: 'api_key',
      actor_id: keyRow!.id,
      action: 'api_key.create',
      resource_type: 'api_key',
      request_id: 'audit-test-0001',
      details: { name: 'audited' },
    });
    expect(row!.ip).toBeTruthy();
  });

  it('a failed mutation leaves neither the change nor its audit event', async () => {
    const before = await tp.sql`select count(*)::int as n from audit_events where org_id = ${org.orgId}`;
    await tp.request('delete', '/v1/api-keys/00000000-0000-4000-8000-000000000000', { key: org.key });
    const after = await tp.sql`select count(*)::int as n from audit_events where org_id = ${org.orgId}`;
    expect(after[0]!.n).toBe(before[0]!.n);
  });

  it('lists audit events with filters and actor=me', async () => {
    const second = await tp.request('post', '/v1/api-keys', { key: org.key, body: { name: 'second' } });
    await tp.request('post', '/v1/api-keys', { key: second.body.key, body: { name: 'made by second' } });
    const mine = await tp.request('get', '/v1/audit-events?actor=me', { key: second.body.key });
    expect(mine.status).toBe(200);
    expect(mine.body.items).toHaveLength(1);
    expect(mine.body.items[0]).toMatchObject({ action: 'api_key.create', actor_id: second.body.id, details: { name: 'made by second' } });
    const revokes = await tp.request('get', '/v1/audit-events?action=api_key.revoke&limit=1', { key: org.key });
    expect(revokes.body).toMatchObject({ limit: 1, offset: 0 });
    expect(revokes.body.total).toBeGreaterThanOrEqual(1);
    expect(revokes.body.items.every((e: { action: string }) => e.action === 'api_key.revoke')).toBe(true);
    const future = await tp.request('get', `/v1/audit-events?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, { key: org.key });
    expect(future.body).toMatchObject({ items: [], total: 0 });
  });
});
