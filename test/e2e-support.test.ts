// The helpers the e2e files share (test/support/e2e.ts), checked here because the e2e files need LiveKit to run.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, until, untilEvery } from './support/e2e.ts';

let server: http.Server;
let base: string | undefined;
let key = '';
const seen: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (req.url === '/json') res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      else if (req.url === '/empty') res.writeHead(204, { 'content-type': 'application/json' }).end();
      else res.writeHead(404, { 'content-type': 'text/plain' }).end('{"not":"parsed"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  key = 'sk_test';
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('apiClient', () => {
  // Created before beforeAll has set base and key: the getters read them per request.
  const api = apiClient(() => base, () => key);

  it('sends the bearer key and a JSON body, and parses a JSON answer', async () => {
    const res = await api('POST', '/json', { a: 1 }, { 'x-extra': 'yes' });
    expect(res).toMatchObject({ status: 200, body: { ok: true } });
    expect(res.headers.get('content-type')).toBe('application/json');
    const req = seen.at(-1)!;
    expect(req).toMatchObject({ method: 'POST', url: '/json', body: '{"a":1}' });
    expect(req.headers).toMatchObject({ authorization: 'Bearer sk_test', 'content-type': 'application/json', 'x-extra': 'yes' });
  });

  it('sends no content type without a body, and leaves empty and non-JSON answers as text', async () => {
    expect(await api('DELETE', '/empty')).toMatchObject({ status: 204, body: '' });
    expect(seen.at(-1)!.headers['content-type']).toBeUndefined();
    expect(await api('GET', '/text')).toMatchObject({ status: 404, body: '{"not":"parsed"}' });
  });
});

describe('until', () => {
  it('returns the first truthy value, from a sync or async function', async () => {
    let n = 0;
    expect(await until('n to reach 3', async () => ++n >= 3 && n, 5_000, 1)).toBe(3);
    let m = 0;
    expect(await untilEvery(1)('m to reach 2', () => ++m >= 2 && 'done')).toBe('done');
  });

  it('throws once the time is up, naming what it waited for', async () => {
    await expect(until('never', async () => false, 30, 5)).rejects.toThrow('timed out waiting for never');
    await expect(untilEvery(5, 30)('nothing', () => null)).rejects.toThrow('timed out waiting for nothing');
  });
});
