// Byte ranges on GET /v1/recordings/{call_id} (local storage) on a real platform: each form of a single range,
// 416 past the end, several ranges and malformed or hostile headers answered with the whole file (never a
// 5xx), and the signature checked before any range.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { request } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { recordingFile, signedUrl } from './recordings.ts';

let tp: TestPlatform;
let url: string;
// Every byte says where it is (mod 251), so a wrong offset cannot go unnoticed.
const SIZE = 10_000;
const audio = Buffer.from(Array.from({ length: SIZE }, (_, i) => i % 251));

beforeAll(async () => {
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1' });
  const org = await tp.createOrg('ranges');
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'llama3', base_url: 'http://127.0.0.1:9/v1' } });
  const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Ava', llm_id: model.body.id } });
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, status, started_at) values (${org.orgId}, ${agent.body.id}, 'web', 'in_progress', now()) returning id`;
  const callId = row!.id as string;
  const key = `${org.orgId}/${callId}.wav`;
  const file = recordingFile(tp.platform.services, key);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, audio);
  await tp.sql`update calls set recording_key = ${key} where id = ${callId}`;
  url = signedUrl(tp.platform.services, 'recording-read', callId, 600);
});

/** A GET with raw headers (node:http sends a header exactly as given, where fetch might normalise it). */
function get(headers: Record<string, string>, target = url): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(target, { headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function expectFull(headers: Record<string, string>) {
  const res = await get(headers);
  expect(res.status, JSON.stringify(headers)).toBe(200);
  expect(res.headers['accept-ranges']).toBe('bytes');
  expect(res.headers['content-range']).toBeUndefined();
  expect(res.headers['content-length']).toBe(String(SIZE));
  expect(res.body.equals(audio)).toBe(true);
}

async function expectPartial(range: string, start: number, end: number) {
  const res = await get({ range });
  expect(res.status, range).toBe(206);
  expect(res.headers['accept-ranges']).toBe('bytes');
  expect(res.headers['content-type']).toBe('audio/wav');
  expect(res.headers['content-range']).toBe(`bytes ${start}-${end}/${SIZE}`);
  expect(res.headers['content-length']).toBe(String(end - start + 1));
  expect(res.body.equals(audio.subarray(start, end + 1))).toBe(true);
}

describe('recording byte ranges', () => {
  it('answers the whole file with Accept-Ranges when no range is asked', async () => {
    await expectFull({});
  });

  it('answers 206 for first-last, first- and -suffix ranges', async () => {
    await expectPartial('bytes=0-0', 0, 0);
    await expectPartial('bytes=100-1099', 100, 1099);
    await expectPartial('bytes=9000-20000', 9000, SIZE - 1);
    await expectPartial('bytes=4321-', 4321, SIZE - 1);
    await expectPartial('bytes=0-', 0, SIZE - 1);
    await expectPartial('bytes=-500', SIZE - 500, SIZE - 1);
    await expectPartial(`bytes=-${SIZE * 3}`, 0, SIZE - 1);
    await expectPartial(`bytes=${SIZE - 1}-${SIZE - 1}`, SIZE - 1, SIZE - 1);
  });

  it('answers 416 with the size for a range past the end', async () => {
    for (const range of [`bytes=${SIZE}-`, `bytes=${SIZE}-${SIZE + 10}`, 'bytes=-0', `bytes=${'9'.repeat(60)}-`]) {
      const res = await get({ range });
      expect(res.status, range).toBe(416);
      expect(res.headers['content-range']).toBe(`bytes */${SIZE}`);
      expect(JSON.parse(res.body.toString('utf8'))).toMatchObject({ type: 'range_not_satisfiable', detail: `The requested range is outside the recording, which has ${SIZE} bytes` });
    }
  });

  it('answers several ranges, other units, If-Range and malformed or hostile headers with the whole file', async () => {
    for (const range of [
      'bytes=0-9,20-29',
      'bytes=0-1,0-1,0-1,0-1,0-1,0-1,0-1,0-1',
      'items=0-9',
      'bytes=9-0',
      'bytes=abc',
      'bytes=-',
      'bytes=',
      'bytes',
      '0-9',
      'bytes=1e3-2e3',
      'bytes=0x10-0x20',
      'bytes=-1-2',
      `bytes=0-${'9'.repeat(5000)}`,
      `bytes=${'0-1,'.repeat(2000)}0-1`,
      'bytes=\u00bd-1',
    ]) {
      await expectFull({ range });
    }
    await expectFull({ range: 'bytes=0-9', 'if-range': 'Wed, 21 Oct 2015 07:28:00 GMT' });
    // Numbers beyond 2^53 are still just numbers: clamped to the end.
    await expectPartial(`bytes=0-${'9'.repeat(60)}`, 0, SIZE - 1);
  });

  it('checks the signature before the range', async () => {
    const bad = new URL(url);
    bad.searchParams.set('signature', 'A'.repeat(43));
    for (const range of ['bytes=0-9', `bytes=${SIZE}-`, 'bytes=garbage']) {
      const res = await get({ range }, bad.toString());
      expect(res.status, range).toBe(403);
      expect(res.headers['content-range']).toBeUndefined();
    }
  });
});
