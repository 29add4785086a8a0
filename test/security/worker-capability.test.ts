// Hostile tests for the workers' credentials (docs/security.md, section 7): the platform worker token alone
// opens no call; a call's capability opens that call only, and not after it expires; workers are rate-limited
// per worker id, apart from customers; the recording upload takes the call's capability alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { mintCapability } from '../../control-plane/src/modules/calls/capability.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const worker = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${WORKER}`, ...extra });
const ended = { seq: 1, end_reason: 'user_hangup', ended_at: new Date().toISOString(), duration_seconds: 3, messages: [] };

let tp: TestPlatform;
let callA: string;
let callB: string;

/** A queued web call of a fresh organisation (no LiveKit needed: the worker routes only read the row). */
async function newCall(name: string): Promise<string> {
  const { key, orgId } = await tp.createOrg(name);
  const model = (await tp.request('post', '/v1/models', { key, body: { name: 'm', model: 'gpt-4o-mini' } })).body;
  const agent = (await tp.request('post', '/v1/agents', { key, body: { name: 'a', llm_id: model.id, enable_recording: true } })).body;
  const cred = await tp.request('post', '/v1/credentials', { key, body: { name: 'openai', provider: 'openai', api_key: `sk-secret-of-${name}` } });
  expect(cred.status).toBe(201);
  const [row] = await tp.sql<{ id: string }[]>`
    insert into calls (org_id, agent_id, type, status, room_name, recording_consent) values (${orgId}, ${agent.id}, 'web', 'initiated', ${`room-${name}`}, 'none') returning id`;
  return row!.id;
}

beforeAll(async () => {
  tp = await startTestPlatform({ WORKER_TOKEN: WORKER });
  callA = await newCall('org-a');
  callB = await newCall('org-b');
});
afterAll(() => tp?.close());

describe('per-call capabilities on the internal API', () => {
  it('the worker token alone no longer opens any call', async () => {
    const r = await tp.request('get', `/internal/v1/calls/${callA}/config`, { headers: worker() });
    expect(r.status).toBe(403);
    expect(r.body.type).toBe('forbidden');
    expect(JSON.stringify(r.body)).not.toContain('sk-secret');
    for (const kind of ['started', 'transcript', 'ended']) {
      const body = kind === 'ended' ? ended : kind === 'started' ? { seq: 1, started_at: new Date().toISOString() } : { seq: 1, messages: [] };
      expect((await tp.request('post', `/internal/v1/calls/${callA}/${kind}`, { headers: worker(), body })).status).toBe(403);
    }
    expect((await tp.request('post', `/internal/v1/calls/${callA}/knowledge/search`, { headers: worker(), body: { query: 'x', top_k: 1 } })).status).toBe(403);
  });

  it("opens its own call with the worker token, and never another call (config, reports, search)", async () => {
    const capA = tp.capability(callA);
    const own = await tp.request('get', `/internal/v1/calls/${callA}/config`, { headers: worker({ 'x-call-capability': capA }) });
    expect(own.status).toBe(200);
    expect(own.body.provider_keys.openai).toBe('sk-secret-of-org-a');

    const asB = worker({ 'x-call-capability': capA });
    const other = await tp.request('get', `/internal/v1/calls/${callB}/config`, { headers: asB });
    expect(other.status).toBe(403);
    expect(JSON.stringify(other.body)).not.toContain('sk-secret-of-org-b');
    expect((await tp.request('post', `/internal/v1/calls/${callB}/ended`, { headers: asB, body: ended })).status).toBe(403);
    expect((await tp.request('post', `/internal/v1/calls/${callB}/transcript`, { headers: asB, body: { seq: 1, messages: [] } })).status).toBe(403);
    expect((await tp.request('post', `/internal/v1/calls/${callB}/knowledge/search`, { headers: asB, body: { query: 'x', top_k: 1 } })).status).toBe(403);
    const [b] = await tp.sql`select status from calls where id = ${callB}`;
    expect(b).toMatchObject({ status: 'initiated' });

    // The capability is not a worker token: without the worker's credential it opens nothing either.
    expect((await tp.request('get', `/internal/v1/calls/${callA}/config`, { headers: { authorization: `Bearer ${capA}`, 'x-call-capability': capA } })).status).toBe(401);
  });

  it('refuses an expired, a forged and a truncated capability', async () => {
    const services = tp.platform.services;
    const ttl = services.config.WORKER_CAPABILITY_TTL_SECONDS;
    const expired = mintCapability(services, callA, Date.now() - (ttl + 5) * 1000);
    const cap = tp.capability(callA);
    const [, exp, mac] = cap.split('.');
    const stretched = `vcap1.${Number(exp) + 3600}.${mac}`; // a later expiry under the same MAC
    for (const bad of [expired, stretched, cap.slice(0, -1), `vcap1.${exp}.`, 'vcap1', `${cap}.x`]) {
      const r = await tp.request('get', `/internal/v1/calls/${callA}/config`, { headers: worker({ 'x-call-capability': bad }) });
      expect(r.status, bad).toBe(403);
    }
  });
});

