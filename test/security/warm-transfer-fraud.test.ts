// Toll fraud through a warm transfer: the control plane dials the second leg itself, so it must apply the
// destination policy itself, whatever the worker checked (a compromised or outdated worker holding a call's
// capability asks the route directly). Refused destinations never reach the SIP bridge: the transfer is
// recorded `refused` with the policy's reason and the agent gets a sentence to say.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const FROM = '+14155550143';
const PREMIUM_UK = '+449098790000';
const PREMIUM_US = '+19005551234';
const SATELLITE_IRIDIUM = '+881612345678';
const FIXED_UK = '+442071234567';

let tp: TestPlatform;
let org: { orgId: string; key: string };
let callId: string;

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: false } as never);
  org = await tp.createOrg('warm fraud');
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'llama3', base_url: 'http://127.0.0.1:9' } });
  const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Ava', llm_id: model.body.id } });
  await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
               values (${org.orgId}, ${FROM}, 'simulated', ${agent.body.id}, 'ST_fraud')`;
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, direction, status, started_at, to_number, from_number, room_name)
    values (${org.orgId}, ${agent.body.id}, 'inbound', 'inbound', 'in_progress', now(), ${FROM}, '+15550100199', 'room-fraud')
    returning id`;
  callId = row!.id as string;
});

const ask = (destination: string) =>
  tp.request('post', `/internal/v1/calls/${callId}/transfers`, {
    key: WORKER,
    headers: { 'x-call-capability': tp.capability(callId) },
    body: { destination, mode: 'warm' },
  });

describe('warm transfer: the control plane applies the destination policy to the second leg', () => {
  it('refuses premium-rate, satellite and foreign numbers asked for directly, and records the refusal', async () => {
    for (const [to, reason] of [
      [PREMIUM_UK, 'number_type'],
      [PREMIUM_US, 'number_type'],
      [SATELLITE_IRIDIUM, 'number_type'],
      [FIXED_UK, 'country'],
    ] as const) {
      const res = await ask(to);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'refused', participant_identity: null });
      expect(res.body.message).toEqual(expect.any(String));
      const [row] = await tp.sql`select status, reason, participant_identity, answered_at from call_transfers where id = ${res.body.transfer_id}`;
      // Never dialled: no SIP participant was named, nothing answered.
      expect(row).toMatchObject({ status: 'refused', reason, participant_identity: null, answered_at: null });
    }
  });

  it('refuses a sip: URI (a warm transfer dials phone numbers on the trunk, never an arbitrary SIP host)', async () => {
    const res = await ask('sip:+449098790000@sip.attacker.example');
    expect(res.body).toMatchObject({ status: 'refused', transfer_id: null });
  });

  it("the refusals show on the call's record, and the call goes on", async () => {
    const call = (await tp.request('get', `/v1/calls/${callId}`, { key: org.key })).body;
    expect(call.status).toBe('in_progress');
    expect(call.transfers.map((t: { status: string }) => t.status)).toEqual(['refused', 'refused', 'refused', 'refused']);
    expect(call.transfers.every((t: { duration_seconds: unknown }) => t.duration_seconds === null)).toBe(true);
  });
});
