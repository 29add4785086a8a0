// The phone-numbers resource against a real control plane and a real LiveKit server (trunks and dispatch
// rules live there): search, purchase and its undo, org isolation, PATCH, DELETE, the repair job, and the
// worker's inbound route (routing and refusals without media; the SIP path is test/e2e/inbound-call.test.ts).
import { beforeAll, describe, expect, it } from 'vitest';
import { SIPDispatchRule, SIPDispatchRuleIndividual, SipClient } from 'livekit-server-sdk';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { useStack } from '../../../../test/support/stack.ts';
import { CarrierError, carrierFor, setCarrier, type CarrierAdapter } from './carriers/index.ts';
import { repairWiring } from './jobs.ts';
import { CATCH_ALL_TRUNK_NAME } from './wiring.ts';
import { callCostCents } from './rates.ts';

const stack = await useStack({});
let tp: TestPlatform;
let sip: SipClient;
let a: { orgId: string; key: string };
let b: { orgId: string; key: string };
let agentA: string;
let agentA2: string;
let agentB: string;
const WORKER = { authorization: 'Bearer test-worker-token-0123456789abcdef0123' };

async function agent(key: string, name: string) {
  const model = await tp.request('post', '/v1/models', { key, body: { name: `m-${name}`, model: 'gpt-4o-mini' } });
  const res = await tp.request('post', '/v1/agents', { key, body: { name, llm_id: model.body.id } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

const objectsNamed = async (id: string) => ({
  rules: (await sip.listSipDispatchRule()).filter((r) => r.name.includes(id)).length,
  trunks: [...(await sip.listSipInboundTrunk()), ...(await sip.listSipOutboundTrunk())].filter((t) => t.name.includes(id)).length,
});

beforeAll(async () => {
  tp = await usePlatform({ LIVEKIT_URL: stack.livekitHttpUrl, LIVEKIT_API_KEY: stack.apiKey, LIVEKIT_API_SECRET: stack.apiSecret, PHONE_WIRING_STALE_SECONDS: 10 });
  sip = new SipClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  a = await tp.createOrg('a');
  b = await tp.createOrg('b');
  agentA = await agent(a.key, 'reception');
  agentA2 = await agent(a.key, 'overflow');
  agentB = await agent(b.key, 'other');
}, 120_000);

describe('search', () => {
  it('lists available fictional numbers with locality, region and capabilities, at both paths', async () => {
    for (const path of ['/phone-numbers/search', '/v1/phone-numbers/search']) {
      const res = await tp.request('get', `${path}?country=US&area_code=212&limit=2`, { key: a.key });
      expect(res.status).toBe(200);
      expect(res.body.items).toEqual([
        { phone_number: '+12125550100', locality: 'New York', region: 'NY', country: 'US', capabilities: { voice: true, sms: true } },
        { phone_number: '+12125550101', locality: 'New York', region: 'NY', country: 'US', capabilities: { voice: true, sms: true } },
      ]);
    }
    const gb = await tp.request('get', '/phone-numbers/search?country=gb&contains=7946&limit=1', { key: a.key });
    expect(gb.body.items[0].phone_number).toMatch(/^\+4420794600/);
  });

  it('answers the list envelope like every other list, and offset pages through the matches', async () => {
    const all = await tp.request('get', '/v1/phone-numbers/search?country=US&area_code=212&limit=4', { key: a.key });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 4, limit: 4, offset: 0 });
    expect(all.body.items).toHaveLength(4);
    const page = await tp.request('get', '/phone-numbers/search?country=US&area_code=212&limit=2&offset=2', { key: a.key });
    expect(page.body).toEqual({ items: all.body.items.slice(2, 4), total: 4, limit: 2, offset: 2 });
    // Defaults stated by the document: limit 20, offset 0.
    const plain = await tp.request('get', '/v1/phone-numbers/search?country=US&area_code=212', { key: a.key });
    expect(plain.body).toMatchObject({ limit: 20, offset: 0 });
    expect(plain.body.total).toBe(plain.body.items.length);
  });

  it('422 in the spec shape for invalid filters', async () => {
    for (const q of ['country=USA', 'area_code=12', 'limit=0', 'offset=-1', 'offset=51', 'contains=%2B1', 'country=GB&area_code=212', 'colour=red']) {
      const res = await tp.request('get', `/phone-numbers/search?${q}`, { key: a.key });
      expect(res.status, q).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: expect.arrayContaining(['query']), msg: expect.any(String), type: expect.any(String) });
    }
  });
});

