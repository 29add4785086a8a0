// The worker's inbound-open request is checked against the dialled number: only a call that came in through
// the number's own inbound trunk (the carrier's addresses and credentials) and was put in a room by the
// number's own dispatch rule opens a call. Forged requests (a stranger's INVITE in another room, another
// number's trunk or rule, a room the number's rule never names, the catch-all's empty ids) are refused with
// 404 `route_mismatch` and leave no call row, no event and no charge. A real control plane and LiveKit server;
// the SIP path itself is test/e2e/security-sip.test.ts.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { useStack } from '../support/stack.ts';
import { inboundLeg, type WiredNumber as Wired } from '../support/inbound-leg.ts';

const stack = await useStack({});
let tp: TestPlatform;
const WORKER = { authorization: 'Bearer test-worker-token-0123456789abcdef0123' };
let mine: Wired;
let theirs: Wired;

async function buy(key: string, areaCode: string): Promise<Wired> {
  const model = await tp.request('post', '/v1/models', { key, body: { name: `m-${areaCode}`, model: 'gpt-4o-mini' } });
  const agent = await tp.request('post', '/v1/agents', { key, body: { name: `a-${areaCode}`, llm_id: model.body.id } });
  const res = await tp.request('post', '/v1/phone-numbers', { key, body: { agent_id: agent.body.id, area_code: areaCode } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Wired;
}

const open = (body: Record<string, unknown>) => tp.request('post', '/internal/v1/calls/inbound', { key: null, headers: WORKER, body });
const legit = inboundLeg;

beforeAll(async () => {
  tp = await usePlatform({ LIVEKIT_URL: stack.livekitHttpUrl, LIVEKIT_API_KEY: stack.apiKey, LIVEKIT_API_SECRET: stack.apiSecret });
  mine = await buy((await tp.createOrg('victim')).key, '415');
  theirs = await buy((await tp.createOrg('other')).key, '212');
}, 120_000);

describe('forged inbound-open requests', () => {
  const forgeries: [string, () => Record<string, unknown>][] = [
    // What a stranger's INVITE to the number produced before: a catch-all room, no trunk matched.
    ['a catch-all room with no trunk', () => ({ ...legit(mine, 'f1'), room_name: 'unrouted-_+15550100111_abc', trunk_id: '', dispatch_rule_id: '' })],
    ['another number\'s trunk and rule', () => ({ ...legit(mine, 'f2'), trunk_id: theirs.inbound_trunk_id, dispatch_rule_id: theirs.dispatch_rule_id })],
    ['the number\'s trunk with another number\'s rule', () => ({ ...legit(mine, 'f3'), dispatch_rule_id: theirs.dispatch_rule_id })],
    ['the number\'s rule with another trunk', () => ({ ...legit(mine, 'f4'), trunk_id: 'ST_forged' })],
    ['another number\'s room', () => ({ ...legit(mine, 'f5'), room_name: `pn-${theirs.id}_+15550100111_f5` })],
    ['a room the rule never names', () => ({ ...legit(mine, 'f6'), room_name: 'pn-_+15550100111_f6' })],
    ['another number\'s whole route, dialling this one', () => ({ ...legit(theirs, 'f7'), to_number: mine.phone_number })],
  ];

  for (const [what, body] of forgeries) {
    it(`${what}: 404 route_mismatch, no call`, async () => {
      const b = body();
      const res = await open(b);
      expect(res.status, JSON.stringify(res.body)).toBe(404);
      expect(res.body.reason).toBe('route_mismatch');
      expect(res.body.call_id).toBeUndefined();
      expect(await tp.sql`select id from calls where room_name = ${b.room_name as string} or carrier_call_sid = ${b.sip_call_id as string}`).toEqual([]);
    });
  }

  it('a request that omits the trunk and rule is a 422, and no call', async () => {
    const { trunk_id: _t, dispatch_rule_id: _r, ...rest } = legit(mine, 'f8');
    const res = await open(rest);
    expect(res.status).toBe(422);
    expect(await tp.sql`select id from calls where carrier_call_sid = 'cid-f8'`).toEqual([]);
  });

  it('the forged requests left no call, event or usage anywhere; the number\'s own route opens its call', async () => {
    expect(await tp.sql`select id from calls`).toEqual([]);
    expect(await tp.sql`select id from events where type like 'call.%'`).toEqual([]);
    const ok = await open(legit(mine, 'real'));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const [call] = await tp.sql`select to_number, status from calls where id = ${ok.body.call_id}`;
    expect(call).toMatchObject({ to_number: mine.phone_number, status: 'initiated' });
  });
});
