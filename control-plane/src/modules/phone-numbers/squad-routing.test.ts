// Phone numbers routed to squads, against a real control plane and a real LiveKit server (numbers are wired
// there): squad_id on the purchase, the number, its inbound routing and fallback (exactly one target each, the
// exact 422 bodies), another organisation's squad, the delete guard of a routed squad, the number following its
// squad's entry agent, and the worker's inbound open starting the call on the squad (the SIP path is
// test/e2e/inbound-call.test.ts).
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { useStack } from '../../../../test/support/stack.ts';

const stack = await useStack({});
let tp: TestPlatform;
let a: { orgId: string; key: string };
let b: { orgId: string; key: string };
let front: string;
let billing: string;
let solo: string;
let foreignAgent: string;
let desk: string;
let foreignSquad: string;
const WORKER = { authorization: 'Bearer test-worker-token-0123456789abcdef0123' };

async function agent(key: string, name: string, extra: Record<string, unknown> = {}) {
  const model = await tp.request('post', '/v1/models', { key, body: { name: `m-${name}`, model: 'gpt-4o-mini', system_prompt: `You are ${name}.` } });
  const res = await tp.request('post', '/v1/agents', { key, body: { name, llm_id: model.body.id, ...extra } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function squad(key: string, name: string, agentIds: string[], extra: Record<string, unknown> = {}) {
  const res = await tp.request('post', '/v1/squads', {
    key,
    body: { name, agent_ids: agentIds, entry_agent_id: agentIds[0], handoffs: agentIds.length > 1 ? [{ from_agent_id: agentIds[0], to_agent_id: agentIds[1], description: 'Billing questions' }] : [], ...extra },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

const buy = (body: Record<string, unknown>, key = a.key) => tp.request('post', '/v1/phone-numbers', { key, body });
const routing = (id: string, body: unknown, key = a.key) => tp.request('patch', `/v1/phone-numbers/${id}/inbound-routing`, { key, body });
const refNotFound = (loc: string[], what: string, input: string) => ({ loc, msg: `No ${what} with this id in your organisation`, type: 'reference_not_found', input });

beforeAll(async () => {
  tp = await usePlatform({ LIVEKIT_URL: stack.livekitHttpUrl, LIVEKIT_API_KEY: stack.apiKey, LIVEKIT_API_SECRET: stack.apiSecret });
  a = await tp.createOrg('a');
  b = await tp.createOrg('b');
  front = await agent(a.key, 'Front desk', { first_message: 'Front desk, hello.' });
  billing = await agent(a.key, 'Billing', { first_message: 'Billing here.' });
  solo = await agent(a.key, 'Solo');
  foreignAgent = await agent(b.key, 'Other');
  desk = await squad(a.key, 'Desk', [front, billing]);
  foreignSquad = await squad(b.key, 'Theirs', [foreignAgent]);
}, 120_000);

describe('a number routed to a squad', () => {
  it("is bought with squad_id: its agent_id is the squad's entry agent; the list filters by squad_id", async () => {
    const res = await buy({ squad_id: desk, area_code: '212', inbound_routing: { voicemail_message: 'Leave a message.' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      squad_id: desk,
      agent_id: front,
      inbound_routing: { agent_id: null, squad_id: null, fallback: null, voicemail_message: 'Leave a message.' },
    });
    expect((await tp.request('get', `/v1/phone-numbers/${res.body.id}`, { key: a.key })).body.squad_id).toBe(desk);
    const listed = await tp.request('get', `/v1/phone-numbers?squad_id=${desk}`, { key: a.key });
    expect(listed.body.items.map((n: { id: string }) => n.id)).toEqual([res.body.id]);
    // An agent's number has no squad.
    const plain = await buy({ agent_id: solo, area_code: '212' });
    expect(plain.body).toMatchObject({ agent_id: solo, squad_id: null });
    const [audit] = await tp.sql`select details from audit_events where resource_id = ${res.body.id} and action = 'phone_number.purchase'`;
    expect(audit!.details).toMatchObject({ agent_id: front, squad_id: desk });
  });

  it('takes exactly one of agent_id and squad_id, for the number, its routing and its fallback (422 detail)', async () => {
    const both = await buy({ agent_id: solo, squad_id: desk, area_code: '212' });
    expect(both.status).toBe(422);
    expect(both.body.detail).toEqual([{ loc: ['body', 'squad_id'], msg: 'Give agent_id or squad_id, not both', type: 'value_error', input: desk }]);
    const neither = await buy({ area_code: '212' });
    expect(neither.status).toBe(422);
    expect(neither.body.detail).toEqual([{ loc: ['body', 'agent_id'], msg: 'Give agent_id or squad_id', type: 'missing', input: null }]);
    const inRouting = await buy({ agent_id: solo, area_code: '212', inbound_routing: { agent_id: solo, squad_id: desk, fallback: { agent_id: solo, squad_id: desk } } });
    expect(inRouting.status).toBe(422);
    expect(inRouting.body.detail).toEqual([
      { loc: ['body', 'inbound_routing', 'squad_id'], msg: 'Give agent_id or squad_id, not both', type: 'value_error', input: desk },
      { loc: ['body', 'inbound_routing', 'fallback', 'squad_id'], msg: 'Give agent_id or squad_id, not both', type: 'value_error', input: desk },
    ]);
    // Nothing was bought by the refused purchases.
    expect((await tp.sql`select count(*)::int as n from phone_numbers where org_id = ${a.orgId} and wiring_state <> 'wired'`)[0]!.n).toBe(0);

    const n = (await buy({ agent_id: solo, area_code: '212' })).body;
    const patchBoth = await tp.request('patch', `/v1/phone-numbers/${n.id}`, { key: a.key, body: { agent_id: solo, squad_id: desk } });
    expect(patchBoth.status).toBe(422);
    expect(patchBoth.body.detail).toEqual([{ loc: ['body', 'squad_id'], msg: 'Give agent_id or squad_id, not both', type: 'value_error', input: desk }]);
    const routeBoth = await routing(n.id, { agent_id: solo, squad_id: desk });
    expect(routeBoth.status).toBe(422);
    expect(routeBoth.body.detail).toEqual([{ loc: ['body', 'squad_id'], msg: 'Give agent_id or squad_id, not both', type: 'value_error', input: desk }]);
    const emptyFallback = await routing(n.id, { fallback: {} });
    expect(emptyFallback.status).toBe(422);
    expect(emptyFallback.body.detail).toEqual([{ loc: ['body', 'fallback', 'agent_id'], msg: 'Give agent_id or squad_id', type: 'missing', input: null }]);
    const [row] = await tp.sql`select agent_id, squad_id, inbound_routing from phone_numbers where id = ${n.id}`;
    expect(row).toEqual({ agent_id: solo, squad_id: null, inbound_routing: null });
  });

  it("refuses another organisation's squad (and a missing one) as it refuses another organisation's agent: 422 reference_not_found at the field", async () => {
    const bought = await buy({ squad_id: foreignSquad, area_code: '212' });
    expect(bought.status).toBe(422);
    expect(bought.body.detail).toEqual([refNotFound(['body', 'squad_id'], 'squad', foreignSquad)]);
    const inRouting = await buy({ agent_id: solo, area_code: '212', inbound_routing: { squad_id: foreignSquad, fallback: { squad_id: foreignSquad } } });
    expect(inRouting.status).toBe(422);
    expect(inRouting.body.detail).toEqual([
      refNotFound(['body', 'inbound_routing', 'squad_id'], 'squad', foreignSquad),
      refNotFound(['body', 'inbound_routing', 'fallback', 'squad_id'], 'squad', foreignSquad),
    ]);
    const n = (await buy({ agent_id: solo, area_code: '212' })).body;
    const patched = await tp.request('patch', `/v1/phone-numbers/${n.id}`, { key: a.key, body: { squad_id: foreignSquad } });
    expect(patched.status).toBe(422);
    expect(patched.body.detail).toEqual([refNotFound(['body', 'squad_id'], 'squad', foreignSquad)]);
    const routed = await routing(n.id, { squad_id: foreignSquad, fallback: { squad_id: foreignSquad } });
    expect(routed.status).toBe(422);
    expect(routed.body.detail).toEqual([refNotFound(['body', 'squad_id'], 'squad', foreignSquad), refNotFound(['body', 'fallback', 'squad_id'], 'squad', foreignSquad)]);
    // A deleted squad is as good as missing.
    const gone = await squad(a.key, 'Gone', [solo]);
    expect((await tp.request('delete', `/v1/squads/${gone}`, { key: a.key })).status).toBe(204);
    expect((await routing(n.id, { squad_id: gone })).body.detail).toEqual([refNotFound(['body', 'squad_id'], 'squad', gone)]);
    // The other organisation cannot point its own number at this organisation's squad either.
    const theirs = (await buy({ agent_id: foreignAgent, area_code: '212' }, b.key)).body;
    expect((await routing(theirs.id, { squad_id: desk }, b.key)).body.detail).toEqual([refNotFound(['body', 'squad_id'], 'squad', desk)]);
    const [row] = await tp.sql`select squad_id, inbound_routing from phone_numbers where id = ${n.id}`;
    expect(row).toEqual({ squad_id: null, inbound_routing: null });
  });

  it('PATCH moves a number between an agent and a squad; routing sets one target and clears the other; the number follows its squad\'s entry agent', async () => {
    const n = (await buy({ agent_id: solo, area_code: '212' })).body;
    const toSquad = await tp.request('patch', `/v1/phone-numbers/${n.id}`, { key: a.key, body: { squad_id: desk } });
    expect(toSquad.body).toMatchObject({ agent_id: front, squad_id: desk });
    const toAgent = await tp.request('patch', `/v1/phone-numbers/${n.id}`, { key: a.key, body: { agent_id: solo } });
    expect(toAgent.body).toMatchObject({ agent_id: solo, squad_id: null });
    expect((await tp.request('patch', `/v1/phone-numbers/${n.id}`, { key: a.key, body: { friendly_name: 'Kept' } })).body).toMatchObject({ agent_id: solo, squad_id: null, friendly_name: 'Kept' });

    const r1 = await routing(n.id, { squad_id: desk, fallback: { squad_id: desk } });
    expect(r1.status).toBe(200);
    expect(r1.body.inbound_routing).toEqual({ agent_id: null, squad_id: desk, fallback: { squad_id: desk }, voicemail_message: null });
    const r2 = await routing(n.id, { agent_id: billing });
    expect(r2.body.inbound_routing).toEqual({ agent_id: billing, squad_id: null, fallback: { squad_id: desk }, voicemail_message: null });
    const r3 = await routing(n.id, { squad_id: desk, fallback: { agent_id: solo } });
    expect(r3.body.inbound_routing).toEqual({ agent_id: null, squad_id: desk, fallback: { agent_id: solo }, voicemail_message: null });
    const r4 = await routing(n.id, { squad_id: null, fallback: null });
    expect(r4.body.inbound_routing).toBeNull();

    // The squad's entry agent changes: its numbers show the new one (and its agent filter finds them).
    const moving = await squad(a.key, 'Moving', [front, billing]);
    const m = (await buy({ squad_id: moving, area_code: '212' })).body;
    expect((await tp.request('patch', `/v1/squads/${moving}`, { key: a.key, body: { entry_agent_id: billing } })).status).toBe(200);
    expect((await tp.request('get', `/v1/phone-numbers/${m.id}`, { key: a.key })).body).toMatchObject({ agent_id: billing, squad_id: moving });
    expect((await tp.request('get', `/v1/phone-numbers?agent_id=${billing}`, { key: a.key })).body.items.map((x: { id: string }) => x.id)).toContain(m.id);
  });

  it('a squad that a number routes to (as its squad, its routing or its fallback) cannot be deleted: 409 naming the numbers', async () => {
    const s = await squad(a.key, 'Routed', [front, billing]);
    const own = (await buy({ squad_id: s, area_code: '212' })).body;
    const viaRouting = (await buy({ agent_id: solo, area_code: '212', inbound_routing: { squad_id: s } })).body;
    const viaFallback = (await buy({ agent_id: solo, area_code: '212', inbound_routing: { fallback: { squad_id: s } } })).body;
    const res = await tp.request('delete', `/v1/squads/${s}`, { key: a.key });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ type: 'conflict' });
    expect(res.body.phone_numbers).toEqual(
      [own, viaRouting, viaFallback].map((n) => ({ id: n.id, phone_number: n.phone_number })).sort((x, y) => x.phone_number.localeCompare(y.phone_number)),
    );
    expect((await tp.request('get', `/v1/squads/${s}`, { key: a.key })).status).toBe(200);
    // Routed elsewhere (or released), the squad can go.
    await tp.request('patch', `/v1/phone-numbers/${own.id}`, { key: a.key, body: { agent_id: solo } });
    await routing(viaRouting.id, { squad_id: null });
    expect((await tp.request('delete', `/v1/squads/${s}`, { key: a.key })).status).toBe(409);
    expect((await tp.request('delete', `/v1/phone-numbers/${viaFallback.id}`, { key: a.key })).status).toBe(204);
    expect((await tp.request('delete', `/v1/squads/${s}`, { key: a.key })).status).toBe(204);
  });
});

describe('the worker opens an inbound call on a squad', () => {
  type Wired = { id: string; phone_number: string; inbound_trunk_id: string; dispatch_rule_id: string };
  const open = (n: Wired, room: string) =>
    tp.request('post', '/internal/v1/calls/inbound', {
      key: null,
      headers: WORKER,
      body: { to_number: n.phone_number, from_number: '15550100111', room_name: `pn-${n.id}_${room}`, sip_call_id: `cid-${room}`, trunk_id: n.inbound_trunk_id, dispatch_rule_id: n.dispatch_rule_id },
    });

  it("starts the call on the squad's entry agent with the squad, and gives the worker the squad's config", async () => {
    const n = (await buy({ squad_id: desk, area_code: '415' })).body;
    const res = await open(n, 'sq-1');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [call] = await tp.sql`select agent_id, squad_id, type, metadata from calls where id = ${res.body.call_id}`;
    expect(call).toMatchObject({ agent_id: front, squad_id: desk, type: 'inbound', metadata: { routed_via: 'primary' } });
    expect(res.body.config.agent).toMatchObject({ id: front, first_message: 'Front desk, hello.' });
    expect(res.body.config.squad).toMatchObject({ id: desk, handoffs: [{ from_agent_id: front, to_agent_id: billing }] });
    expect(res.body.config.squad.members.map((m: { agent: { id: string } }) => m.agent.id)).toEqual([billing]);
    expect(res.body.config.squad.members[0].prompt).toBe('You are Billing.');
    // The API shows it as a squad's call.
    expect((await tp.request('get', `/v1/calls/${res.body.call_id}`, { key: a.key })).body).toMatchObject({ agent_id: front, squad_id: desk });
  });

  it("the routing override's squad wins over the number's agent; an agent override wins over the number's squad", async () => {
    const n = (await buy({ agent_id: solo, area_code: '415', inbound_routing: { squad_id: desk } })).body;
    const res = await open(n, 'sq-2');
    expect(res.status).toBe(200);
    expect(res.body.config.squad.id).toBe(desk);
    const [call] = await tp.sql`select agent_id, squad_id from calls where id = ${res.body.call_id}`;
    expect(call).toEqual({ agent_id: front, squad_id: desk });

    const m = (await buy({ squad_id: desk, area_code: '415', inbound_routing: { agent_id: solo } })).body;
    const single = await open(m, 'sq-3');
    expect(single.body.config.squad).toBeUndefined();
    const [call2] = await tp.sql`select agent_id, squad_id from calls where id = ${single.body.call_id}`;
    expect(call2).toEqual({ agent_id: solo, squad_id: null });
  });

  it('over the daily cap the fallback squad answers (the overflow line), started on its entry agent', async () => {
    const c = await tp.createOrg('c');
    const main = await agent(c.key, 'Main');
    const overflowFront = await agent(c.key, 'Overflow front');
    const overflowBilling = await agent(c.key, 'Overflow billing');
    const overflow = await squad(c.key, 'Overflow', [overflowFront, overflowBilling]);
    const n = (await buy({ agent_id: main, area_code: '415', inbound_routing: { fallback: { squad_id: overflow } } }, c.key)).body;
    await tp.sql`update orgs set max_calls_per_day = 0 where id = ${c.orgId}`;
    const res = await open(n, 'sq-cap');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [call] = await tp.sql`select agent_id, squad_id, metadata from calls where id = ${res.body.call_id}`;
    expect(call).toMatchObject({ agent_id: overflowFront, squad_id: overflow, metadata: { routed_via: 'fallback' } });
    expect(res.body.config.squad.members.map((m: { agent: { id: string } }) => m.agent.id)).toEqual([overflowBilling]);
  });
});
