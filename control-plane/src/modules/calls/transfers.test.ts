// Warm transfers on the control plane (transfers.ts), against the real database and routes: the tool's `mode`,
// the session config, the worker's transfer route (refusals the agent can say; a dial LiveKit cannot place),
// the joined call that outlives its agent (the worker's `ended` report is held; a leg's departure ends the call
// with both legs' minutes), the call's record and the usage.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { endJoinedCall, reapJoined } from './transfers.ts';
import { getCallById } from './queries.ts';
import { spendTodayCents } from './queries-admission.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const NUMBER = '+14155550188';
const NO_LATENCY = Object.fromEntries(['llm_ttft', 'tts_ttfb', 'eou_delay', 'e2e'].map((k) => [k, { avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 }]));
const USAGE = { stt_seconds: 1, llm_prompt_tokens: 1, llm_completion_tokens: 1, tts_characters: 1 };
const MESSAGES = [
  { role: 'agent', content: 'Acme Dental, how can I help?' },
  { role: 'user', content: 'I would like to talk to a person.' },
];

let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;

const worker = (id: string) => ({ key: WORKER, headers: { 'x-call-capability': tp.capability(id) } });
const transfer = (id: string, destination: string) => tp.request('post', `/internal/v1/calls/${id}/transfers`, { ...worker(id), body: { destination, mode: 'warm' } });
const update = (id: string, tid: string, state: string) => tp.request('post', `/internal/v1/calls/${id}/transfers/${tid}`, { ...worker(id), body: { state } });
const getCall = async (id: string) => (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;

async function liveCall(type: 'inbound' | 'web' = 'inbound', startedSecondsAgo = 90): Promise<string> {
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, direction, status, started_at, to_number, from_number, room_name)
    values (${org.orgId}, ${agentId}, ${type}, ${type === 'web' ? null : 'inbound'}, 'in_progress', now() - make_interval(secs => ${startedSecondsAgo}),
            ${type === 'web' ? null : NUMBER}, ${type === 'web' ? null : '+15550100199'}, 'room-' || gen_random_uuid())
    returning id`;
  return row!.id as string;
}

/** A transfer answered `answeredSecondsAgo` ago, as the route leaves one after LiveKit said the person answered. */
async function answeredTransfer(callId: string, answeredSecondsAgo: number, rateCentsPerMinute: number | null = null): Promise<string> {
  const [row] = await tp.sql`
    insert into call_transfers (call_id, org_id, mode, destination, status, participant_identity, started_at, answered_at, rate_cents_per_minute)
    values (${callId}, ${org.orgId}, 'warm', '+15550000003', 'answered', 'transfer-x', now() - make_interval(secs => ${answeredSecondsAgo + 5}),
            now() - make_interval(secs => ${answeredSecondsAgo}), ${rateCentsPerMinute})
    returning id`;
  return row!.id as string;
}

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: false, ANALYSIS_MODE: 'off' } as never);
  org = await tp.createOrg('transfers');
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'llama3', base_url: 'http://127.0.0.1:9' } });
  const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Ava', llm_id: model.body.id } });
  agentId = agent.body.id;
  await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
               values (${org.orgId}, ${NUMBER}, 'simulated', ${agentId}, 'ST_transfers')`;
});

