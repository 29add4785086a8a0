// POST /v1/calls against a real PostgreSQL and pg-boss (dial jobs are queued, not run: JOBS_ENABLED=false):
// validation in the spec's 422 shape, the caller ID, scheduling bounds, Idempotency-Key, limits, stop.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { dialCall, reasonForSipStatus } from './dial.ts';
import { insertBareAgent } from '../../../../test/support/bare-agent.ts';

let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;
let bareAgentId: string;
const FROM = '+14155550142';
const OTHER_FROM = '+14155550143';

async function agentOf(orgId: string): Promise<string> {
  return insertBareAgent(tp.sql, orgId);
}

const create = (body: Record<string, unknown>, opts: { key?: string; idem?: string } = {}) =>
  tp.request('post', '/v1/calls', { key: opts.key ?? org.key, body, ...(opts.idem !== undefined ? { headers: { 'idempotency-key': opts.idem } } : {}) });
const dialJobs = (callId: string) => tp.sql`select id, start_after from pgboss.job where name = 'calls.dial' and singleton_key = ${callId}`;

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: false, SSRF_ALLOWLIST: 'localhost' } as never);
  org = await tp.createOrg('outbound');
  agentId = await agentOf(org.orgId);
  bareAgentId = await agentOf(org.orgId);
  await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
               values (${org.orgId}, ${FROM}, 'simulated', ${agentId}, 'ST_test'), (${org.orgId}, ${OTHER_FROM}, 'simulated', ${bareAgentId}, 'ST_test2')`;
});

describe('POST /v1/calls', () => {
  it('creates a queued outbound call from the agent\'s number and queues one dial job', async () => {
    const res = await create({ agent_id: agentId, to_number: '+15550001111', variables: { customer_name: 'Ada' }, metadata: { crm: '7' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      type: 'outbound',
      direction: 'outbound',
      status: 'queued',
      agent_id: agentId,
      to_number: '+15550001111',
      from_number: FROM,
      scheduled_at: null,
      variables: { customer_name: 'Ada' },
      metadata: { crm: '7' },
      cost_cents: null,
    });
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(await dialJobs(res.body.id)).toHaveLength(1);
  });

  it("the worker's config listens for an answering machine as the agent's voicemail_detection says", async () => {
    const config = async (id: string) =>
      (await tp.request('get', `/internal/v1/calls/${id}/config`, { key: 'test-worker-token-0123456789abcdef0123', headers: { 'x-call-capability': tp.capability(id) } })).body;
    const plain = await create({ agent_id: agentId, to_number: '+15550001112' });
    expect((await config(plain.body.id)).call.voicemail_detection).toBe(false);
    await tp.sql`update agents set voicemail_detection = true where id = ${agentId}`;
    try {
      const detecting = await create({ agent_id: agentId, to_number: '+15550001113' });
      expect((await config(detecting.body.id)).call).toMatchObject({ type: 'outbound', voicemail_detection: true });
    } finally {
      await tp.sql`update agents set voicemail_detection = false where id = ${agentId}`;
    }
  });

  it('uses a given from_number of the org; refuses one it does not hold, and an agent without a number', async () => {
    const ok = await create({ agent_id: agentId, to_number: '+15550001111', from_number: OTHER_FROM });
    expect(ok.status).toBe(201);
    expect(ok.body.from_number).toBe(OTHER_FROM);
    const notOurs = await create({ agent_id: agentId, to_number: '+15550001111', from_number: '+14155559999' });
    expect(notOurs.status).toBe(422);
    expect(notOurs.body.detail).toEqual([
      { loc: ['body', 'from_number'], msg: 'from_number must be one of your active phone numbers (GET /v1/phone-numbers)', type: 'phone_number_not_owned', input: '+14155559999' },
    ]);
    const lone = await agentOf(org.orgId);
    const none = await create({ agent_id: lone, to_number: '+15550001111' });
    expect(none.status).toBe(422);
    expect(none.body.detail[0]).toMatchObject({ loc: ['body', 'from_number'], type: 'missing' });
    // An inactive number cannot call.
    await tp.sql`update phone_numbers set status = 'inactive' where phone_number = ${OTHER_FROM}`;
    expect((await create({ agent_id: agentId, to_number: '+15550001111', from_number: OTHER_FROM })).status).toBe(422);
    await tp.sql`update phone_numbers set status = 'active' where phone_number = ${OTHER_FROM}`;
  });

  it('422 in the spec shape: numbers, agent, webhook_url, scheduled_at, unknown fields', async () => {
    const bad = await create({ agent_id: 'nope', to_number: '5550001111', from_number: '+0123', extra: 1 });
    expect(bad.status).toBe(422);
    const locs = bad.body.detail.map((d: { loc: string[]; type: string }) => `${d.loc.join('.')}:${d.type}`).sort();
    expect(locs).toEqual(['body.agent_id:uuid_parsing', 'body.extra:extra_forbidden', 'body.from_number:phone_number_format', 'body.to_number:phone_number_format']);
    expect((await create({ agent_id: agentId })).body.detail).toEqual([{ loc: ['body', 'to_number'], msg: 'Field required', type: 'missing', input: { agent_id: agentId } }]);
    const other = await tp.createOrg('other');
    const foreign = await create({ agent_id: await agentOf(other.orgId), to_number: '+15550001111' });
    expect(foreign.status).toBe(422);
    expect(foreign.body.detail[0].loc).toEqual(['body', 'agent_id']);
    const privateHook = await create({ agent_id: agentId, to_number: '+15550001111', webhook_url: 'http://10.0.0.1/hook' });
    expect(privateHook.status).toBe(422);
    expect(privateHook.body.detail[0]).toMatchObject({ loc: ['body', 'webhook_url'], type: 'url_not_allowed' });
    const past = await create({ agent_id: agentId, to_number: '+15550001111', scheduled_at: '2020-01-01T00:00:00Z' });
    expect(past.body.detail).toEqual([{ loc: ['body', 'scheduled_at'], msg: 'Input should be in the future', type: 'datetime_future', input: '2020-01-01T00:00:00Z' }]);
    const far = new Date(Date.now() + 31 * 86400_000).toISOString();
    const tooFar = await create({ agent_id: agentId, to_number: '+15550001111', scheduled_at: far });
    expect(tooFar.body.detail).toEqual([
      { loc: ['body', 'scheduled_at'], msg: 'Input should be at most 30 days ahead', type: 'datetime_horizon', input: far, ctx: { horizon_days: 30 } },
    ]);
  });

  it('ivr_goal: stored, on the call object and in the worker config with max_menus (default 6); validated; not on web calls', async () => {
    const config = async (id: string) =>
      (await tp.request('get', `/internal/v1/calls/${id}/config`, { key: 'test-worker-token-0123456789abcdef0123', headers: { 'x-call-capability': tp.capability(id) } })).body;
    const goal = 'reach the payments team in billing';
    const res = await create({ agent_id: agentId, to_number: '+15550001121', ivr_goal: `  ${goal} ` });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ ivr_goal: goal, ivr: { max_menus: 6 } });
    const [row] = await tp.sql`select ivr_goal, ivr_max_menus from calls where id = ${res.body.id}`;
    expect(row).toEqual({ ivr_goal: goal, ivr_max_menus: 6 });
    expect((await config(res.body.id)).call.ivr).toEqual({ goal, max_menus: 6 });
    expect((await tp.request('get', `/v1/calls/${res.body.id}`, { key: org.key })).body).toMatchObject({ ivr_goal: goal, ivr: { max_menus: 6 } });

    const set = await create({ agent_id: agentId, to_number: '+15550001122', ivr_goal: 'reach support', ivr: { max_menus: 2 } });
    expect(set.body).toMatchObject({ ivr_goal: 'reach support', ivr: { max_menus: 2 } });
    expect((await config(set.body.id)).call.ivr).toEqual({ goal: 'reach support', max_menus: 2 });

    // Without a goal: no navigation, nothing in the config.
    const plain = await create({ agent_id: agentId, to_number: '+15550001123' });
    expect(plain.body).toMatchObject({ ivr_goal: null, ivr: null });
    expect((await config(plain.body.id)).call).not.toHaveProperty('ivr');

    const detail = async (body: Record<string, unknown>) => {
      const r = await create({ agent_id: agentId, to_number: '+15550001124', ...body });
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      return r.body.detail.map((d: { loc: string[]; type: string }) => `${d.loc.join('.')}:${d.type}`);
    };
    expect(await detail({ ivr_goal: '' })).toEqual(['body.ivr_goal:string_too_short']);
    expect(await detail({ ivr_goal: '   ' })).toEqual(['body.ivr_goal:string_too_short']);
    expect(await detail({ ivr_goal: 'x'.repeat(501) })).toEqual(['body.ivr_goal:string_too_long']);
    expect(await detail({ ivr_goal: 42 })).toEqual(['body.ivr_goal:string_type']);
    expect(await detail({ ivr_goal: 'reach billing', ivr: { max_menus: 0 } })).toEqual(['body.ivr.max_menus:greater_than_equal']);
    expect(await detail({ ivr_goal: 'reach billing', ivr: { max_menus: 21 } })).toEqual(['body.ivr.max_menus:less_than_equal']);
    expect(await detail({ ivr_goal: 'reach billing', ivr: { loops: 1 } })).toEqual(['body.ivr.loops:extra_forbidden']);
    expect(await detail({ ivr: { max_menus: 3 } })).toEqual(['body.ivr:missing_ivr_goal']);
    const longest = await create({ agent_id: agentId, to_number: '+15550001125', ivr_goal: 'x'.repeat(500) });
    expect(longest.status).toBe(201);
    // Stopped, so the org's concurrency is free for the tests after this one.
    for (const c of [res, set, plain, longest]) expect((await tp.request('post', `/v1/calls/${c.body.id}/stop`, { key: org.key })).status).toBe(200);

    // A web call has no phone menu: the field is unknown there.
    const web = await tp.request('post', '/v1/calls/web', { key: org.key, body: { agent_id: agentId, ivr_goal: 'reach billing' } });
    expect(web.status).toBe(422);
    expect(web.body.detail[0]).toMatchObject({ loc: ['body', 'ivr_goal'], type: 'extra_forbidden' });
  });

  it('a scheduled call is queued with its dial job due at scheduled_at', async () => {
    const at = new Date(Date.now() + 3600_000);
    const res = await create({ agent_id: agentId, to_number: '+15550001111', scheduled_at: at.toISOString() });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'queued', scheduled_at: at.toISOString() });
    const [job] = await dialJobs(res.body.id);
    expect(new Date(job!.start_after).getTime()).toBe(at.getTime());
  });
});

describe('Idempotency-Key', () => {
  it('the same key and body answer the first response and dial once; another body is a 422', async () => {
    const body = { agent_id: agentId, to_number: '+15550002222', metadata: { a: 1, b: [1, 2] } };
    const first = await create(body, { idem: 'order-42' });
    expect(first.status).toBe(201);
    // Key order in the body does not matter.
    const again = await create({ metadata: { b: [1, 2], a: 1 }, to_number: '+15550002222', agent_id: agentId }, { idem: 'order-42' });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const calls = await tp.sql`select id from calls where org_id = ${org.orgId} and to_number = '+15550002222'`;
    expect(calls).toHaveLength(1);
    expect(await dialJobs(first.body.id)).toHaveLength(1);
    const changed = await create({ ...body, to_number: '+15550003333' }, { idem: 'order-42' });
    expect(changed.status).toBe(422);
    expect(changed.body.detail).toEqual([
      {
        loc: ['header', 'idempotency-key'],
        msg: 'This Idempotency-Key was already used with different parameters; use a new key for a new request',
        type: 'idempotency_key_reused',
        input: 'order-42',
      },
    ]);
  });

  it('concurrent retries with one key create one call and all get its answer', async () => {
    const body = { agent_id: agentId, to_number: '+15550004444' };
    const results = await Promise.all(Array.from({ length: 10 }, () => create(body, { idem: 'burst-1' })));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(201));
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(9);
    expect(await tp.sql`select id from calls where to_number = '+15550004444'`).toHaveLength(1);
  });

  it('is scoped to the org, expires after 24 hours, is not saved for a refused request, and must be well-formed', async () => {
    const other = await tp.createOrg('idem-other');
    const otherAgent = await agentOf(other.orgId);
    await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id) values (${other.orgId}, '+14155550177', 'simulated', ${otherAgent}, 'ST_x')`;
    const mine = await create({ agent_id: agentId, to_number: '+15550005555' }, { idem: 'shared' });
    const theirs = await create({ agent_id: otherAgent, to_number: '+15550005555' }, { key: other.key, idem: 'shared' });
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.body.id).not.toBe(mine.body.id);
    // 24 hours later the key names nothing: a new call.
    await tp.sql`update idempotency_keys set created_at = now() - interval '25 hours' where key = 'shared' and org_id = ${org.orgId}`;
    const later = await create({ agent_id: agentId, to_number: '+15550005555' }, { idem: 'shared' });
    expect(later.status).toBe(201);
    expect(later.body.id).not.toBe(mine.body.id);
    // A validation failure is not saved: the corrected request with the same key goes through.
    expect((await create({ agent_id: agentId, to_number: 'bad' }, { idem: 'fix-me' })).status).toBe(422);
    expect((await create({ agent_id: agentId, to_number: '+15550006666', from_number: '+14155559999' }, { idem: 'fix-me' })).status).toBe(422);
    expect((await create({ agent_id: agentId, to_number: '+15550006666' }, { idem: 'fix-me' })).status).toBe(201);
    const malformed = await create({ agent_id: agentId, to_number: '+15550006666' }, { idem: 'x'.repeat(256) });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail[0]).toMatchObject({ loc: ['header', 'idempotency-key'], type: 'idempotency_key_format' });
  });
});

