// Hostile tests of publishable keys (docs/security.md, section 3) and of two smaller defences (section 8):
// a key copied from a customer's page, sent with any Origin from many addresses, must not take the
// organisation's phone capacity nor change its agent; failed authentication is throttled per client IP; the
// rate limit holds per organisation across its credentials. Real PostgreSQL and a real LiveKit server.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { useStack, type TestStack } from '../support/stack.ts';
import { startPlatform, type Platform } from '../../control-plane/src/platform.ts';
import { createLogger } from '../../shared/logger.ts';
import { admitCall } from '../../control-plane/src/modules/calls/limits.ts';
import { insertCall } from '../../control-plane/src/modules/calls/queries.ts';

const ORIGIN = 'https://shop.example.com';
let stack: TestStack;
/** Behind one trusted proxy (TRUST_PROXY=1): X-Forwarded-For's last entry is the client. */
let tp: TestPlatform;
/** The same database, no proxy trusted (X-Forwarded-For ignored), and the abuse limits set low. */
let strict: Platform;

beforeAll(async () => {
  stack = await useStack({});
  tp = await usePlatform({
    LIVEKIT_URL: stack.livekitUrl,
    LIVEKIT_API_KEY: stack.apiKey,
    LIVEKIT_API_SECRET: stack.apiSecret,
    // No worker joins these rooms: keep the reaper from ending the calls while a test counts them.
    DISPATCH_TIMEOUT_SECONDS: 3600,
    TRUST_PROXY: 1,
    PUBLISHABLE_WEB_CALL_CONCURRENCY: 3,
    PUBLISHABLE_WEB_CALLS_PER_MINUTE_PER_IP: 2,
  });
  strict = await startPlatform(
    {
      ...tp.config,
      JOBS_ENABLED: false,
      TRUST_PROXY: 0,
      AUTH_FAILURES_PER_MINUTE_PER_IP: 5,
      RATE_LIMIT_ORG_PER_SECOND: 0.001,
      RATE_LIMIT_ORG_BURST: 6,
    },
    { log: createLogger('test', 'silent') },
  );
});

afterAll(async () => {
  await strict?.close();
});

async function agentOf(orgId: string): Promise<string> {
  const [model] = await tp.sql<{ id: string }[]>`
    insert into llm_models (org_id, name, provider, model, temperature) values (${orgId}, 'm', 'openai', 'gpt-4o-mini', 0.7) returning id`;
  const [agent] = await tp.sql<{ id: string }[]>`
    insert into agents (org_id, name, llm_id, transcriber, tts, first_message)
    values (${orgId}, 'Ava', ${model!.id}, ${tp.sql.json({ provider: 'local', model: 'pocketsphinx', language: 'en-US' })},
            ${tp.sql.json({ provider: 'local', model: 'espeak-ng', voice_id: 'en-us' })}, 'Hello!')
    returning id`;
  return agent!.id;
}

async function publishableKey(secret: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await tp.request('post', '/v1/publishable-keys', {
    key: secret,
    body: { name: 'Widget', allowed_origins: [ORIGIN], scopes: ['calls:web'], ...extra },
  });
  expect(res.status).toBe(201);
  return res.body.key as string;
}

/** A web call as an attacker sends it: the scraped key, the page's Origin, and the client address `ip`. */
const webCall = (base: string, pk: string, body: Record<string, unknown>, ip?: string) =>
  fetch(`${base}/v1/calls/web`, {
    method: 'POST',
    headers: { authorization: `Bearer ${pk}`, origin: ORIGIN, 'content-type': 'application/json', ...(ip ? { 'x-forwarded-for': ip } : {}) },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));

/** An inbound phone call's admission and record, as the inbound route makes them (one transaction). */
const inboundCall = (orgId: string, agentId: string) =>
  tp.sql.begin(async (tx) => {
    const admission = await admitCall(tx, orgId);
    if (admission.ok) {
      await insertCall(tx, {
        id: randomUUID(),
        org_id: orgId,
        agent_id: agentId,
        type: 'inbound',
        direction: 'inbound',
        to_number: '+15550100',
        from_number: '+15550199',
        room_name: null,
        variables: {},
        metadata: {},
        overrides: {},
        webhook_url: null,
      });
    }
    return admission;
  });

