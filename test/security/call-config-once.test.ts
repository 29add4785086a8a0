// Hostile tests (docs/security.md, issue 50, item 5): the worker credential must not open other organisations' call
// configs (their decrypted provider keys). Against a real LiveKit server and PostgreSQL, the test plays an attacker
// who holds the shared worker token and the LiveKit key that workers hold, and reads the logs:
//   - replaying POST /internal/v1/calls/inbound for a room already opened (or whose call completed) gets no config;
//   - a dispatch's metadata (ListDispatch) carries no capability, only a ticket that opens the config once;
//   - a standby room's name alone (logs, ListRooms) does not hold a wait for the next web call.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { AgentDispatchClient, RoomServiceClient } from 'livekit-server-sdk';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { useStack, type TestStack } from '../support/stack.ts';
import { dispatchCallAgent } from '../../control-plane/src/modules/calls/capability.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const SECRET_KEY = 'sk-tenant-secret-do-not-leak-0123';
let stack: TestStack;
let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;
let dispatch: AgentDispatchClient;
let rooms: RoomServiceClient;

const worker = (headers: Record<string, string> = {}) => ({ key: WORKER, headers });

beforeAll(async () => {
  stack = await useStack({});
  tp = await usePlatform({ LIVEKIT_URL: stack.livekitUrl, LIVEKIT_API_KEY: stack.apiKey, LIVEKIT_API_SECRET: stack.apiSecret, STANDBY_AGENTS: 1 });
  dispatch = new AgentDispatchClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  rooms = new RoomServiceClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  org = await tp.createOrg('victim');
  expect((await tp.request('post', '/v1/credentials', { key: org.key, body: { name: 'openai', provider: 'openai', api_key: SECRET_KEY } })).status).toBe(201);
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'gpt-4o-mini' } });
  const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Ava', llm_id: model.body.id } });
  agentId = agent.body.id;
});

describe('inbound open: the config once per room', () => {
  it('a replay with the worker token and a logged room, trunk and rule gets no config and no capability, live or completed', async () => {
    const bought = await tp.request('post', '/v1/phone-numbers', { key: org.key, body: { agent_id: agentId, area_code: '415' } });
    expect(bought.status).toBe(200);
    const n = bought.body;
    const body = {
      to_number: n.phone_number,
      from_number: '+15550100111',
      room_name: `pn-${n.id}_+15550100111_replay`,
      sip_call_id: 'SCL_replay',
      trunk_id: n.inbound_trunk_id,
      dispatch_rule_id: n.dispatch_rule_id,
    };
    const first = await tp.request('post', '/internal/v1/calls/inbound', { ...worker(), body });
    expect(first.status).toBe(200);
    expect(first.body.config.provider_keys.openai).toBe(SECRET_KEY);

    const replay = await tp.request('post', '/internal/v1/calls/inbound', { ...worker(), body });
    expect(replay.status).toBe(409);
    expect(replay.body).toMatchObject({ reason: 'already_opened', call_id: first.body.call_id });
    expect(JSON.stringify(replay.body)).not.toContain(SECRET_KEY);
    expect(replay.body.capability).toBeUndefined();

    await tp.sql`update calls set status = 'completed', ended_at = now() where id = ${first.body.call_id}`;
    const late = await tp.request('post', '/internal/v1/calls/inbound', { ...worker(), body });
    expect(late.status).toBe(409);
    expect(JSON.stringify(late.body)).not.toContain(SECRET_KEY);
  });
});