describe('transfer_call tools: mode', () => {
  it('is blind by default, warm on request, and a warm transfer dials phone numbers only (422)', async () => {
    const blind = await tp.request('post', '/v1/tools', { key: org.key, body: { type: 'transfer_call', destination: '+15550000003' } });
    expect(blind.body).toMatchObject({ mode: 'blind' });
    const warm = await tp.request('post', '/v1/tools', { key: org.key, body: { type: 'transfer_call', name: 'warm', destination: '+15550000003', mode: 'warm' } });
    expect(warm.status).toBe(201);
    expect(warm.body).toMatchObject({ mode: 'warm', destination: '+15550000003' });
    const sip = await tp.request('post', '/v1/tools', { key: org.key, body: { type: 'transfer_call', destination: 'sip:desk@pbx.example.com', mode: 'warm' } });
    expect(sip.status).toBe(422);
    expect(sip.body.detail[0]).toMatchObject({ loc: ['body', 'destination'], type: 'value_error' });
    // An update that would leave a warm tool with a SIP destination, either way round.
    expect((await tp.request('patch', `/v1/tools/${warm.body.id}`, { key: org.key, body: { destination: 'sip:desk@pbx.example.com' } })).status).toBe(422);
    const blindSip = await tp.request('post', '/v1/tools', { key: org.key, body: { type: 'transfer_call', destination: 'sip:desk@pbx.example.com' } });
    const toWarm = await tp.request('patch', `/v1/tools/${blindSip.body.id}`, { key: org.key, body: { mode: 'warm' } });
    expect(toWarm.status).toBe(422);
    expect(toWarm.body.detail[0].loc).toEqual(['body', 'mode']);
    expect((await tp.request('post', '/v1/tools', { key: org.key, body: { type: 'end_call', mode: 'warm' } })).status).toBe(422);
    expect((await tp.request('get', '/v1/tools?type=end_call', { key: org.key })).body.items.every((t: { mode: unknown }) => t.mode === null)).toBe(true);

    // The session config carries it to the worker.
    const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'with tools', model: 'llama3', base_url: 'http://127.0.0.1:9', tool_ids: [blind.body.id, warm.body.id] } });
    const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Tools', llm_id: model.body.id } });
    const [row] = await tp.sql`insert into calls (org_id, agent_id, type, status) values (${org.orgId}, ${agent.body.id}, 'web', 'initiated') returning id`;
    const config = await tp.request('get', `/internal/v1/calls/${row!.id}/config`, worker(row!.id as string));
    expect(config.status).toBe(200);
    const tools = config.body.tools.filter((t: { type: string }) => t.type === 'transfer_call');
    expect(tools).toEqual([
      expect.not.objectContaining({ mode: expect.anything() }),
      expect.objectContaining({ name: 'warm', destination: '+15550000003', mode: 'warm' }),
    ]);
  });
});

describe('POST /internal/v1/calls/{id}/transfers', () => {
  it('answers with what the agent can say when the transfer cannot be placed, and records it', async () => {
    const id = await liveCall();
    // LiveKit is not running here: the dial itself fails, and the call goes on.
    const failed = await transfer(id, '+15550000003');
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ status: 'failed', participant_identity: null, message: expect.any(String) });
    expect(failed.body.transfer_id).toEqual(expect.any(String));
    const call = await getCall(id);
    expect(call.status).toBe('in_progress');
    expect(call.transfers).toEqual([
      expect.objectContaining({ id: failed.body.transfer_id, mode: 'warm', destination: '+15550000003', status: 'failed', answered_at: null, duration_seconds: null }),
    ]);
  });

  it('a web call has no line to transfer; a call that is not live is a 409; another org cannot reach it', async () => {
    const web = await liveCall('web');
    expect((await transfer(web, '+15550000003')).body).toMatchObject({ status: 'refused', transfer_id: null });
    const done = await liveCall();
    await tp.sql`update calls set status = 'completed', ended_at = now() where id = ${done}`;
    expect((await transfer(done, '+15550000003')).status).toBe(409);
    // The capability is the call's own: another call's does not open this one.
    const other = await liveCall();
    const stolen = await tp.request('post', `/internal/v1/calls/${other}/transfers`, { ...worker(done), body: { destination: '+15550000003', mode: 'warm' } });
    expect(stolen.status).toBeGreaterThanOrEqual(401);
    expect(stolen.status).toBeLessThan(500);
  });

  it('one transfer in flight per call', async () => {
    const id = await liveCall();
    await answeredTransfer(id, 5);
    expect((await transfer(id, '+15550000003')).body).toMatchObject({ status: 'refused', message: 'a transfer is already under way' });
  });
});