describe('limits and stop', () => {
  it('429 with the reason when max_concurrent_calls is reached; scheduled calls wait outside the count', async () => {
    const o = await tp.createOrg('outbound-limited');
    const agent = await agentOf(o.orgId);
    await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id) values (${o.orgId}, '+14155550188', 'simulated', ${agent}, 'ST_y')`;
    await tp.sql`update orgs set max_concurrent_calls = 2 where id = ${o.orgId}`;
    const results = await Promise.all(Array.from({ length: 12 }, () => create({ agent_id: agent, to_number: '+15550007777' }, { key: o.key })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(2);
    const refused = results.find((r) => r.status === 429)!;
    expect(refused.body).toMatchObject({ type: 'rate_limited', reason: 'concurrency', limit: 'max_concurrent_calls', limit_value: 2 });
    const scheduled = await create({ agent_id: agent, to_number: '+15550007777', scheduled_at: new Date(Date.now() + 60_000).toISOString() }, { key: o.key });
    expect(scheduled.status).toBe(201);
  });

  it('stopping a queued call ends it as never connected: failed canceled, call.failed, no call.ended, no analysis; its dial job then does nothing', async () => {
    const res = await create({ agent_id: agentId, to_number: '+15550008888', scheduled_at: new Date(Date.now() + 60_000).toISOString() });
    const stopped = await tp.request('post', `/v1/calls/${res.body.id}/stop`, { key: org.key });
    expect(stopped.body).toMatchObject({ status: 'failed', end_reason: 'canceled', duration_seconds: 0, latency: null, outcome: null, ai_summary: null });
    expect(stopped.body.analysis).toMatchObject({ status: 'skipped', outcome: null, summary: null });
    const events = await tp.sql<{ type: string; payload: Record<string, unknown> }[]>`select type, payload from events where call_id = ${res.body.id} order by created_at`;
    expect(events.map((e) => e.type)).toEqual(['call.failed']);
    expect(events[0]!.payload).toMatchObject({ call_id: res.body.id, reason: 'canceled' });
    expect(await dialCall(tp.platform.services, res.body.id)).toBe('already failed');
    const [row] = await tp.sql`select dialed_at from calls where id = ${res.body.id}`;
    expect(row!.dialed_at).toBeNull();
  });
});

describe('SIP status to reason', () => {
  it('maps final responses to carrier-style reasons', () => {
    const table = Object.fromEntries([486, 600, 408, 480, 487, 403, 603, 404, 484, 410, 604, 500, 503, 488].map((c) => [c, reasonForSipStatus(c)]));
    expect(table).toEqual({
      486: 'busy',
      600: 'busy',
      408: 'no_answer',
      480: 'no_answer',
      487: 'no_answer',
      403: 'rejected',
      603: 'rejected',
      404: 'invalid_number',
      484: 'invalid_number',
      410: 'invalid_number',
      604: 'invalid_number',
      500: 'carrier_error',
      503: 'carrier_error',
      488: 'carrier_error',
    });
    expect(reasonForSipStatus(undefined)).toBe('no_answer');
  });
});
