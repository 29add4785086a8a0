// The recording upload with a call's capability (held by the worker, or leaked from it) stored audio for any
// call whose consent was not `declined` (issue 50, low): a call whose agent never records, one whose consent
// was never reported (null) or was `none` where the agent asks, and it replaced a finished call's recording for
// as long as the capability lived (6 h), with no rate bucket. Each is made here, through the real route.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';

let tp: TestPlatform;
let org: { orgId: string; key: string };
let modelId: string;
const wav = (fill: number) => Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(2000, fill)]);
const put = (callId: string, body = wav(1)) =>
  fetch(`${tp.url}/v1/recordings/${callId}/upload`, { method: 'PUT', body, headers: { 'content-type': 'audio/wav', authorization: `Bearer ${tp.capability(callId)}` } });
const keyOf = async (id: string) => (await tp.sql<{ recording_key: string | null }[]>`select recording_key from calls where id = ${id}`)[0]!.recording_key;

async function agent(fields: Record<string, unknown>, o = org, model = modelId): Promise<string> {
  const res = await tp.request('post', '/v1/agents', { key: o.key, body: { name: 'rec', llm_id: model, ...fields } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}
async function call(agentId: string, consent: string | null, o = org): Promise<string> {
  const [row] = await tp.sql<{ id: string }[]>`
    insert into calls (org_id, agent_id, type, status, room_name, recording_consent)
    values (${o.orgId}, ${agentId}, 'web', 'completed', 'room-' || gen_random_uuid(), ${consent}) returning id`;
  return row!.id;
}

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: false, ANALYSIS_MODE: 'off', RATE_LIMIT_ORG_BURST: 30, RATE_LIMIT_ORG_PER_SECOND: 0.001 } as never);
  org = await tp.createOrg('recording uploads');
  modelId = (await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'gpt-4o-mini' } })).body.id;
});

describe('the recording upload refuses what the call does not allow', () => {
  it("a call whose agent does not record (enable_recording false): 403, nothing stored", async () => {
    const id = await call(await agent({ enable_recording: false }), 'none');
    const res = await put(id);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('enable_recording');
    expect(await keyOf(id)).toBeNull();
  });

  it('a consent never reported (null), or `none` where the agent asks or announces: 403', async () => {
    const asks = await agent({ enable_recording: true, recording_consent: 'ask' });
    const announces = await agent({ enable_recording: true, recording_consent: 'announce' });
    const silent = await agent({ enable_recording: true });
    for (const [a, consent] of [
      [silent, null],
      [asks, null],
      [asks, 'none'],
      [asks, 'announced'],
      [announces, 'none'],
    ] as const) {
      const id = await call(a, consent);
      expect((await put(id)).status, `${consent}`).toBe(403);
      expect(await keyOf(id)).toBeNull();
    }
    // What each mode allows.
    expect((await put(await call(asks, 'accepted'))).status).toBe(204);
    expect((await put(await call(announces, 'announced'))).status).toBe(204);
    expect((await put(await call(silent, 'none'))).status).toBe(204);
  });

  it("a finished call's recording is never replaced: 409, the first one kept", async () => {
    const id = await call(await agent({ enable_recording: true }), 'none');
    expect((await put(id, wav(1))).status).toBe(204);
    const first = await keyOf(id);
    const again = await put(id, wav(2));
    expect(again.status).toBe(409);
    expect(await keyOf(id)).toBe(first);
    const events = await tp.sql`select id from events where call_id = ${id} and type = 'call.recording.available'`;
    expect(events).toHaveLength(1);
  });

  it("uploads take from the organisation's rate bucket: past it, 429 before any body is stored", async () => {
    const other = await tp.createOrg('recording flood');
    const model = (await tp.request('post', '/v1/models', { key: other.key, body: { name: 'm', model: 'gpt-4o-mini' } })).body.id;
    const silent = await agent({ enable_recording: true }, other, model);
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await put(await call(silent, 'none', other))).status);
    // The bucket's burst (30) less the two API requests above: 28 stored, then refused.
    expect(statuses.filter((s) => s === 204)).toHaveLength(28);
    expect(statuses.slice(28).every((s) => s === 429)).toBe(true);
  });
});
