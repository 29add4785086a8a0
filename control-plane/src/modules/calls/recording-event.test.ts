// call.recording.available: the event is sent when a recording is stored, and its URL still works when the
// delivery is retried long after a signed link would have expired: it is the stable, authenticated
// GET /v1/calls/{id}/recording, which redirects to a freshly signed download.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { Receiver } from '../../../../test/support/webhook-receiver.ts';
import { recordingUploadUrl } from './recordings.ts';

let tp: TestPlatform;
let rx: Receiver;
let org: { orgId: string; key: string };
let other: { orgId: string; key: string };

beforeAll(async () => {
  rx = await new Receiver().start();
  // The shortest signed-link validity there is, and a quick retry: the retried delivery must not carry a
  // link that depends on when it was minted.
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '200ms', RECORDING_URL_TTL_SECONDS: 60 } as never);
  org = await tp.createOrg();
  other = await tp.createOrg();
});

afterAll(async () => {
  await rx.close();
});

describe('call.recording.available', () => {
  it('is delivered (and retried) with a recording URL that does not expire and opens with the API key', async () => {
    const hook = await tp.request('post', '/v1/webhooks', { key: org.key, body: { name: 'rec', url: rx.url('/rec'), events: ['call.recording.available'] } });
    expect(hook.status).toBe(201);
    rx.script('/rec', (_req, nth) => ({ status: nth === 1 ? 503 : 200 }));
    const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'gpt-4o-mini' } });
    const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'a', llm_id: model.body.id, enable_recording: true } });
    expect(agent.status).toBe(201);
    const [call] = await tp.sql`
      insert into calls (org_id, agent_id, type, status, started_at, ended_at, duration_seconds, end_reason)
      values (${org.orgId}, ${agent.body.id}, 'web', 'completed', now() - interval '1 minute', now(), 60, 'user_hangup') returning id`;
    const id = call!.id as string;

    // The worker uploads to the URL of its session config, with the call's capability.
    const wav = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(2000, 7)]);
    const up = await fetch(recordingUploadUrl(tp.platform.services, id), {
      method: 'PUT',
      body: wav,
      headers: { 'content-type': 'audio/wav', authorization: `Bearer ${tp.capability(id)}` },
    });
    expect(up.status).toBe(204);

    await rx.until(() => rx.requests.filter((r) => r.path === '/rec').length >= 2, 'a retried delivery');
    const [first, retried] = rx.requests.filter((r) => r.path === '/rec');
    expect(first!.json).toMatchObject({ event: 'call.recording.available', call_id: id });
    expect(retried!.json).toEqual(first!.json);
    const url = new URL(retried!.json.recording_url);
    expect(url.pathname).toBe(`/v1/calls/${id}/recording`);
    // Nothing in it expires.
    expect(url.searchParams.get('expires')).toBeNull();
    expect(url.searchParams.get('signature')).toBeNull();

    // With the organisation's key: a redirect to a freshly signed link, which serves the recording.
    const redirect = await fetch(url, { headers: { authorization: `Bearer ${org.key}` }, redirect: 'manual' });
    expect(redirect.status).toBe(302);
    const location = new URL(redirect.headers.get('location')!);
    expect(Number(location.searchParams.get('expires')) * 1000).toBeGreaterThan(Date.now());
    const audio = await fetch(location);
    expect(audio.status).toBe(200);
    expect(Buffer.from(await audio.arrayBuffer())).toEqual(wav);
    // Following the redirect in one go works too.
    expect((await fetch(url, { headers: { authorization: `Bearer ${org.key}` } })).status).toBe(200);

    // Without a key it is refused; another organisation does not see it.
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: `Bearer ${other.key}` }, redirect: 'manual' })).status).toBe(404);
  });

  it('answers 404 for a call without a recording', async () => {
    const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm2', model: 'gpt-4o-mini' } });
    const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'b', llm_id: model.body.id } });
    const [call] = await tp.sql`insert into calls (org_id, agent_id, type, status) values (${org.orgId}, ${agent.body.id}, 'web', 'completed') returning id`;
    const res = await tp.request('get', `/v1/calls/${call!.id}/recording`, { key: org.key });
    expect(res.status).toBe(404);
  });
});
