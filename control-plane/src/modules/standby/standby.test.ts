// Standby agents against a real LiveKit server and PostgreSQL: the pool's rooms and dispatches, a web call taking a
// waiting agent's room, the fallback dispatch when the agent does not claim it, the release of a draining worker's
// agents, and the route's refusals. The test plays the worker's part over the internal API.
import { beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { ParticipantInfo_Kind, WebhookEvent } from '@livekit/protocol';
import { AccessToken, AgentDispatchClient, RoomServiceClient, TokenVerifier } from 'livekit-server-sdk';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { useStack, type TestStack } from '../../../../test/support/stack.ts';
import { pollUntil } from '../../../../test/support/poll.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
let stack: TestStack;
let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;
let rooms: RoomServiceClient;
let dispatch: AgentDispatchClient;
/** The room whose job stops waiting in one test, checked in the next. */
let abandoned = '';

const until = <T>(fn: () => Promise<T | null | undefined | false>, tries = 300): Promise<T> => pollUntil(fn, tries);

const heartbeat = (workerId: string, draining = false) =>
  tp.request('post', `/internal/v1/workers/${workerId}/heartbeat`, { key: WORKER, body: { agent_name: 'vap-agent', active_calls: 0, load: 0, draining } });

/** The room's secret, from its dispatch's metadata, as its job reads it. */
async function secretOf(room: string): Promise<string> {
  const ours = (await dispatch.listDispatch(room)).find((d) => d.agentName === 'vap-agent' && JSON.parse(d.metadata).standby === room);
  return ours ? (JSON.parse(ours.metadata).secret as string) : '';
}

/** A standby job's wait, as the worker sends it (with its room's secret); abortable like a job that goes away. */
async function wait(room: string, workerId = 'w1', signal?: AbortSignal): Promise<{ status: number; body: any }> {
  const secret = await secretOf(room);
  return fetch(`${tp.url}/internal/v1/standby/${room}/wait`, {
    method: 'POST',
    headers: { authorization: `Bearer ${WORKER}`, 'content-type': 'application/json', 'x-standby-secret': secret },
    body: JSON.stringify({ worker_id: workerId }),
    ...(signal ? { signal } : {}),
  }).then(async (r) => ({ status: r.status, body: r.status === 204 ? null : await r.json() }));
}

const stateOf = async (room: string) => (await tp.sql<{ state: string }[]>`select state from standby_rooms where room_name = ${room}`)[0]?.state ?? null;
const roomsIn = async (state: string) =>
  (await tp.sql<{ room_name: string }[]>`select room_name from standby_rooms where state = ${state} order by created_at`).map((r) => r.room_name);
const takes = async () => {
  const text = await (await fetch(`http://127.0.0.1:${(tp.platform.metricsServer!.address() as { port: number }).port}/metrics`)).text();
  return Object.fromEntries(
    ['claimed', 'fallback', 'none'].map((r) => [r, Number(new RegExp(`^vap_standby_takes_total\\{result="${r}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0)]),
  );
};
/** LiveKit's participant_joined for a SIP caller in `room`, signed as the server signs its webhooks. */
async function callerJoined(room: string, attributes: Record<string, string>) {
  const body = new WebhookEvent({
    event: 'participant_joined',
    room: { name: room },
    participant: { kind: ParticipantInfo_Kind.SIP, identity: 'sip_caller', attributes },
  }).toJsonString();
  const at = new AccessToken(stack.apiKey, stack.apiSecret);
  at.sha256 = createHash('sha256').update(body).digest('base64');
  return tp.request('post', '/internal/livekit/webhook', {
    rawBody: body,
    headers: { 'content-type': 'application/webhook+json', authorization: await at.toJwt() },
  });
}
/** What a worker asks before it accepts the job a number's rule offers for `room`. */
const roomStatus = (room: string) => tp.request('get', `/internal/v1/calls/inbound/rooms/${encodeURIComponent(room)}`, { key: WORKER });
type Wired = { id: string; phone_number: string; inbound_trunk_id: string; dispatch_rule_id: string };
const sipAttributes = (n: Wired, over: Record<string, string> = {}) => ({
  'sip.trunkPhoneNumber': n.phone_number,
  'sip.phoneNumber': '+15550100111',
  'sip.trunkID': n.inbound_trunk_id,
  'sip.ruleID': n.dispatch_rule_id,
  'sip.callID': 'SCL_test',
  ...over,
});
const webCall = (body: Record<string, unknown> = {}) => tp.request('post', '/v1/calls/web', { key: org.key, body: { agent_id: agentId, ...body } });

beforeAll(async () => {
  stack = await useStack({});
  tp = await usePlatform({
    LIVEKIT_URL: stack.livekitUrl,
    LIVEKIT_API_KEY: stack.apiKey,
    LIVEKIT_API_SECRET: stack.apiSecret,
    STANDBY_AGENTS: 2,
    STANDBY_CLAIM_TIMEOUT_MS: 500,
  });
  rooms = new RoomServiceClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  dispatch = new AgentDispatchClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  org = await tp.createOrg();
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'llama3', base_url: 'https://api.openai.com/v1' } });
  const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Ava', llm_id: model.body.id, first_message: 'Hello!' } });
  expect(agent.status).toBe(201);
  agentId = agent.body.id;
});

describe('standby agents', () => {
  it('keeps none while no worker has reported, then the target: rooms that say only that they stand by, each dispatched', async () => {
    await tp.platform.services.standby.topUp();
    expect(await roomsIn('starting')).toEqual([]);
    expect((await heartbeat('w1')).status).toBe(200);
    await tp.platform.services.standby.topUp();
    const names = await roomsIn('starting');
    expect(names).toHaveLength(2);
    for (const name of names) {
      expect(name).toMatch(/^standby-[0-9a-f-]{36}$/);
      const [room] = await rooms.listRooms([name]);
      expect(JSON.parse(room!.metadata)).toEqual({ standby: true });
      const ours = (await dispatch.listDispatch(name)).filter((d) => d.agentName === 'vap-agent');
      // The room's secret goes with its dispatch (a wait must present it); no call's credential is there.
      expect(ours.map((d) => JSON.parse(d.metadata))).toEqual([{ standby: name, secret: expect.stringMatching(/^[\w-]{43}$/) }]);
    }
    // Topping up again adds nothing: the target is counted, not added.
    await tp.platform.services.standby.topUp();
    expect(await roomsIn('starting')).toHaveLength(2);
  });

  it("a web call takes a waiting agent's room: the agent gets the call, its capability and its config; the caller a token for that room", async () => {
    const [room] = await roomsIn('starting');
    const before = await takes();
    const waiting = wait(room!);
    await until(async () => (await stateOf(room!)) === 'ready');
    const res = await webCall({ variables: { who: 'Ada' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ room_name: room, status: 'initiated', type: 'web' });
    const got = await waiting;
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ call_id: res.body.id, capability: expect.stringMatching(/^vcap1\./), config: { call: { id: res.body.id, type: 'web' } } });
    // The capability (handed out with the config, once) opens this call's routes, as a dispatched job's would.
    expect(got.body.config.capability).toBe(got.body.capability);
    const started = await tp.request('post', `/internal/v1/calls/${res.body.id}/started`, {
      key: WORKER,
      headers: { 'x-call-capability': got.body.capability },
      body: { seq: 1, started_at: new Date().toISOString() },
    });
    expect(started.status).toBe(200);
    const cfg = await tp.request('get', `/internal/v1/calls/${res.body.id}/config`, { key: WORKER, headers: { 'x-call-capability': got.body.capability } });
    expect(cfg.status).toBe(200);
    const claims = await new TokenVerifier(stack.apiKey, stack.apiSecret).verify(res.body.participant_token);
    expect(claims.video).toMatchObject({ room, roomJoin: true });
    // The room is the call's now: out of the pool, on the call's row, and no dispatch was added to it.
    expect(await stateOf(room!)).toBeNull();
    const [row] = await tp.sql`select room_name from calls where id = ${res.body.id}`;
    expect(row!.room_name).toBe(room);
    expect((await dispatch.listDispatch(room!)).filter((d) => d.agentName === 'vap-agent').map((d) => JSON.parse(d.metadata))).toEqual([
      { standby: room, secret: expect.any(String) },
    ]);
    expect((await takes()).claimed).toBe(before.claimed! + 1);
    // The pool refills after the take.
    await until(async () => (await roomsIn('starting')).length + (await roomsIn('ready')).length >= 2);
  });

  it('a refused call takes nothing: the waiting agent stays ready for the next one', async () => {
    const [room] = await roomsIn('starting');
    abandoned = room!;
    const ctl = new AbortController();
    const waiting = wait(room!, 'w1', ctl.signal).catch(() => null);
    await until(async () => (await stateOf(room!)) === 'ready');
    const missing = await webCall({ agent_id: '00000000-0000-4000-8000-000000000000' });
    // A missing agent is a 422 reference_not_found, as on POST /v1/calls (issue 51).
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: 'reference_not_found', loc: ['body', 'agent_id'] });
    const bad = await webCall({ overrides: { max_duration_seconds: 0 } });
    expect(bad.status).toBe(422);
    expect(await stateOf(room!)).toBe('ready');
    ctl.abort();
    await waiting;
  });

  it('a job that stops waiting takes its room out of the pool: the next call is dispatched as before', async () => {
    // (The previous test's aborted request.) The room is gone from the pool and from LiveKit.
    await until(async () => (await roomsIn('ready')).length === 0);
    await until(async () => (await rooms.listRooms([abandoned])).length === 0);
    const before = await takes();
    const res = await webCall();
    expect(res.status).toBe(201);
    expect(res.body.room_name).toBe(`call-${res.body.id}`);
    expect((await takes()).none).toBe(before.none! + 1);
  });

  it('a taken room whose agent does not claim it in time gets an ordinary dispatch; the late agent is told the room is gone', async () => {
    // A job that waits on another control plane which died: its room is ready, and no request here hears the take.
    const [room] = await roomsIn('starting');
    await tp.sql`update standby_rooms set state = 'ready', worker_id = 'w-gone', state_at = now() where room_name = ${room!}`;
    const before = await takes();
    const res = await webCall();
    expect(res.body.room_name).toBe(room);
    const fallback = await until(async () => (await dispatch.listDispatch(room!)).find((d) => d.agentName === 'vap-agent' && JSON.parse(d.metadata).call_id));
    expect(JSON.parse(fallback.metadata)).toEqual({ call_id: res.body.id, ticket: expect.stringMatching(/^vtkt1\./) });
    expect((await takes()).fallback).toBe(before.fallback! + 1);
    expect(await stateOf(room!)).toBeNull();
    const late = await wait(room!);
    expect(late.status).toBe(404);
  });

  it("a draining worker's waiting agents are released and their rooms deleted", async () => {
    await tp.platform.services.standby.topUp();
    const [room] = await roomsIn('starting');
    const waiting = wait(room!, 'w-drain');
    await until(async () => (await stateOf(room!)) === 'ready');
    expect((await heartbeat('w-drain', true)).status).toBe(200);
    expect(await waiting).toEqual({ status: 200, body: { release: true } });
    expect(await stateOf(room!)).toBeNull();
    await until(async () => (await rooms.listRooms([room!])).length === 0);
  });

  it("an inbound call takes a waiting agent: the control plane opens it, the agent gets an agent's token for the caller's room, and the rule's job is not needed", async () => {
    const bought = await tp.request('post', '/v1/phone-numbers', { key: org.key, body: { agent_id: agentId, area_code: '415' } });
    expect(bought.status).toBe(200);
    const n = bought.body as Wired;
    await tp.platform.services.standby.topUp();
    const [room, spare] = await roomsIn('starting');
    const waiting = wait(room!);
    await until(async () => (await stateOf(room!)) === 'ready');
    const callerRoom = `pn-${n.id}_+15550100111_abc1`;
    // Before the caller is reported, the rule's job is the one wanted. The question is the workers' alone.
    expect((await roomStatus(callerRoom)).body).toEqual({ answered_elsewhere: false });
    expect((await tp.request('get', `/internal/v1/calls/inbound/rooms/${encodeURIComponent(callerRoom)}`, { key: org.key })).status).toBe(401);
    const before = await takes();
    expect((await callerJoined(callerRoom, sipAttributes(n))).status).toBe(200);
    const got = await waiting;
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ capability: expect.stringMatching(/^vcap1\./), config: { call: { type: 'inbound' } }, join: { room_name: callerRoom } });
    const claims = await new TokenVerifier(stack.apiKey, stack.apiSecret).verify(got.body.join.token);
    expect(claims.video).toMatchObject({ room: callerRoom, roomJoin: true, canPublish: true, canSubscribe: true, canUpdateOwnMetadata: true, agent: true });
    expect(claims.kind).toBe('agent');
    const [call] = await tp.sql`select id, room_name, status, from_number, to_number, metadata from calls where id = ${got.body.call_id}`;
    expect(call).toMatchObject({
      room_name: callerRoom,
      status: 'initiated',
      from_number: '+15550100111',
      to_number: n.phone_number,
      metadata: { standby_agent: true, routed_via: 'primary' },
    });
    expect((await takes()).claimed).toBe(before.claimed! + 1);
    // The rule's job is rejected by its worker (it asks first), and refused by the open if it comes anyway.
    expect((await roomStatus(callerRoom)).body).toEqual({ answered_elsewhere: true });
    const open = await tp.request('post', '/internal/v1/calls/inbound', {
      key: WORKER,
      body: {
        to_number: n.phone_number,
        from_number: '+15550100111',
        room_name: callerRoom,
        sip_call_id: 'SCL_test',
        trunk_id: n.inbound_trunk_id,
        dispatch_rule_id: n.dispatch_rule_id,
      },
    });
    expect(open.status).toBe(409);
    expect(open.body).toMatchObject({ reason: 'answered_elsewhere', call_id: got.body.call_id });

    // A retried webhook, and a caller who did not come through the number's own trunk, take no other agent.
    const ctl = new AbortController();
    const next = wait(spare!, 'w1', ctl.signal).catch(() => null);
    await until(async () => (await stateOf(spare!)) === 'ready');
    expect((await callerJoined(callerRoom, sipAttributes(n))).status).toBe(200);
    expect((await callerJoined(`pn-${n.id}_+15550100111_abc2`, sipAttributes(n, { 'sip.trunkID': 'ST_forged' }))).status).toBe(200);
    expect(await stateOf(spare!)).toBe('ready');
    expect(await tp.sql`select id from calls where room_name like ${`pn-${n.id}_%`}`).toHaveLength(1);

    ctl.abort();
    await next;

    // A waiting agent that does not claim its inbound call (its request was held by a control plane that died): an
    // ordinary agent is dispatched into the caller's room, and the standby room is deleted.
    await tp.platform.services.standby.topUp();
    const [gone] = await roomsIn('starting');
    await tp.sql`update standby_rooms set state = 'ready', worker_id = 'w-gone', state_at = now() where room_name = ${gone!}`;
    const lostRoom = `pn-${n.id}_+15550100111_abc3`;
    await rooms.createRoom({ name: lostRoom, emptyTimeout: 60 });
    expect((await callerJoined(lostRoom, sipAttributes(n))).status).toBe(200);
    const fallback = await until(async () =>
      (await dispatch.listDispatch(lostRoom)).find((d) => d.agentName === 'vap-agent' && JSON.parse(d.metadata).call_id),
    );
    const [lostCall] = await tp.sql`select id from calls where room_name = ${lostRoom}`;
    expect(JSON.parse(fallback.metadata)).toMatchObject({ call_id: lostCall!.id });
    await until(async () => (await rooms.listRooms([gone!])).length === 0);
  });

  it("the wait is the workers' alone: a customer key is refused, a malformed room is a 422, an unknown one a 404", async () => {
    const [room] = await roomsIn('starting');
    const asCustomer = await tp.request('post', `/internal/v1/standby/${room}/wait`, { key: org.key, body: { worker_id: 'w1' } });
    expect(asCustomer.status).toBe(401);
    expect(await stateOf(room!)).toBe('starting');
    const malformed = await tp.request('post', '/internal/v1/standby/call-1/wait', { key: WORKER, body: { worker_id: 'w1' } });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail[0].loc).toEqual(['path', 'room_name']);
    const unknown = await tp.request('post', '/internal/v1/standby/standby-00000000-0000-4000-8000-000000000000/wait', {
      key: WORKER,
      body: { worker_id: 'w1' },
    });
    expect(unknown.status).toBe(404);
  });
});