describe('the recording upload', () => {
  const wav = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(2000, 1)]);
  const put = (callId: string, authorization?: string) =>
    fetch(`${tp.url}/v1/recordings/${callId}/upload`, { method: 'PUT', body: wav, headers: { 'content-type': 'audio/wav', ...(authorization ? { authorization } : {}) } });

  it('lives under /v1 (the ingress routes it) and takes only the capability of its own call', async () => {
    expect((await put(callB)).status).toBe(403);
    expect((await put(callB, `Bearer ${WORKER}`)).status).toBe(403);
    expect((await put(callB, `Bearer ${tp.capability(callA)}`)).status).toBe(403);
    expect((await tp.sql`select recording_key from calls where id = ${callB}`)[0]!.recording_key).toBeNull();

    expect((await put(callB, `Bearer ${tp.capability(callB)}`)).status).toBe(204);
    expect((await tp.sql`select recording_key from calls where id = ${callB}`)[0]!.recording_key).toMatch(new RegExp(`${callB}\\.wav$`));
  });

  it('the session config points the worker at that route', async () => {
    // A call of an agent that records (turned on through the API: it is the agent's published version that calls run).
    const { key, orgId } = await tp.createOrg('org-rec');
    const model = (await tp.request('post', '/v1/models', { key, body: { name: 'm', model: 'gpt-4o-mini' } })).body;
    const agent = (await tp.request('post', '/v1/agents', { key, body: { name: 'a', llm_id: model.id } })).body;
    expect((await tp.request('patch', `/v1/agents/${agent.id}`, { key, body: { enable_recording: true } })).status).toBe(200);
    const [row] = await tp.sql<{ id: string }[]>`
      insert into calls (org_id, agent_id, type, status, room_name) values (${orgId}, ${agent.id}, 'web', 'initiated', 'room-rec') returning id`;
    const callR = row!.id;
    const cfg = await tp.request('get', `/internal/v1/calls/${callR}/config`, { headers: worker({ 'x-call-capability': tp.capability(callR) }) });
    expect(cfg.body.recording).toEqual({ enabled: true, upload_url: `${tp.url}/v1/recordings/${callR}/upload` });
  });
});

describe('worker rate limits', () => {
  let rl: TestPlatform;
  beforeAll(async () => {
    // Customers: 2 requests of burst; workers: 6, per worker id. Refills are negligible within the test.
    rl = await startTestPlatform({
      WORKER_TOKEN: WORKER,
      RATE_LIMIT_PER_SECOND: 0.001,
      RATE_LIMIT_BURST: 2,
      WORKER_RATE_LIMIT_PER_SECOND: 0.001,
      WORKER_RATE_LIMIT_BURST: 6,
    });
  });
  afterAll(() => rl?.close());

  const heartbeat = (id: string) =>
    rl.request('post', `/internal/v1/workers/${id}/heartbeat`, { headers: worker(), body: { agent_name: 'vap-agent', active_calls: 0, load: 0.1, draining: false } });

  it('sizes workers apart from customers, and neither side throttles the other', async () => {
    const org = await rl.createOrg('busy');
    const customer = () => rl.request('get', '/v1/agents', { key: org.key });
    expect((await customer()).status).toBe(200);
    expect((await customer()).status).toBe(200);
    expect((await customer()).status).toBe(429);

    // The customer is throttled; a worker is not, and gets the workers' burst, not the customers'.
    for (let i = 0; i < 6; i++) expect((await heartbeat('AW_one')).status, `heartbeat ${i}`).toBe(200);
    expect((await heartbeat('AW_one')).status).toBe(429);
    // Another customer still has its own bucket.
    const other = await rl.createOrg('calm');
    expect((await rl.request('get', '/v1/agents', { key: other.key })).status).toBe(200);
  });

  it('keys the bucket by what the caller cannot choose: a fresh declared worker id gets no fresh bucket; a call has its own', async () => {
    // The bucket of this address is spent by the test above (or here).
    for (let i = 0; i < 7; i++) await heartbeat('AW_spender');
    // The attack: the same holder of the shared token declares new worker ids, in the path and in Vap-Worker-Id.
    for (const id of ['AW_fresh1', 'AW_fresh2', 'AW_fresh3']) expect((await heartbeat(id)).status, id).toBe(429);
    const declared = await rl.request('post', '/internal/v1/calls/inbound', {
      headers: worker({ 'vap-worker-id': 'AW_fresh4' }),
      body: { to_number: '+15550100', room_name: 'r', trunk_id: 'ST_x', dispatch_rule_id: 'SDR_x' },
    });
    expect(declared.status).toBe(429);
    // A call's own requests are keyed by the call its capability names (one the control plane gave out), so a
    // worker's calls are not held up by its address's bucket.
    const { key, orgId } = await rl.createOrg('worker-call');
    const model = (await rl.request('post', '/v1/models', { key, body: { name: 'm', model: 'gpt-4o-mini' } })).body;
    const agent = (await rl.request('post', '/v1/agents', { key, body: { name: 'a', llm_id: model.id } })).body;
    const [row] = await rl.sql<{ id: string }[]>`
      insert into calls (org_id, agent_id, type, status, room_name) values (${orgId}, ${agent.id}, 'web', 'initiated', 'room-rl') returning id`;
    const cfg = await rl.request('get', `/internal/v1/calls/${row!.id}/config`, { headers: worker({ 'x-call-capability': rl.capability(row!.id), 'vap-worker-id': 'AW_fresh5' }) });
    expect(cfg.status).toBe(200);
  });

});
