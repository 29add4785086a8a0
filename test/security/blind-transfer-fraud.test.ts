// Toll fraud through a blind transfer (issue 50, item 3). The worker used to send the REFER itself, so nothing
// recorded, priced or capped it: an agent talked into transferring, or a worker asking directly, reached any
// number the worker's check let through, without bound. Now the worker asks the control plane, which applies
// the destination policy and the daily spend cap, records the transfer (mode `blind`), sends the REFER and
// prices it (the rate times BLIND_TRANSFER_RESERVED_MINUTES, counted in the day's spend).
import { beforeAll, describe, expect, it } from 'vitest';
import type { RemoteParticipant, Room } from '@livekit/rtc-node';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { InternalApiClient } from '../../shared/internal-api.ts';
import { roomActions } from '../../media-worker/src/call/room-actions.ts';
import { TransferNotPlaced } from '../../media-worker/src/session/tools.ts';
import { markReferred, insertTransfer } from '../../control-plane/src/modules/calls/transfers/queries.ts';
import { spendTodayCents } from '../../control-plane/src/modules/calls/queries-admission.ts';
import { createLogger } from '../../shared/logger.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const FROM = '+14155550147';
const PREMIUM_US = '+19005551234';
const SATELLITE_IRIDIUM = '+881612345678';
const FIXED_UK = '+442071234567';

let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;

async function liveCall(orgId = org.orgId, agent = agentId, from = FROM): Promise<string> {
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, direction, status, started_at, to_number, from_number, room_name)
    values (${orgId}, ${agent}, 'inbound', 'inbound', 'in_progress', now(), ${from}, '+15550100199', 'room-' || gen_random_uuid())
    returning id`;
  return row!.id as string;
}

const ask = (callId: string, destination: string) =>
  tp.request('post', `/internal/v1/calls/${callId}/transfers`, {
    key: WORKER,
    headers: { 'x-call-capability': tp.capability(callId) },
    body: { destination, mode: 'blind' },
  });

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: false, BLIND_TRANSFER_RESERVED_MINUTES: 30 } as never);
  org = await tp.createOrg('blind fraud');
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'llama3', base_url: 'http://127.0.0.1:9' } });
  const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Ava', llm_id: model.body.id } });
  agentId = agent.body.id;
  await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
               values (${org.orgId}, ${FROM}, 'simulated', ${agentId}, 'ST_blind')`;
});

describe('blind transfer: the control plane decides, records and prices', () => {
  it('refuses premium-rate, satellite, foreign numbers and a sip: URI hiding one, asked for directly; each refusal recorded', async () => {
    await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings: { destination_policy: { allowed_sip_hosts: ['pbx.example.com'] } } } });
    const id = await liveCall();
    for (const [to, reason] of [
      [PREMIUM_US, 'number_type'],
      [SATELLITE_IRIDIUM, 'number_type'],
      [FIXED_UK, 'country'],
      ['sip:+19005551234@pbx.example.com;user=phone', 'sip_uri'],
      ['sip:desk@pbx.example.com;maddr=203.0.113.9', 'sip_uri'],
    ] as const) {
      const res = await ask(id, to);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'refused', participant_identity: null, message: expect.any(String) });
      const [row] = await tp.sql`select mode, status, reason, answered_at, cost_cents from call_transfers where id = ${res.body.transfer_id}`;
      expect(row).toMatchObject({ mode: 'blind', status: 'refused', reason, answered_at: null, cost_cents: null });
    }
    const call = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
    expect(call.transfers.map((t: { mode: string; status: string }) => [t.mode, t.status])).toEqual(Array(5).fill(['blind', 'refused']));
  });

  it('an allowed destination is recorded; a REFER that cannot be sent leaves it failed, unpriced', async () => {
    const id = await liveCall();
    // LiveKit is not running here: no SIP participant can be found, so nothing is referred.
    const res = await ask(id, '+15550100777');
    expect(res.body).toMatchObject({ status: 'failed', transfer_id: expect.any(String) });
    const [row] = await tp.sql`select mode, status, rate_cents_per_minute::float8 as rate, cost_cents from call_transfers where id = ${res.body.transfer_id}`;
    expect(row).toMatchObject({ mode: 'blind', status: 'failed', cost_cents: null });
    expect(row!.rate).toBeGreaterThan(0);
  });

  it("a referred transfer is priced as the reserved minutes and counts in the day's spend; past the cap the next one is refused", async () => {
    const capped = await tp.createOrg('blind capped');
    const model = await tp.request('post', '/v1/models', { key: capped.key, body: { name: 'm', model: 'llama3', base_url: 'http://127.0.0.1:9' } });
    const a = (await tp.request('post', '/v1/agents', { key: capped.key, body: { name: 'Bo', llm_id: model.body.id } })).body;
    await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
                 values (${capped.orgId}, '+14155550148', 'simulated', ${a.id}, 'ST_blind_capped')`;
    await tp.sql`update orgs set daily_spend_cap_cents = 100 where id = ${capped.orgId}`;
    const first = await liveCall(capped.orgId, a.id, '+14155550148');
    // As the route leaves a transfer whose REFER the bridge accepted (the REFER itself: test/e2e/inbound-call.test.ts).
    const t = await insertTransfer(tp.sql, { callId: first, orgId: capped.orgId, mode: 'blind', destination: '+15550100777', status: 'ringing', reason: null, rateCentsPerMinute: 4 });
    const referred = await markReferred(tp.sql, t.id, 30);
    expect(referred).toMatchObject({ status: 'ended', cost_cents: 120 });
    expect(await spendTodayCents(tp.sql, capped.orgId)).toBe(120);
    const res = await ask(await liveCall(capped.orgId, a.id, '+14155550148'), '+15550100778');
    expect(res.body).toMatchObject({ status: 'refused', transfer_id: null, message: "the organisation's daily spending limit is reached" });
    expect(await tp.sql`select 1 from call_transfers where destination = '+15550100778'`).toHaveLength(0);
  });

  it("the worker's transfer action asks the control plane (no REFER of its own): a refusal comes back as words to say", async () => {
    const id = await liveCall();
    const api = new InternalApiClient({ baseUrl: tp.url, token: WORKER });
    api.setCapability(id, tp.capability(id));
    const actions = roomActions({
      callId: id,
      callType: 'inbound',
      room: () => ({ name: 'room-x', remoteParticipants: new Map() }) as unknown as Room,
      participant: { identity: 'sip_caller' } as RemoteParticipant,
      session: () => { throw new Error('not used'); },
      model: undefined as never,
      logger: createLogger('test', 'silent'),
      // Credentials that would fail any direct call to LiveKit: the action must not need them.
      deps: { api, metrics: undefined as never, livekit: { url: 'http://127.0.0.1:9', key: 'none', secret: 'none' } as never },
    });
    const err = await actions.transfer!(PREMIUM_US).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(TransferNotPlaced);
    expect((err as Error).message).toContain('premium-rate numbers');
    const [row] = await tp.sql`select mode, status from call_transfers where call_id = ${id}`;
    expect(row).toMatchObject({ mode: 'blind', status: 'refused' });
  });
});