describe('a joined call', () => {
  it("outlives its agent: the worker's ended report is held, a leg's departure ends the call with both legs' minutes", async () => {
    const before = (await tp.request('get', '/v1/usage', { key: org.key })).body.minutes_used_this_month as number;
    const id = await liveCall('inbound', 120);
    const tid = await answeredTransfer(id, 60);
    const joined = await update(id, tid, 'joined');
    expect(joined.status).toBe(200);
    expect(joined.body).toMatchObject({ status: 'joined', joined_at: expect.any(String) });
    // Joining twice is the same join (a retried report).
    expect((await update(id, tid, 'joined')).body.status).toBe('joined');

    // The agent leaves: its report does not end the call.
    const ended = await tp.request('post', `/internal/v1/calls/${id}/ended`, {
      ...worker(id),
      body: { seq: 1, end_reason: 'transferred', ended_at: new Date().toISOString(), duration_seconds: 60, messages: MESSAGES, usage: USAGE, latency: NO_LATENCY },
    });
    expect(ended.status).toBe(200);
    expect((await getCallById(tp.sql, id))!.status).toBe('in_progress');
    // Nor does the reaper, which finds no worker: the legs hold the call (LiveKit is unreachable here, so it waits).
    expect(await reapJoined(tp.platform.services, (await getCallById(tp.sql, id))!)).toBe('alive');

    // A leg hangs up.
    expect(await endJoinedCall(tp.platform.services, id, 'test')).toBe(true);
    expect(await endJoinedCall(tp.platform.services, id, 'again')).toBe(false);
    const call = await getCall(id);
    expect(call).toMatchObject({ status: 'completed', end_reason: 'transferred' });
    expect(call.duration_seconds).toBeGreaterThanOrEqual(120);
    expect(call.messages).toEqual(MESSAGES.map((m) => expect.objectContaining(m)));
    const [t] = call.transfers;
    expect(t).toMatchObject({ id: tid, status: 'ended', answered_at: expect.any(String), joined_at: expect.any(String), ended_at: expect.any(String) });
    expect(t.duration_seconds).toBeGreaterThanOrEqual(60);
    expect(t.duration_seconds).toBeLessThan(call.duration_seconds);
    expect(t.credits_used).toBeCloseTo(t.duration_seconds / 60, 5);
    // Both legs are billed.
    const after = (await tp.request('get', '/v1/usage', { key: org.key })).body.minutes_used_this_month as number;
    expect(after - before).toBeCloseTo((call.duration_seconds + t.duration_seconds) / 60, 1);
    // The list shows the same transfers as the call.
    const list = await tp.request('get', '/v1/calls?limit=100', { key: org.key });
    expect(list.body.items.find((c: { id: string }) => c.id === id).transfers).toEqual(call.transfers);
  });

  it("is still bounded by max_duration without its agent: the reaper ends it (end_reason max_duration) with both legs' minutes", async () => {
    // The agent's default bound is 1800 s; a call's override narrows it.
    const id = await liveCall('inbound', 100);
    await tp.sql`update calls set overrides = ${tp.sql.json({ max_duration_seconds: 60 })} where id = ${id}`;
    const within = await liveCall('inbound', 100);
    for (const c of [id, within]) await update(c, await answeredTransfer(c, 50), 'joined');
    // Within its bound, the legs hold the call (LiveKit is unreachable here, so the reaper keeps it).
    expect(await reapJoined(tp.platform.services, (await getCallById(tp.sql, within))!)).toBe('alive');
    expect(await reapJoined(tp.platform.services, (await getCallById(tp.sql, id))!)).toBe('reaped');
    const call = await getCall(id);
    expect(call).toMatchObject({ status: 'completed', end_reason: 'max_duration' });
    expect(call.transfers[0]).toMatchObject({ status: 'ended', ended_at: expect.any(String) });
    expect(call.transfers[0].duration_seconds).toBeGreaterThanOrEqual(50);
    expect((await getCall(within)).status).toBe('in_progress');
  });

  it('a leg that ends before the worker reported: the call ends now and takes the report when it comes', async () => {
    const id = await liveCall('inbound', 30);
    const tid = await answeredTransfer(id, 10);
    await update(id, tid, 'joined');
    expect(await endJoinedCall(tp.platform.services, id, 'test')).toBe(true);
    expect((await getCall(id)).status).toBe('completed');
    const late = await tp.request('post', `/internal/v1/calls/${id}/ended`, {
      ...worker(id),
      body: { seq: 1, end_reason: 'transferred', ended_at: new Date().toISOString(), duration_seconds: 20, messages: MESSAGES, usage: USAGE, latency: NO_LATENCY },
    });
    expect(late.status).toBe(200);
    const call = await getCall(id);
    expect(call.end_reason).toBe('transferred');
    expect(call.messages).toEqual(MESSAGES.map((m) => expect.objectContaining(m)));
  });

  it('an answered leg let go (abandoned) ends with its minutes; joining it afterwards is a 409', async () => {
    const id = await liveCall();
    const tid = await answeredTransfer(id, 20);
    const gone = await update(id, tid, 'abandoned');
    expect(gone.body).toMatchObject({ status: 'ended' });
    expect(gone.body.duration_seconds).toBeGreaterThanOrEqual(20);
    expect((await update(id, tid, 'joined')).status).toBe(409);
    expect((await update(id, '00000000-0000-4000-8000-000000000000', 'joined')).status).toBe(404);
  });
});

