// The inbound do_not_call tool listed the caller ID, which any caller can set (issue 50, low): a stranger
// spoofing a customer's number could take that customer off every campaign, and a run of spoofed calls could
// fill the list. Now an inbound caller's request is told apart (source `agent_unverified`: honoured, shown
// for review) and bounded per day (DNC_UNVERIFIED_PER_DAY); an outbound callee's request is as before.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;

async function call(type: 'inbound' | 'outbound', other: string): Promise<string> {
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, direction, status, started_at, to_number, from_number, room_name)
    values (${org.orgId}, ${agentId}, ${type}, ${type}, 'in_progress', now(),
            ${type === 'inbound' ? '+14155550190' : other}, ${type === 'inbound' ? other : '+14155550190'}, 'room-' || gen_random_uuid())
    returning id`;
  return row!.id as string;
}
const ask = (callId: string) =>
  tp.request('post', `/internal/v1/calls/${callId}/do-not-call`, { key: WORKER, headers: { 'x-call-capability': tp.capability(callId) }, body: { reason: 'stop calling me' } });

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: false, DNC_UNVERIFIED_PER_DAY: 3 } as never);
  org = await tp.createOrg('dnc caller id');
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'gpt-4o-mini' } });
  agentId = (await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'a', llm_id: model.body.id } })).body.id;
});

describe("an inbound caller's do-not-call request", () => {
  it('is listed as agent_unverified (the caller ID is the caller\'s to set); an outbound callee\'s as agent', async () => {
    expect((await ask(await call('inbound', '+15550100301'))).status).toBe(200);
    expect((await ask(await call('outbound', '+15550100302'))).status).toBe(200);
    const list = (await tp.request('get', '/v1/do-not-call', { key: org.key })).body.items as { phone_number: string; source: string }[];
    expect(Object.fromEntries(list.map((e) => [e.phone_number, e.source]))).toEqual({ '+15550100301': 'agent_unverified', '+15550100302': 'agent' });
  });

  it('spoofed calls cannot fill the list: past DNC_UNVERIFIED_PER_DAY a day, refused and nothing listed', async () => {
    // One listed above; two more reach the limit of 3.
    expect((await ask(await call('inbound', '+15550100303'))).status).toBe(200);
    expect((await ask(await call('inbound', '+15550100304'))).status).toBe(200);
    const refused = await ask(await call('inbound', '+15550100305'));
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ reason: 'dnc_unverified_per_day', limit_value: 3 });
    expect(await tp.sql`select 1 from do_not_call where phone_number = '+15550100305'`).toHaveLength(0);
    // An outbound callee's request is not bounded by it.
    expect((await ask(await call('outbound', '+15550100306'))).status).toBe(200);
  });
});
