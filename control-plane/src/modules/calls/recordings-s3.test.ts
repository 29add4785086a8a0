// Recordings kept in an S3-compatible store: the worker's upload streams through the control plane into S3
// (multipart), and `recording_url` is a presigned S3 URL, fresh on every fetch and refused once expired or
// tampered with. The store is a local server speaking the S3 protocol with real SigV4 checks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { startFakeS3, type FakeS3 } from '../../../../test/support/fake-s3.ts';
import { Receiver } from '../../../../test/support/webhook-receiver.ts';
import { recordingUploadUrl, signedUrl } from './recordings.ts';
import { s3Client } from './storage/s3.ts';
import { deleteRecording } from './storage/index.ts';

let tp: TestPlatform;
let s3: FakeS3;
let rx: Receiver;
let org: { orgId: string; key: string };
let agentId: string;

beforeAll(async () => {
  s3 = await startFakeS3({ bucket: 'vap-recordings', region: 'eu-west-3' });
  rx = await new Receiver().start();
  tp = await usePlatform({
    S3_ENDPOINT: s3.url,
    S3_BUCKET: s3.bucket,
    S3_REGION: s3.region,
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    SSRF_ALLOWLIST: '127.0.0.1',
  });
  org = await tp.createOrg();
  const hook = await tp.request('post', '/v1/webhooks', { key: org.key, body: { name: 'rec', url: rx.url('/rec'), events: ['call.recording.available'] } });
  expect(hook.status).toBe(201);
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'llama3', base_url: 'http://127.0.0.1:9/v1' } });
  expect(model.status).toBe(201);
  const [agent] = await tp.sql`
    insert into agents (org_id, name, llm_id, transcriber, tts, enable_recording)
    values (${org.orgId}, 'Ava', ${model.body.id}, ${tp.sql.json({ provider: 'local', model: 'pocketsphinx', language: 'en-US' })},
            ${tp.sql.json({ provider: 'local', model: 'espeak-ng', voice_id: 'en-us' })}, true)
    returning id`;
  agentId = agent!.id as string;
});
afterAll(async () => {
  await rx?.close();
  await s3?.close();
});

async function newCall(): Promise<string> {
  // As the worker leaves a call it recorded: ended, with the consent that applied (issue 50: none reported stores nothing).
  const [row] = await tp.sql`insert into calls (org_id, agent_id, type, status, recording_consent) values (${org.orgId}, ${agentId}, 'web', 'completed', 'none') returning id`;
  return row!.id as string;
}

const uploadUrl = (callId: string) => recordingUploadUrl(tp.platform.services, callId);
/** The worker's upload: the call's capability is its credential. */
const upload = (callId: string, body: Buffer, contentType: string) =>
  fetch(uploadUrl(callId), { method: 'PUT', body, headers: { 'content-type': contentType, authorization: `Bearer ${tp.capability(callId)}` } });

/** A WAV-looking body with varied bytes, so misplaced parts would show. */
function audio(bytes: number): Buffer {
  const b = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) b[i] = (i * 31 + (i >> 13)) & 0xff;
  b.write('RIFF', 0);
  return b;
}