describe('a scraped publishable key looping web calls', () => {
  it('is held to its own pool and never makes an inbound call fail for capacity', async () => {
    const org = await tp.createOrg('shop');
    await tp.sql`update orgs set max_concurrent_calls = 4 where id = ${org.orgId}`;
    const agent = await agentOf(org.orgId);
    const pk = await publishableKey(org.key);

    // A botnet: each request from another address, so the per-IP limit never bites.
    const answers: { status: number; body: Record<string, any> }[] = [];
    for (let i = 0; i < 8; i++) answers.push(await webCall(tp.url, pk, { agent_id: agent }, `203.0.113.${i + 1}`));

    // The org's whole phone capacity is still there: four inbound calls, then the org's own limit.
    for (let i = 0; i < 4; i++) expect(await inboundCall(org.orgId, agent)).toEqual({ ok: true });
    expect(await inboundCall(org.orgId, agent)).toMatchObject({ ok: false, reason: 'concurrency', limit: 'max_concurrent_calls' });

    // The loop got its own pool's worth, then 429s naming that pool.
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 429, 429, 429, 429, 429]);
    expect(answers[3]!.body).toMatchObject({ type: 'rate_limited', reason: 'publishable_concurrency', limit: 'publishable_web_call_concurrency', limit_value: 3 });

    // With the phones at the org's limit, a page's key gets nothing more either (the org's limit is a ceiling).
    const [row] = await tp.sql<{ n: number }[]>`
      select count(*)::int as n from calls where org_id = ${org.orgId} and publishable_key_id is not null and status in ('queued', 'initiated', 'in_progress')`;
    expect(row!.n).toBe(3);
  });

  it("takes only what is left of the day's cap, never a phone call's share of it", async () => {
    const org = await tp.createOrg('daily');
    await tp.sql`update orgs set max_calls_per_day = 2, max_concurrent_calls = 100 where id = ${org.orgId}`;
    const agent = await agentOf(org.orgId);
    const pk = await publishableKey(org.key);
    expect((await webCall(tp.url, pk, { agent_id: agent }, '198.51.100.1')).status).toBe(201);
    expect((await webCall(tp.url, pk, { agent_id: agent }, '198.51.100.2')).status).toBe(201);
    const third = await webCall(tp.url, pk, { agent_id: agent }, '198.51.100.3');
    expect(third).toMatchObject({ status: 429, body: { reason: 'daily_cap', limit: 'max_calls_per_day' } });
    // Both of the day's phone calls are still there.
    expect(await inboundCall(org.orgId, agent)).toEqual({ ok: true });
    expect(await inboundCall(org.orgId, agent)).toEqual({ ok: true });
    expect(await inboundCall(org.orgId, agent)).toMatchObject({ ok: false, reason: 'daily_cap' });
  });
});

describe('calls per minute per client IP', () => {
  it('behind a trusted proxy, counts the address the proxy saw, whatever the client puts before it', async () => {
    const org = await tp.createOrg('per-ip');
    const agent = await agentOf(org.orgId);
    const pk = await publishableKey(org.key);
    // The proxy appends the peer (192.0.2.7); the entries before it are the client's own, forged at will.
    const forged = (i: number) => `10.0.0.${i}, 192.0.2.7`;
    expect((await webCall(tp.url, pk, { agent_id: agent }, forged(1))).status).toBe(201);
    expect((await webCall(tp.url, pk, { agent_id: agent }, forged(2))).status).toBe(201);
    const third = await webCall(tp.url, pk, { agent_id: agent }, forged(3));
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ type: 'rate_limited', reason: 'web_calls_per_ip', limit: 'publishable_web_calls_per_minute_per_ip', limit_value: 2, retry_after_seconds: expect.any(Number) });
    // Another client behind the proxy has its own allowance.
    expect((await webCall(tp.url, pk, { agent_id: agent }, '192.0.2.8')).status).toBe(201);
  });

  it('without a trusted proxy, ignores X-Forwarded-For', async () => {
    const org = await tp.createOrg('no-proxy');
    const agent = await agentOf(org.orgId);
    const pk = await publishableKey(org.key);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await webCall(strict.url, pk, { agent_id: agent }, `203.0.113.${100 + i}`)).status);
    expect(statuses).toEqual([201, 201, 429]);
  });
});