describe('dispatch metadata: a ticket, not the capability', () => {
  it('what the LiveKit key can read opens the config once (the worker’s) and nothing else', async () => {
    const callId = randomUUID();
    const room = `call-${callId}`;
    await tp.sql`insert into calls (id, org_id, agent_id, type, status, room_name) values (${callId}, ${org.orgId}, ${agentId}, 'web', 'initiated', ${room})`;
    await rooms.createRoom({ name: room, emptyTimeout: 60 });
    await dispatchCallAgent(tp.platform.services, room, callId);

    // The attacker lists the room's dispatches with the LiveKit key.
    const [d] = (await dispatch.listDispatch(room)).filter((x) => x.agentName === 'vap-agent');
    const meta = JSON.parse(d!.metadata);
    expect(meta).toEqual({ call_id: callId, ticket: expect.stringMatching(/^vtkt1\./) });
    expect(d!.metadata).not.toMatch(/vcap1/);

    // The ticket is no capability: no report, search or upload takes it.
    const asTicket = worker({ 'x-call-capability': meta.ticket });
    expect((await tp.request('post', `/internal/v1/calls/${callId}/started`, { ...asTicket, body: { seq: 1, started_at: new Date().toISOString() } })).status).toBe(403);
    expect((await tp.request('post', `/internal/v1/calls/${callId}/transcript`, { ...asTicket, body: { seq: 1, messages: [] } })).status).toBe(403);
    expect((await tp.request('post', `/internal/v1/calls/${callId}/knowledge/search`, { ...asTicket, body: { query: 'x', top_k: 1 } })).status).toBe(403);
    const upload = await fetch(`${tp.url}/v1/recordings/${callId}/upload`, { method: 'PUT', body: new Uint8Array(64), headers: { authorization: `Bearer ${meta.ticket}`, 'content-type': 'audio/wav' } });
    expect(upload.status).toBe(403);
    // Nor does it open another call's config.
    const other = randomUUID();
    await tp.sql`insert into calls (id, org_id, agent_id, type, status, room_name) values (${other}, ${org.orgId}, ${agentId}, 'web', 'initiated', ${`call-${other}`})`;
    expect((await tp.request('get', `/internal/v1/calls/${other}/config`, asTicket)).status).toBe(403);

    // The worker redeems it first: the config, with the capability for the rest of the call.
    const cfg = await tp.request('get', `/internal/v1/calls/${callId}/config`, asTicket);
    expect(cfg.status).toBe(200);
    expect(cfg.body.capability).toMatch(/^vcap1\./);
    const started = await tp.request('post', `/internal/v1/calls/${callId}/started`, {
      ...worker({ 'x-call-capability': cfg.body.capability }),
      body: { seq: 1, started_at: new Date().toISOString() },
    });
    expect(started.status).toBe(200);
    // The attacker's replay of the ticket (from ListDispatch, or a worker's log of an unknown assignment) gets nothing.
    const replay = await tp.request('get', `/internal/v1/calls/${callId}/config`, asTicket);
    expect(replay.status).toBe(409);
    expect(JSON.stringify(replay.body)).not.toContain(SECRET_KEY);
    expect(JSON.stringify(replay.body)).not.toContain('vcap1');
  });
});

describe('standby waits: the room’s secret, not its name', () => {
  it('a wait that knows only a standby room’s name (or another room’s secret) is refused and leaves the room as it was', async () => {
    expect((await tp.request('post', '/internal/v1/workers/w1/heartbeat', { key: WORKER, body: { agent_name: 'vap-agent', active_calls: 0, load: 0, draining: false } })).status).toBe(200);
    await tp.platform.services.standby.topUp();
    const [row] = await tp.sql<{ room_name: string }[]>`select room_name from standby_rooms where state = 'starting' order by created_at limit 1`;
    const room = row!.room_name;
    // The room's name is what the attacker has (logs; ListRooms with the LiveKit key).
    expect((await rooms.listRooms([room])).length).toBe(1);
    const attempt = (secret?: string) =>
      tp.request('post', `/internal/v1/standby/${room}/wait`, { key: WORKER, headers: secret ? { 'x-standby-secret': secret } : {}, body: { worker_id: 'attacker' } });
    expect((await attempt()).status).toBe(404);
    expect((await attempt('forged-secret-forged-secret-forged-secret-0')).status).toBe(404);
    const otherRoom = `standby-${randomUUID()}`;
    const { standbySecret } = await import('../../control-plane/src/modules/calls/capability.ts');
    expect((await attempt(standbySecret(tp.platform.services, otherRoom))).status).toBe(404);
    const [after] = await tp.sql`select state, worker_id from standby_rooms where room_name = ${room}`;
    expect(after).toEqual({ state: 'starting', worker_id: null });
  });
});