describe('purchase, read, update, release', () => {
  it('422 for the spec rules of the body', async () => {
    const bad = [
      {},
      { agent_id: 'nope' },
      { agent_id: agentA, phone_number: '15550100' },
      { agent_id: agentA, phone_number: '+0123' },
      { agent_id: agentA, country: 'USA' },
      { agent_id: agentA, country: 'GB', area_code: '212' },
      { agent_id: agentB },
      { agent_id: agentA, inbound_routing: { fallback: { agent_id: agentB } } },
      { agent_id: agentA, provider: 'twilio' },
    ];
    for (const body of bad) {
      const res = await tp.request('post', '/v1/phone-numbers', { key: a.key, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(Array.isArray(res.body.detail)).toBe(true);
    }
  });

  it('buys and wires a number in one step; another org sees a 404; a taken number is a 409', async () => {
    const res = await tp.request('post', '/v1/phone-numbers', {
      key: a.key,
      body: { agent_id: agentA, area_code: '312', friendly_name: 'Chicago', inbound_routing: { voicemail_message: 'Leave a message.' } },
    });
    expect(res.status).toBe(200);
    const n = res.body;
    expect(n).toMatchObject({
      phone_number: '+13125550100',
      friendly_name: 'Chicago',
      provider: 'simulated',
      agent_id: agentA,
      status: 'active',
      sms_capable: true,
      inbound_routing: { agent_id: null, fallback: null, voicemail_message: 'Leave a message.' },
    });
    const [trunk] = await sip.listSipInboundTrunk({ trunkIds: [n.inbound_trunk_id] });
    expect(trunk!.numbers).toEqual(['+13125550100']);
    expect(trunk!.allowedAddresses).toEqual(['127.0.0.0/8', '::1']);
    const [rule] = await sip.listSipDispatchRule({ dispatchRuleIds: [n.dispatch_rule_id] });
    expect(rule!.trunkIds).toEqual([n.inbound_trunk_id]);
    expect(rule!.roomConfig?.agents[0]?.agentName).toBe(tp.config.AGENT_NAME);
    expect(JSON.parse(rule!.roomConfig!.agents[0]!.metadata)).toEqual({ phone_number_id: n.id, phone_number: '+13125550100' });
    const [out] = await sip.listSipOutboundTrunk({ trunkIds: [n.outbound_trunk_id] });
    expect(out!.address).toBe('127.0.0.1:5080');

    expect((await tp.request('get', `/v1/phone-numbers/${n.id}`, { key: a.key })).body.id).toBe(n.id);
    expect((await tp.request('get', `/v1/phone-numbers/${n.id}`, { key: b.key })).status).toBe(404);
    expect((await tp.request('patch', `/v1/phone-numbers/${n.id}`, { key: b.key, body: { status: 'inactive' } })).status).toBe(404);
    expect((await tp.request('delete', `/v1/phone-numbers/${n.id}`, { key: b.key })).status).toBe(404);
    const list = await tp.request('get', '/v1/phone-numbers', { key: a.key });
    expect(list.body).toMatchObject({ total: 1, limit: 100, offset: 0 });
    expect((await tp.request('get', '/v1/phone-numbers', { key: b.key })).body.total).toBe(0);

    const taken = await tp.request('post', '/v1/phone-numbers', { key: b.key, body: { agent_id: agentB, phone_number: '+13125550100' } });
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ type: 'conflict', reason: 'number_unavailable' });
    const audit = await tp.sql`select action from audit_events where org_id = ${a.orgId} and resource_id = ${n.id}`;
    expect(audit.map((r) => r.action)).toContain('phone_number.purchase');
  });

  it('PATCH changes name, agent and status; inbound-routing sets and clears fields', async () => {
    const n = (await tp.request('post', '/v1/phone-numbers', { key: a.key, body: { agent_id: agentA, area_code: '617' } })).body;
    const p = await tp.request('patch', `/v1/phone-numbers/${n.id}`, { key: a.key, body: { friendly_name: 'Boston', agent_id: agentA2, status: 'inactive' } });
    expect(p.body).toMatchObject({ friendly_name: 'Boston', agent_id: agentA2, status: 'inactive' });
    expect((await tp.request('patch', `/v1/phone-numbers/${n.id}`, { key: a.key, body: { status: 'gone' } })).status).toBe(422);
    expect((await tp.request('patch', `/v1/phone-numbers/${n.id}`, { key: a.key, body: { agent_id: agentB } })).status).toBe(422);
    const r1 = await tp.request('patch', `/v1/phone-numbers/${n.id}/inbound-routing`, { key: a.key, body: { agent_id: agentA, fallback: { agent_id: agentA2 } } });
    expect(r1.status).toBe(200);
    expect(r1.body.inbound_routing).toEqual({ agent_id: agentA, squad_id: null, fallback: { agent_id: agentA2 }, voicemail_message: null });
    const r2 = await tp.request('patch', `/v1/phone-numbers/${n.id}/inbound-routing`, { key: a.key, body: { agent_id: null } });
    expect(r2.body.inbound_routing).toEqual({ agent_id: null, squad_id: null, fallback: { agent_id: agentA2 }, voicemail_message: null });
    expect((await tp.request('patch', `/v1/phone-numbers/${n.id}/inbound-routing`, { key: a.key, body: { fallback: {} } })).status).toBe(422);
    expect((await tp.request('patch', `/v1/phone-numbers/${n.id}/inbound-routing`, { key: a.key, body: { fallback: { agent_id: agentB } } })).status).toBe(422);
    const r3 = await tp.request('patch', `/v1/phone-numbers/${n.id}/inbound-routing`, { key: a.key, body: { fallback: null } });
    expect(r3.body.inbound_routing).toBeNull();
  });

  it('DELETE releases at the carrier and removes the trunks and the rule; the number can be bought again', async () => {
    const n = (await tp.request('post', '/v1/phone-numbers', { key: a.key, body: { agent_id: agentA, area_code: '206' } })).body;
    expect(await objectsNamed(n.id)).toEqual({ rules: 1, trunks: 2 });
    expect((await tp.request('delete', `/v1/phone-numbers/${n.id}`, { key: a.key })).status).toBe(204);
    expect((await tp.request('get', `/v1/phone-numbers/${n.id}`, { key: a.key })).status).toBe(404);
    const [row] = await tp.sql`select wiring_state, deleted_at from phone_numbers where id = ${n.id}`;
    expect(row!.wiring_state).toBe('released');
    expect(row!.deleted_at).not.toBeNull();
    expect(await objectsNamed(n.id)).toEqual({ rules: 0, trunks: 0 });
    const [inv] = await tp.sql`select purchased_at from simulated_numbers where phone_number = ${n.phone_number}`;
    expect(inv!.purchased_at).toBeNull();
    const again = await tp.request('post', '/v1/phone-numbers', { key: b.key, body: { agent_id: agentB, phone_number: n.phone_number } });
    expect(again.status).toBe(200);
  });
});

