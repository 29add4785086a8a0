// call.recording.available, as a receiver sees it: `recording_url` is a signed download link that opens
// without the API key, signed when each delivery attempt is sent, so a retry hours (or a day) after the event
// still carries a link that works. The stable, authenticated GET /v1/calls/{id}/recording comes along as
// `recording_api_url`; the stored event holds only that one, never a link that expires.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { Receiver } from '../../../../test/support/webhook-receiver.ts';
import { recordingUploadUrl } from './recordings.ts';

const TTL = 60; // the shortest signed-link validity there is
let tp: TestPlatform;
let rx: Receiver;
let org: { orgId: string; key: string };
let other: { orgId: string; key: string };

beforeAll(async () => {
  rx = await new Receiver().start();
  // One retry, at least 1.6 s (2 s - 20 % jitter) after the first attempt: a link signed at the retry's send
  // time expires at least one (whole) second later than the first attempt's.
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '2s', RECORDING_URL_TTL_SECONDS: TTL } as never);
  org = await tp.createOrg();
  other = await tp.createOrg();
});

afterAll(async () => {
  await rx.close();
});

const expiresOf = (url: string) => Number(new URL(url).searchParams.get('expires'));

describe('call.recording.available', () => {
  it('carries a recording_url signed at each attempt, which downloads without the API key', async () => {
    const hook = await tp.request('post', '/v1/webhooks', { key: org.key, body: { name: 'rec', url: rx.url('/rec'), events: ['call.recording.available'] } });
    expect(hook.status).toBe(201);
    rx.script('/rec', (_req, nth) => ({ status: nth === 1 ? 503 : 200 }));
    const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'gpt-4o-mini' } });
    const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'a', llm_id: model.body.id, enable_recording: true } });
    expect(agent.status).toBe(201);
    const [call] = await tp.sql`
      insert into calls (org_id, agent_id, type, status, started_at, ended_at, duration_seconds, end_reason, recording_consent)
      values (${org.orgId}, ${agent.body.id}, 'web', 'completed', now() - interval '1 minute', now(), 60, 'user_hangup', 'none') returning id`;
    const id = call!.id as string;

    // The worker uploads to the URL of its session config, with the call's capability.
    const wav = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(2000, 7)]);
    const up = await fetch(recordingUploadUrl(tp.platform.services, id), {
      method: 'PUT',
      body: wav,
      headers: { 'content-type': 'audio/wav', authorization: `Bearer ${tp.capability(id)}` },
    });
    expect(up.status).toBe(204);

    await rx.until(() => rx.at('/rec').length >= 2, 'a retried delivery');
    const attempts = rx.at('/rec').slice(0, 2);
    const stable = `${tp.url}/v1/calls/${id}/recording`;
    const bodies = attempts.map((a) => new StandardWebhook(hook.body.secret).verify(a.body, a.headers as Record<string, string>) as Record<string, string>);
    for (const [i, body] of bodies.entries()) {
      expect(body).toEqual({
        id: attempts[0]!.headers['webhook-id'],
        event: 'call.recording.available',
        created_at: expect.any(String),
        call_id: id,
        recording_url: expect.stringMatching(new RegExp(`^${tp.url}/v1/recordings/${id}\\?expires=\\d+&signature=`)),
        recording_api_url: stable,
      });
      // Signed when this attempt was sent (no later than its webhook-timestamp), valid TTL seconds from then.
      expect(expiresOf(body.recording_url!)).toBeLessThanOrEqual(Number(attempts[i]!.headers['webhook-timestamp']) + TTL);
      // A receiver downloads it as it is: no Authorization header.
      const audio = await fetch(body.recording_url!);
      expect(audio.status).toBe(200);
      expect(Buffer.from(await audio.arrayBuffer())).toEqual(wav);
    }
    // The same event (webhook-id) on both attempts, but the retry's link is signed anew, later than the event
    // was created: a link minted with the event would have expired for a retry made long after it.
    expect(attempts[1]!.headers['webhook-id']).toBe(attempts[0]!.headers['webhook-id']);
    expect(bodies[1]!.created_at).toBe(bodies[0]!.created_at);
    expect(expiresOf(bodies[1]!.recording_url!)).toBeGreaterThan(expiresOf(bodies[0]!.recording_url!));
    expect(expiresOf(bodies[1]!.recording_url!)).toBeGreaterThan(Math.floor(Date.parse(bodies[1]!.created_at!) / 1000) + TTL);

    // The stored event holds the stable URL only: nothing in it expires.
    const [stored] = await tp.sql`select payload::text as body from events where call_id = ${id} and type = 'call.recording.available'`;
    const payload = JSON.parse(stored!.body as string);
    expect(payload).toEqual({ id: bodies[0]!.id, event: 'call.recording.available', created_at: bodies[0]!.created_at, call_id: id, recording_api_url: stable });

    // recording_api_url: with the organisation's key, a redirect to a freshly signed link, which serves the recording.
    const url = new URL(stable);
    const redirect = await fetch(url, { headers: { authorization: `Bearer ${org.key}` }, redirect: 'manual' });
    expect(redirect.status).toBe(302);
    const location = new URL(redirect.headers.get('location')!);
    expect(Number(location.searchParams.get('expires')) * 1000).toBeGreaterThan(Date.now());
    const audio = await fetch(location);
    expect(audio.status).toBe(200);
    expect(Buffer.from(await audio.arrayBuffer())).toEqual(wav);
    // Following the redirect in one go works too.
    expect((await fetch(url, { headers: { authorization: `Bearer ${org.key}` } })).status).toBe(200);
    // redirect=false: the document's 2xx, the link itself, which serves the same bytes.
    const link = await fetch(`${url.href}?redirect=false`, { headers: { authorization: `Bearer ${org.key}` }, redirect: 'manual' });
    expect(link.status).toBe(200);
    const linkBody = (await link.json()) as { url: string; expires_at: string };
    expect(Date.parse(linkBody.expires_at)).toBeGreaterThan(Date.now());
    expect(Buffer.from(await (await fetch(linkBody.url)).arrayBuffer())).toEqual(wav);

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