describe('recordings in S3', () => {
  it('streams a large upload into S3 in parts, and recording_url is a fresh presigned URL', async () => {
    const id = await newCall();
    const body = audio(12 * 1024 * 1024 + 123);
    const up = await upload(id, body, 'audio/wav');
    expect(up.status).toBe(204);
    // Three parts of at most 5 MiB, assembled by S3.
    const key = `recordings/${org.orgId}/${id}.wav`;
    expect(s3.requests.filter((r) => r.startsWith(`PUT /${s3.bucket}/${key}?partNumber=`))).toHaveLength(3);
    expect(s3.objects.get(key)?.body.equals(body)).toBe(true);
    const [row] = await tp.sql`select recording_key from calls where id = ${id}`;
    expect(row!.recording_key).toBe(`s3://${s3.bucket}/${key}`);

    // The delivered event: `recording_url` is presigned when the attempt is sent, and downloads as it is.
    await rx.until(() => rx.at('/rec').some((r) => r.json?.call_id === id), 'call.recording.available');
    const delivered = rx.at('/rec').find((r) => r.json?.call_id === id)!.json;
    expect(delivered.recording_url.startsWith(`${s3.url}/${s3.bucket}/${key}?`)).toBe(true);
    expect(new URL(delivered.recording_url).searchParams.get('X-Amz-Expires')).toBe('14400');
    expect(Buffer.from(await (await fetch(delivered.recording_url)).arrayBuffer()).equals(body)).toBe(true);
    // The stored event keeps only the stable, authenticated URL (retries outlive a presigned one); it
    // redirects to a freshly presigned S3 URL.
    const [event] = await tp.sql`select payload from events where call_id = ${id} and type = 'call.recording.available'`;
    expect((event!.payload as { recording_url?: string }).recording_url).toBeUndefined();
    const eventUrl = (event!.payload as { recording_api_url: string }).recording_api_url;
    expect(eventUrl).toBe(`${tp.url}/v1/calls/${id}/recording`);
    expect(delivered.recording_api_url).toBe(eventUrl);
    const redirect = await fetch(eventUrl, { headers: { authorization: `Bearer ${org.key}` }, redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')!.startsWith(`${s3.url}/${s3.bucket}/${key}?`)).toBe(true);

    const call = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
    const url = new URL(call.recording_url);
    expect(url.origin + url.pathname).toBe(`${s3.url}/${s3.bucket}/${key}`);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('14400');
    const got = await fetch(call.recording_url);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await got.arrayBuffer()).equals(body)).toBe(true);

    // Each fetch of the call signs anew (a later X-Amz-Date, or at least the same validity).
    const again = new URL((await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body.recording_url);
    expect(again.searchParams.get('X-Amz-Date')! >= url.searchParams.get('X-Amz-Date')!).toBe(true);
    // The list shows it too.
    const list = await tp.request('get', `/v1/calls?limit=100`, { key: org.key });
    expect(list.body.items.find((c: { id: string }) => c.id === id).recording_url).toContain('X-Amz-Signature=');
  });

  it('refuses a tampered or expired presigned URL', async () => {
    const id = await newCall();
    const body = audio(64 * 1024);
    const up = await upload(id, body, 'audio/ogg');
    expect(up.status).toBe(204);
    const key = `recordings/${org.orgId}/${id}.ogg`;
    expect(s3.objects.get(key)?.contentType).toBe('audio/ogg');
    const recordingUrl = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body.recording_url as string;
    expect((await fetch(recordingUrl)).status).toBe(200);

    const tampered = new URL(recordingUrl);
    tampered.searchParams.set('X-Amz-Expires', '604800');
    const bad = await fetch(tampered);
    expect(bad.status).toBe(403);
    expect(await bad.text()).toContain('SignatureDoesNotMatch');

    const otherKey = new URL(recordingUrl);
    otherKey.pathname = otherKey.pathname.replace('.ogg', '.wav');
    expect((await fetch(otherKey)).status).toBe(403);

    // Signed four hours and a minute ago, valid four hours: expired.
    const client = s3Client(tp.config);
    const expired = await getSignedUrl(client, new GetObjectCommand({ Bucket: s3.bucket, Key: key }), {
      expiresIn: 4 * 3600,
      signingDate: new Date(Date.now() - 4 * 3600_000 - 60_000),
    });
    const refused = await fetch(expired);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('Request has expired');
  });

  it('keeps the HMAC-signed link working for S3 recordings by redirecting to a presigned URL', async () => {
    const id = await newCall();
    const body = audio(1000);
    expect((await upload(id, body, 'audio/wav')).status).toBe(204);
    const link = signedUrl(tp.platform.services, 'recording-read', id, 600);
    const res = await fetch(link, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toContain(`${s3.url}/${s3.bucket}/recordings/`);
    const followed = await fetch(link);
    expect(Buffer.from(await followed.arrayBuffer()).equals(body)).toBe(true);
  });

  it('answers 503 when the store fails, so the worker retries; the retry stores the file', async () => {
    const id = await newCall();
    const body = audio(2000);
    s3.failNext(10); // more than the SDK's own retries
    const failed = await upload(id, body, 'audio/wav');
    expect(failed.status).toBe(503);
    expect(failed.headers.get('retry-after')).toBe('5');
    expect((await failed.json()) as { type: string }).toMatchObject({ type: 'service_unavailable' });
    const [row] = await tp.sql`select recording_key from calls where id = ${id}`;
    expect(row!.recording_key).toBeNull();
    s3.failNext(0);
    expect((await upload(id, body, 'audio/wav')).status).toBe(204);
    expect(s3.objects.get(`recordings/${org.orgId}/${id}.wav`)?.body.equals(body)).toBe(true);
  });

  it('deletes a recording from S3 (the retention job), and a second delete is no error', async () => {
    const id = await newCall();
    expect((await upload(id, audio(2048), 'audio/wav')).status).toBe(204);
    const [row] = await tp.sql`select recording_key from calls where id = ${id}`;
    const key = row!.recording_key as string;
    expect(s3.objects.has(`recordings/${org.orgId}/${id}.wav`)).toBe(true);
    expect(await deleteRecording(tp.platform.services, key)).toBe(true);
    expect(s3.objects.has(`recordings/${org.orgId}/${id}.wav`)).toBe(false);
    expect(await deleteRecording(tp.platform.services, key)).toBe(true);
    // A key of a bucket this deployment does not have is kept, not forgotten.
    expect(await deleteRecording(tp.platform.services, 's3://another-bucket/recordings/x.wav')).toBe(false);
  });
});