describe('a failed purchase is undone completely', () => {
  const wrap = (base: CarrierAdapter, over: Partial<CarrierAdapter>): CarrierAdapter => ({ ...base, ...over, name: base.name });

  it('carrier down: 503 with Retry-After, no number recorded', async () => {
    const base = carrierFor(tp.platform.services);
    setCarrier(tp.platform.services, wrap(base, { purchase: async () => Promise.reject(new CarrierError('unavailable', 'carrier 502', { carrierStatus: 502 })) }));
    try {
      const res = await tp.request('post', '/v1/phone-numbers', { key: a.key, body: { agent_id: agentA, area_code: '512' } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('30');
      expect(res.body).toMatchObject({ type: 'service_unavailable', reason: 'carrier_unavailable' });
      const live = await tp.sql`select id from phone_numbers where phone_number like '+1512%' and deleted_at is null`;
      expect(live).toEqual([]);
    } finally {
      setCarrier(tp.platform.services, base);
    }
  });

  it('a step after the sale fails: the number is released and the trunk and rule already made are removed', async () => {
    const base = carrierFor(tp.platform.services);
    setCarrier(tp.platform.services, wrap(base, { outboundTermination: async () => Promise.reject(new Error('termination lookup failed')) }));
    try {
      const res = await tp.request('post', '/v1/phone-numbers', { key: a.key, body: { agent_id: agentA, phone_number: '+13035550100' } });
      expect(res.status).toBe(503);
      const [row] = await tp.sql<{ id: string; wiring_state: string }[]>`select id, wiring_state from phone_numbers where phone_number = '+13035550100'`;
      expect(row!.wiring_state).toBe('released');
      expect(await objectsNamed(row!.id)).toEqual({ rules: 0, trunks: 0 });
      const [inv] = await tp.sql`select purchased_at from simulated_numbers where phone_number = '+13035550100'`;
      expect(inv!.purchased_at).toBeNull();
    } finally {
      setCarrier(tp.platform.services, base);
    }
  });

  it('the repair job undoes a purchase a crash left half-wired, and removes orphaned LiveKit objects', async () => {
    const svc = tp.platform.services;
    // A crash after the sale and the inbound trunk, before the rule: the row says 'wiring'.
    const [row] = await tp.sql<{ id: string }[]>`
      insert into phone_numbers (org_id, phone_number, provider, agent_id, wiring_state, carrier_number_id, updated_at)
      values (${a.orgId}, '+13055550100', 'simulated', ${agentA}, 'wiring', '+13055550100', now() - interval '1 hour') returning id`;
    await tp.sql`update simulated_numbers set purchased_at = now() where phone_number = '+13055550100'`;
    await sip.createSipInboundTrunk(`vap:pn:${row!.id}:in`, ['+13055550100']);
    // And an object named for a number that never got its row.
    const ghost = '00000000-0000-4000-8000-000000000001';
    await sip.createSipInboundTrunk(`vap:pn:${ghost}:in`, ['+13055550199']);
    const result = await repairWiring(svc);
    expect(result.undone).toBeGreaterThanOrEqual(1);
    expect(await objectsNamed(row!.id)).toEqual({ rules: 0, trunks: 0 });
    expect(await objectsNamed(ghost)).toEqual({ rules: 0, trunks: 0 });
    const [after] = await tp.sql`select wiring_state from phone_numbers where id = ${row!.id}`;
    expect(after!.wiring_state).toBe('released');
    const [inv] = await tp.sql`select purchased_at from simulated_numbers where phone_number = '+13055550100'`;
    expect(inv!.purchased_at).toBeNull();
    expect((await sip.listSipInboundTrunk()).filter((t) => t.name === CATCH_ALL_TRUNK_NAME)).toHaveLength(1);
    expect((await sip.listSipDispatchRule()).filter((r) => r.name === CATCH_ALL_TRUNK_NAME)).toHaveLength(0);
  });
});

describe('rooms named by the number', () => {
  it("a number's rule names rooms pn-<id>_, and the repair job moves a rule made with the old prefix to it", async () => {
    const n = (await tp.request('post', '/v1/phone-numbers', { key: a.key, body: { agent_id: agentA, area_code: '212' } })).body;
    const prefixOf = async () => {
      const r = (await sip.listSipDispatchRule()).find((x) => x.sipDispatchRuleId === n.dispatch_rule_id)!.rule!.rule;
      return r.case === 'dispatchRuleIndividual' ? r.value.roomPrefix : null;
    };
    expect(await prefixOf()).toBe(`pn-${n.id}`);
    await sip.updateSipDispatchRuleFields(n.dispatch_rule_id, {
      rule: new SIPDispatchRule({ rule: { case: 'dispatchRuleIndividual', value: new SIPDispatchRuleIndividual({ roomPrefix: 'pn-' }) } }),
    });
    expect(await prefixOf()).toBe('pn-');
    await repairWiring(tp.platform.services);
    expect(await prefixOf()).toBe(`pn-${n.id}`);
  });
});

describe('the worker opens inbound calls', () => {
  type Wired = { id: string; phone_number: string; inbound_trunk_id: string; dispatch_rule_id: string };
  /** What the worker sends for a call that came in through the number's own trunk and rule (room `pn-<id>_…`). */
  const open = (n: Wired, room: string, from: string | null = '15550100111') =>
    tp.request('post', '/internal/v1/calls/inbound', {
      key: null,
      headers: WORKER,
      body: { to_number: n.phone_number, from_number: from, room_name: `pn-${n.id}_${room}`, sip_call_id: `cid-${room}`, trunk_id: n.inbound_trunk_id, dispatch_rule_id: n.dispatch_rule_id },
    });

  it('routes to the override, records the call with the rate, refuses unknown and inactive numbers without a call', async () => {
    const n = (await tp.request('post', '/v1/phone-numbers', { key: a.key, body: { agent_id: agentA, area_code: '415', inbound_routing: { agent_id: agentA2 } } })).body;
    const res = await open(n, 'room-1');
    expect(res.status).toBe(200);
    const [call] = await tp.sql`select * from calls where id = ${res.body.call_id}`;
    expect(call).toMatchObject({ type: 'inbound', direction: 'inbound', agent_id: agentA2, from_number: '+15550100111', to_number: n.phone_number, carrier_call_sid: 'cid-room-1', status: 'initiated' });
    expect(Number(call!.rate_cents_per_minute)).toBe(1);
    // The open returns the call's capability: with it (and only with it) the worker reads the call's config.
    expect(res.body.capability).toMatch(/^vcap1\./);
    const config = (capability?: string) =>
      tp.request('get', `/internal/v1/calls/${res.body.call_id}/config`, { key: null, headers: { ...WORKER, ...(capability ? { 'x-call-capability': capability } : {}) } });
    const fetched = await config(res.body.capability);
    expect(fetched.status).toBe(200);
    expect((await config()).status).toBe(403);
    // The open brings the same config (with the capability in it), so the worker starts the session without asking for it.
    expect(res.body.config).toEqual(fetched.body);
    expect(res.body.config.capability).toBe(res.body.capability);
    expect(res.body.config.call.id).toBe(res.body.call_id);
    // A repeated open names the same call, and hands out neither config nor capability (once per room).
    const again = await open(n, 'room-1');
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ reason: 'already_opened', call_id: res.body.call_id });
    expect(again.body.capability).toBeUndefined();

    const unknown = await open({ ...n, phone_number: '+19995550100' }, 'unrouted-1');
    expect(unknown.status).toBe(404);
    expect(unknown.body.reason).toBe('number_not_found');
    await tp.request('patch', `/v1/phone-numbers/${n.id}`, { key: a.key, body: { status: 'inactive' } });
    const inactive = await open(n, 'room-2');
    expect(inactive.status).toBe(404);
    expect(inactive.body.reason).toBe('number_inactive');
    expect(await tp.sql`select id from calls where room_name in (${`pn-${n.id}_unrouted-1`}, ${`pn-${n.id}_room-2`})`).toEqual([]);
    const body = { to_number: n.phone_number, from_number: null, room_name: `pn-${n.id}_x`, sip_call_id: null, trunk_id: n.inbound_trunk_id, dispatch_rule_id: n.dispatch_rule_id };
    expect((await tp.request('post', '/internal/v1/calls/inbound', { key: a.key, body })).status).toBe(401);
  });

  it('a late job for a call the control plane gave to the fallback agent gets 409 answered_elsewhere (and leaves the room be)', async () => {
    const n = (await tp.request('post', '/v1/phone-numbers', { key: a.key, body: { agent_id: agentA, area_code: '415' } })).body;
    const room = `pn-${n.id}_late-1`;
    // As unanswered.ts records it: no worker took the primary's dispatch, the fallback's call was opened.
    const [row] = await tp.sql`
      insert into calls (org_id, agent_id, type, direction, to_number, room_name, metadata, status)
      values (${a.orgId}, ${agentA2}, 'inbound', 'inbound', ${n.phone_number}, ${room}, ${tp.sql.json({ routed_via: 'fallback', unanswered_by: [agentA] })}, 'initiated')
      returning id`;
    const res = await open(n, 'late-1');
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ reason: 'answered_elsewhere', call_id: row!.id });
    const [call] = await tp.sql`select status from calls where id = ${row!.id}`;
    expect(call!.status).toBe('initiated');
  });

  it("the call's config listens for a mailbox when the number has a voicemail_message, whatever the agent's voicemail_detection", async () => {
    // The agent's own flag (and message) is for its outbound calls.
    const dialler = await agent(a.key, 'dialler');
    expect((await tp.request('patch', `/v1/agents/${dialler}`, { key: a.key, body: { voicemail_detection: true, voicemail_message: 'The agent\'s message.' } })).status).toBe(200);
    const withMessage = (await tp.request('post', '/v1/phone-numbers', { key: a.key, body: { agent_id: agentA, area_code: '415', inbound_routing: { voicemail_message: 'Please ring us back.' } } })).body;
    const plain = (await tp.request('post', '/v1/phone-numbers', { key: a.key, body: { agent_id: dialler, area_code: '415' } })).body;
    const detecting = await open(withMessage, 'vm-1');
    expect(detecting.status).toBe(200);
    expect(detecting.body.config.call).toMatchObject({ type: 'inbound', voicemail_detection: true });
    expect(detecting.body.config.agent).toMatchObject({ voicemail_detection: false, voicemail_message: 'Please ring us back.' });
    const notDetecting = await open(plain, 'vm-2');
    expect(notDetecting.body.config.call).toMatchObject({ type: 'inbound', voicemail_detection: false });
    // A message removed from the number takes detection away from the next call.
    await tp.request('patch', `/v1/phone-numbers/${withMessage.id}/inbound-routing`, { key: a.key, body: { voicemail_message: null } });
    expect((await open(withMessage, 'vm-3')).body.config.call.voicemail_detection).toBe(false);
  });

  it('over the daily cap: the fallback agent answers; without one the call fails with call.failed', async () => {
    const withFallback = (await tp.request('post', '/v1/phone-numbers', { key: b.key, body: { agent_id: agentB, area_code: '604', country: 'CA' } })).body;
    const fallbackAgent = await agent(b.key, 'b-overflow');
    await tp.request('patch', `/v1/phone-numbers/${withFallback.id}/inbound-routing`, { key: b.key, body: { fallback: { agent_id: fallbackAgent } } });
    await tp.sql`update orgs set max_calls_per_day = 0 where id = ${b.orgId}`;
    const res = await open(withFallback, 'cap-1');
    expect(res.status).toBe(200);
    const [call] = await tp.sql`select agent_id, metadata from calls where id = ${res.body.call_id}`;
    expect(call!.agent_id).toBe(fallbackAgent);
    expect(call!.metadata.routed_via).toBe('fallback');

    await tp.request('patch', `/v1/phone-numbers/${withFallback.id}/inbound-routing`, { key: b.key, body: { fallback: null } });
    const refused = await open(withFallback, 'cap-2');
    expect(refused.status).toBe(409);
    expect(refused.body.reason).toBe('daily_cap_reached');
    const [failed] = await tp.sql`select status, end_reason from calls where id = ${refused.body.call_id}`;
    expect(failed).toMatchObject({ status: 'failed', end_reason: 'daily_cap_reached' });
    const [event] = await tp.sql`select payload from events where call_id = ${refused.body.call_id} and type = 'call.failed'`;
    expect(event!.payload).toMatchObject({ reason: 'daily_cap_reached', to_number: withFallback.phone_number });
    await tp.sql`update orgs set max_calls_per_day = 1000 where id = ${b.orgId}`;
  });
});

describe('cost', () => {
  it('is the rate times whole minutes, rounded up', () => {
    expect(callCostCents(1, 0)).toBe(0);
    expect(callCostCents(1, 1)).toBe(1);
    expect(callCostCents(1, 60)).toBe(1);
    expect(callCostCents(1, 61)).toBe(2);
    expect(callCostCents(0.34, 125)).toBe(2);
    expect(callCostCents(null, 125)).toBeNull();
  });
});