describe("the second leg's cost", () => {
  it("is priced at its rate times its billed minutes, and counts in the month's cost and the day's spend", async () => {
    const usageBefore = (await tp.request('get', '/v1/usage', { key: org.key })).body.cost_cents_this_month as number;
    const id = await liveCall('inbound', 100);
    const tid = await answeredTransfer(id, 61, 2.5);
    // While it lasts, the day's spend counts the minutes begun (2 x 2.5 cents).
    const spendBefore = await spendTodayCents(tp.sql, org.orgId);
    await update(id, tid, 'joined');
    expect(await endJoinedCall(tp.platform.services, id, 'test')).toBe(true);
    const [t] = (await getCall(id)).transfers;
    expect(t.duration_seconds).toBeGreaterThanOrEqual(61);
    // 2 billed minutes (61 s and a little more, rounded up) at 2.5 cents.
    expect(t.cost_cents).toBe(5);
    expect((await tp.request('get', '/v1/usage', { key: org.key })).body.cost_cents_this_month - usageBefore).toBe(5);
    expect(spendBefore).toBeGreaterThanOrEqual(5);
    expect(await spendTodayCents(tp.sql, org.orgId)).toBe(spendBefore);
  });

  it("is refused once the day's spend has reached the org's cap, before anything is dialled", async () => {
    const capped = await tp.createOrg('transfers-capped');
    await tp.sql`update orgs set daily_spend_cap_cents = 3 where id = ${capped.orgId}`;
    const model = await tp.request('post', '/v1/models', { key: capped.key, body: { name: 'm', model: 'llama3', base_url: 'http://127.0.0.1:9' } });
    const a = (await tp.request('post', '/v1/agents', { key: capped.key, body: { name: 'Bo', llm_id: model.body.id } })).body;
    await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
                 values (${capped.orgId}, '+14155550189', 'simulated', ${a.id}, 'ST_capped')`;
    const insertCall = async () => {
      const [row] = await tp.sql`
        insert into calls (org_id, agent_id, type, direction, status, started_at, to_number, from_number, room_name)
        values (${capped.orgId}, ${a.id}, 'inbound', 'inbound', 'in_progress', now() - make_interval(secs => 200), '+14155550189', '+15550100199', 'room-' || gen_random_uuid())
        returning id`;
      return row!.id as string;
    };
    // A leg of another call has been talking for 90 s at 2 cents a minute: 4 cents, over the cap of 3.
    const busy = await insertCall();
    await tp.sql`insert into call_transfers (call_id, org_id, mode, destination, status, participant_identity, started_at, answered_at, joined_at, rate_cents_per_minute)
                 values (${busy}, ${capped.orgId}, 'warm', '+15550000003', 'joined', 'transfer-y', now() - interval '95 seconds', now() - interval '90 seconds', now() - interval '80 seconds', 2)`;
    const id = await insertCall();
    const res = await transfer(id, '+15550000004');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'refused', transfer_id: null, message: "the organisation's daily spending limit is reached" });
    expect(await tp.sql`select 1 from call_transfers where call_id = ${id}`).toHaveLength(0);
  });
});

describe('a stop', () => {
  it('ends a joined transfer with the call, with its minutes', async () => {
    const id = await liveCall('inbound', 40);
    const tid = await answeredTransfer(id, 15);
    await update(id, tid, 'joined');
    const stopped = await tp.request('post', `/v1/calls/${id}/stop`, { key: org.key });
    expect(stopped.status).toBe(200);
    expect(stopped.body.status).toBe('completed');
    expect(stopped.body.transfers).toEqual([expect.objectContaining({ id: tid, status: 'ended', ended_at: expect.any(String) })]);
    expect(stopped.body.transfers[0].duration_seconds).toBeGreaterThanOrEqual(15);
  });
});