describe('overrides and variables', () => {
  it('a key without allowed_overrides may send neither (403 naming the fields)', async () => {
    const org = await tp.createOrg('overrides');
    const agent = await agentOf(org.orgId);
    const pk = await publishableKey(org.key);
    const res = await webCall(
      tp.url,
      pk,
      { agent_id: agent, overrides: { first_message: 'Your account is locked: read me your card number.', max_duration_seconds: 3600 }, variables: { customer_name: 'x' } },
      '198.51.100.20',
    );
    expect(res).toEqual({
      status: 403,
      body: {
        type: 'forbidden',
        detail: "This publishable key may not set overrides.first_message, overrides.max_duration_seconds, variables.customer_name; add them to the key's allowed_overrides",
        fields: ['overrides.first_message', 'overrides.max_duration_seconds', 'variables.customer_name'],
        request_id: expect.any(String),
      },
    });
    const [row] = await tp.sql<{ n: number }[]>`select count(*)::int as n from calls where org_id = ${org.orgId}`;
    expect(row!.n).toBe(0);
    // metadata is the page's own, and an empty overrides object changes nothing.
    expect((await webCall(tp.url, pk, { agent_id: agent, overrides: {}, metadata: { page: '/pricing' } }, '198.51.100.21')).status).toBe(201);
  });

  it('a key may send exactly what allowed_overrides names', async () => {
    const org = await tp.createOrg('allowed');
    const agent = await agentOf(org.orgId);
    const pk = await publishableKey(org.key, { allowed_overrides: ['first_message', 'variables.customer_name'] });
    const ok = await webCall(tp.url, pk, { agent_id: agent, overrides: { first_message: 'Hi!' }, variables: { customer_name: 'Ada' } }, '198.51.100.30');
    expect(ok.status).toBe(201);
    const [call] = await tp.sql<{ overrides: Record<string, unknown>; publishable_key_id: string | null }[]>`
      select overrides, publishable_key_id from calls where id = ${ok.body.id}`;
    expect(call!.overrides).toEqual({ first_message: 'Hi!' });
    expect(call!.publishable_key_id).not.toBeNull();
    const refused = await webCall(tp.url, pk, { agent_id: agent, overrides: { language: 'fr' }, variables: { customer_name: 'Ada', discount: '100%' } }, '198.51.100.31');
    expect(refused.status).toBe(403);
    expect(refused.body.fields).toEqual(['overrides.language', 'variables.discount']);

    const any = await publishableKey(org.key, { allowed_overrides: ['variables.*'] });
    expect((await webCall(tp.url, any, { agent_id: agent, variables: { a: 1, b: 2 } }, '198.51.100.32')).status).toBe(201);
  });

  it('allowed_overrides names only overridable fields and variables; it is shown and can be changed', async () => {
    const org = await tp.createOrg('allowed-shape');
    const bad = await tp.request('post', '/v1/publishable-keys', {
      key: org.key,
      body: { name: 'w', allowed_origins: [ORIGIN], scopes: ['calls:web'], allowed_overrides: ['first_message', 'llm_id', 'variables.'] },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: unknown[]; type: string }) => [d.loc, d.type])).toEqual([
      [['body', 'allowed_overrides', 1], 'string_pattern_mismatch'],
      [['body', 'allowed_overrides', 2], 'string_pattern_mismatch'],
    ]);
    const created = await tp.request('post', '/v1/publishable-keys', { key: org.key, body: { name: 'w', allowed_origins: [ORIGIN], scopes: ['calls:web'] } });
    expect(created.body.allowed_overrides).toEqual([]);
    const patched = await tp.request('patch', `/v1/publishable-keys/${created.body.id}`, { key: org.key, body: { allowed_overrides: ['tts'] } });
    expect(patched.status).toBe(200);
    expect(patched.body.allowed_overrides).toEqual(['tts']);
  });
});

describe('rate limit per organisation', () => {
  it('holds across two keys of one organisation; another organisation is untouched', async () => {
    const org = await tp.createOrg('org-limit');
    const second = await tp.request('post', '/v1/api-keys', { key: org.key, body: { name: 'second' } });
    expect(second.status).toBe(201);
    const keys = [org.key, second.body.key as string];
    const statuses: number[] = [];
    let refusal: unknown = null;
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${strict.url}/v1/api-keys`, { headers: { authorization: `Bearer ${keys[i % 2]}` } });
      statuses.push(res.status);
      if (res.status === 429) refusal = await res.json();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429, 429, 429]);
    expect(refusal).toMatchObject({ type: 'rate_limited', reason: 'org_rate_limit', detail: 'Too many requests for this organisation; slow down' });
    const other = await tp.createOrg('org-limit-other');
    expect((await fetch(`${strict.url}/v1/api-keys`, { headers: { authorization: `Bearer ${other.key}` } })).status).toBe(200);
  });
});

// Last in the file: it leaves 127.0.0.1 locked out of `strict` until its bucket refills.
describe('failed authentication per client IP', () => {
  it('answers 429 once an address has failed too often, even with a valid key, whatever X-Forwarded-For says', async () => {
    const org = await tp.createOrg('auth-fail');
    const guess = (i: number, key = `vap_sk_${String(i).padStart(43, 'A')}`) =>
      fetch(`${strict.url}/v1/api-keys`, { headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': `198.18.0.${i}` } });
    for (let i = 0; i < 5; i++) expect((await guess(i)).status).toBe(401);
    const refused = await guess(5);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toEqual({
      detail: 'Too many failed authentications from this address; retry later',
      type: 'rate_limited',
      reason: 'auth_failures',
      retry_after_seconds: expect.any(Number),
      request_id: expect.any(String),
    });
    // The credential is not even looked at now: a valid key from the same address waits too.
    expect((await guess(6, org.key)).status).toBe(429);
    // Operators see it: 429s are counted by reason.
    expect(await strict.services.metrics.registry.getSingleMetricAsString('vap_http_rate_limited_total')).toContain('vap_http_rate_limited_total{reason="auth_failures"} 2');
  });

  it('refuses the locked-out address on the open routes too, as their documented 429 says (health, the reference)', async () => {
    const doc = (await (await fetch(`${tp.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    for (const path of ['/health', '/health/ready', '/openapi.json', '/docs']) {
      expect(doc.paths[path]!.get!.responses['429'], path).toEqual({ $ref: '#/components/responses/RateLimited' });
      const res = await fetch(`${strict.url}${path}`);
      expect(res.status, path).toBe(429);
      expect(await res.json()).toMatchObject({ type: 'rate_limited', reason: 'auth_failures' });
    }
  });
});
