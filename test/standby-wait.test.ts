// The worker's side of standby agents (media-worker/src/call/standby.ts) against a real control plane and LiveKit: the
// wait returns the call it was given with a capability that opens the call's routes, and gives up (null) on a room
// the control plane does not know, on a release, and when the room closes under it.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from './support/platform.ts';
import { useStack } from './support/stack.ts';
import { InternalApiClient } from '../shared/internal-api.ts';
import { createLogger } from '../shared/logger.ts';
import { standbyRoomOf, waitForStandbyCall } from '../media-worker/src/call/standby.ts';
import { jobRequestFunc } from '../media-worker/src/job-request.ts';
import { standbySecret } from '../control-plane/src/modules/calls/capability.ts';
import { JobRequest } from '@livekit/agents';
import { Job, Room } from '@livekit/protocol';
import { pollUntil } from './support/poll.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const logger = createLogger('test', 'silent');
let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;
let api: InternalApiClient;

const until = <T>(fn: () => Promise<T | null | undefined | false>, tries = 300): Promise<T> => pollUntil(fn, tries);
const stateOf = async (room: string) => (await tp.sql<{ state: string }[]>`select state from standby_rooms where room_name = ${room}`)[0]?.state ?? null;
const heartbeat = (workerId: string, draining = false) =>
  tp.request('post', `/internal/v1/workers/${workerId}/heartbeat`, { key: WORKER, body: { agent_name: 'vap-agent', active_calls: 0, load: 0, draining } });

/** The room's secret, as its dispatch's metadata gives it to the worker (the wait needs it: docs/security.md). */
const secretOf = (room: string) => standbySecret(tp.platform.services, room);

async function newRoom(): Promise<string> {
  await tp.platform.services.standby.topUp();
  const [row] = await tp.sql<{ room_name: string }[]>`select room_name from standby_rooms where state = 'starting' order by created_at limit 1`;
  return row!.room_name;
}

beforeAll(async () => {
  const stack = await useStack({});
  tp = await usePlatform({ LIVEKIT_URL: stack.livekitUrl, LIVEKIT_API_KEY: stack.apiKey, LIVEKIT_API_SECRET: stack.apiSecret, STANDBY_AGENTS: 1 });
  org = await tp.createOrg();
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'llama3', base_url: 'https://api.openai.com/v1' } });
  agentId = (await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Ava', llm_id: model.body.id, first_message: 'Hello!' } })).body.id;
  api = new InternalApiClient({ baseUrl: tp.url, token: WORKER, workerId: 'w1' });
  await heartbeat('w1');
});

describe("a standby agent's wait (media-worker/src/call/standby.ts)", () => {
  it('reads its room from the dispatch metadata only when it names a standby room', () => {
    expect(standbyRoomOf(JSON.stringify({ standby: 'standby-0190c0de-0000-4000-8000-000000000000' }))).toBe('standby-0190c0de-0000-4000-8000-000000000000');
    expect(standbyRoomOf(JSON.stringify({ standby: 'call-0190c0de-0000-4000-8000-000000000000' }))).toBeNull();
    expect(standbyRoomOf(JSON.stringify({ call_id: 'x' }))).toBeNull();
    expect(standbyRoomOf('not json')).toBeNull();
    expect(standbyRoomOf(undefined)).toBeNull();
  });

  it('returns the call given to its room, whose capability then opens that call', async () => {
    const room = await newRoom();
    const waiting = waitForStandbyCall(api, room, 'w1', { signal: new AbortController().signal, logger, secret: secretOf(room) });
    await until(async () => (await stateOf(room)) === 'ready');
    const created = await tp.request('post', '/v1/calls/web', { key: org.key, body: { agent_id: agentId } });
    expect(created.body.room_name).toBe(room);
    const call = await waiting;
    expect(call).toMatchObject({ call_id: created.body.id, config: { call: { id: created.body.id }, agent: { first_message: 'Hello!' } } });
    // The client kept the capability: the call's own routes answer.
    const config = await api.getConfig(created.body.id);
    expect(config.call.id).toBe(created.body.id);
  });

  it('gives up on a room the control plane does not know', async () => {
    expect(await waitForStandbyCall(api, 'standby-00000000-0000-4000-8000-000000000000', 'w1', { signal: new AbortController().signal, logger })).toBeNull();
  });

  it('gives up when its worker drains, and when its room closes under it', async () => {
    const room = await newRoom();
    const released = waitForStandbyCall(api, room, 'w-drain', { signal: new AbortController().signal, logger, secret: secretOf(room) });
    await until(async () => (await stateOf(room)) === 'ready');
    await heartbeat('w-drain', true);
    expect(await released).toBeNull();

    const other = await newRoom();
    const closed = new AbortController();
    const waiting = waitForStandbyCall(api, other, 'w1', { signal: closed.signal, logger, secret: secretOf(other) });
    await until(async () => (await stateOf(other)) === 'ready');
    closed.abort();
    expect(await waiting).toBeNull();
    // The control plane saw the request go: the room leaves the pool, so no call is handed to it while nobody waits
    // in it, and asking again is a 404 (the job leaves).
    await until(async () => (await stateOf(other)) === null);
    expect(await waitForStandbyCall(api, other, 'w1', { signal: new AbortController().signal, logger, secret: secretOf(other) })).toBeNull();
  });

  it("rejects the job a number's rule offers once the control plane gave the call to an agent; accepts every other offer", async () => {
    const requestFunc = jobRequestFunc(api, logger);
    /** The worker's answer to an offer: accepted or rejected. */
    const answer = async (fn: typeof requestFunc, room: string, metadata = '') => {
      let answered = 'none';
      const req = new JobRequest(
        new Job({ id: `AJ_${room}`, room: new Room({ name: room }), metadata }),
        async () => {
          answered = 'rejected';
        },
        async () => {
          answered = 'accepted';
        },
      );
      await fn(req);
      return answered;
    };
    const answered = 'pn-0190c0de-0000-4000-8000-000000000001_+15550100111_x1';
    await tp.sql`
      insert into calls (org_id, agent_id, type, direction, to_number, room_name, metadata, status)
      values (${org.orgId}, ${agentId}, 'inbound', 'inbound', '+14155550100', ${answered}, ${tp.sql.json({ routed_via: 'primary', standby_agent: true })}, 'initiated')`;
    expect(await answer(requestFunc, answered)).toBe('rejected');
    // A number's room whose call nobody opened yet: the rule's job is the one that answers it.
    expect(await answer(requestFunc, 'pn-0190c0de-0000-4000-8000-000000000001_+15550100111_x2')).toBe('accepted');
    // A job that names its call (the fallback dispatched into the same room) is the one wanted.
    expect(await answer(requestFunc, answered, JSON.stringify({ call_id: 'c', capability: 'vcap1.x' }))).toBe('accepted');
    // A control plane that cannot say: accepted (the job's own open refuses a call answered elsewhere).
    const unreachable = jobRequestFunc(new InternalApiClient({ baseUrl: 'http://127.0.0.1:9', token: WORKER }), logger);
    expect(await answer(unreachable, answered)).toBe('accepted');
    // Web calls' rooms are not a number's: accepted.
    expect(await answer(unreachable, 'call-0190c0de-0000-4000-8000-000000000000')).toBe('accepted');
  });
});
