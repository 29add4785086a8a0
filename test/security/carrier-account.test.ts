// The carrier's ranges are shared by every customer of the carrier (issue 50, item 9): any Twilio account can
// <Dial><Sip> to the platform's SIP host from Twilio's own addresses, which the number's inbound trunk allows.
// So the trunk maps the carrier's account header to the participant attribute `vap.carrier_account`, and the
// control plane opens a call only when it names the platform's own account. A stranger on the carrier's
// address (the number's own trunk, rule and room: everything the bridge checks) with another account, or none,
// is refused with 404 `carrier_account_mismatch` and leaves no call. A real control plane and LiveKit server.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { useStack } from '../support/stack.ts';
import { inboundAccountCheck } from '../../control-plane/src/modules/phone-numbers/carriers/account.ts';
import { upgradeAccountHeaders } from '../../control-plane/src/modules/phone-numbers/wiring.ts';
import { inboundLeg, type WiredNumber as Wired } from '../support/inbound-leg.ts';

const stack = await useStack({});
let tp: TestPlatform;
const WORKER = { authorization: 'Bearer test-worker-token-0123456789abcdef0123' };
const ACCOUNT = 'AC0123456789abcdef0123456789abcdef';
let mine: Wired;

const open = (body: Record<string, unknown>) => tp.request('post', '/internal/v1/calls/inbound', { key: null, headers: WORKER, body });
const leg = (n: Wired, room: string, account?: string | null) => ({
  ...inboundLeg(n, room),
  ...(account !== undefined ? { carrier_account: account } : {}),
});

beforeAll(async () => {
  tp = await usePlatform({
    LIVEKIT_URL: stack.livekitHttpUrl,
    LIVEKIT_API_KEY: stack.apiKey,
    LIVEKIT_API_SECRET: stack.apiSecret,
    CARRIER_ACCOUNT_HEADER: 'X-Carrier-Account',
    CARRIER_ACCOUNT_VALUE: ACCOUNT,
  } as never);
  const { key } = await tp.createOrg('carrier account');
  const model = await tp.request('post', '/v1/models', { key, body: { name: 'm', model: 'gpt-4o-mini' } });
  const agent = await tp.request('post', '/v1/agents', { key, body: { name: 'a', llm_id: model.body.id } });
  const res = await tp.request('post', '/v1/phone-numbers', { key, body: { agent_id: agent.body.id, area_code: '415' } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  mine = res.body as Wired;
}, 120_000);

describe('the carrier account on each INVITE', () => {
  it("Twilio's account header by default; the operator's header for another carrier; none when neither applies", () => {
    expect(inboundAccountCheck({ CARRIER: 'twilio', TWILIO_ACCOUNT_SID: ACCOUNT } as never)).toEqual({ header: 'X-Twilio-AccountSid', value: ACCOUNT });
    expect(inboundAccountCheck({ CARRIER: 'telnyx', CARRIER_ACCOUNT_HEADER: 'X-Telnyx-Connection-Id', CARRIER_ACCOUNT_VALUE: '123' } as never)).toEqual({
      header: 'X-Telnyx-Connection-Id',
      value: '123',
    });
    expect(inboundAccountCheck({ CARRIER: 'simulated' } as never)).toBeNull();
  });

  it("the number's inbound trunk maps the account header to the participant's attribute", async () => {
    const trunks = await tp.platform.services.livekit.sip.listSipInboundTrunk();
    const trunk = trunks.find((t) => t.sipTrunkId === mine.inbound_trunk_id);
    expect(trunk?.headersToAttributes).toEqual({ 'X-Carrier-Account': 'vap.carrier_account' });
  });

  for (const [what, account] of [
    ['no account header (a stranger on the carrier\'s address)', undefined],
    ['an empty one', null],
    ["another customer's account of the same carrier", 'AC99999999999999999999999999999999'],
    ['the account with something after it', `${ACCOUNT}x`],
  ] as const) {
    it(`${what}: 404 carrier_account_mismatch, no call`, async () => {
      const b = leg(mine, `x${Math.random().toString(36).slice(2, 8)}`, account);
      const res = await open(b);
      expect(res.status, JSON.stringify(res.body)).toBe(404);
      expect(res.body.reason).toBe('carrier_account_mismatch');
      expect(await tp.sql`select id from calls where room_name = ${b.room_name}`).toEqual([]);
    });
  }

  it("the platform's own account opens the call", async () => {
    const ok = await open(leg(mine, 'real', ACCOUNT));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const [call] = await tp.sql`select to_number, status from calls where id = ${ok.body.call_id}`;
    expect(call).toMatchObject({ to_number: mine.phone_number, status: 'initiated' });
  });

  it('trunks made before the check get the mapping at the next repair', async () => {
    const { sip } = tp.platform.services.livekit;
    const trunk = (await sip.listSipInboundTrunk()).find((t) => t.sipTrunkId === mine.inbound_trunk_id)!;
    trunk.headersToAttributes = {};
    await sip.updateSipInboundTrunk(trunk.sipTrunkId, trunk);
    expect(await upgradeAccountHeaders(tp.platform.services, new Set([mine.id]))).toBe(1);
    const after = (await sip.listSipInboundTrunk()).find((t) => t.sipTrunkId === mine.inbound_trunk_id)!;
    expect(after.headersToAttributes).toEqual({ 'X-Carrier-Account': 'vap.carrier_account' });
    expect(await upgradeAccountHeaders(tp.platform.services, new Set([mine.id]))).toBe(0);
  });
});
