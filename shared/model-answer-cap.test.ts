// The decoded-bytes cap of every model client (shared/model-egress.ts, modelFetch; docs/security.md, "Bounded
// text"): a tenant's server sends a gzip bomb, 32 MiB once decoded and a few KiB on the wire. The agent test's
// cap (256 KiB) and the worker's streamed one (2 MiB, the default) both stop it with a clear error; an answer
// within the cap passes whole.
import http from 'node:http';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelAnswerTooLargeError, modelFetch } from './model-egress.ts';
import { MODEL_ANSWER_MAX_BYTES, MODEL_STREAM_MAX_BYTES } from './text-caps.ts';

const BOMB = zlib.gzipSync(Buffer.alloc(32 * 1024 * 1024, 'a'), { level: 9 });
let server: http.Server;
let base: string;
let bombSent = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/bomb') {
      bombSent++;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
      return res.end(BOMB);
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    res.end(zlib.gzipSync(JSON.stringify({ text: 'a'.repeat(100 * 1024) })));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const env = { SSRF_ALLOWLIST: '127.0.0.1' };

describe('model answers are cut at their decoded size', () => {
  it("refuses a gzip bomb past an agent test's 256 KiB and past the worker's 2 MiB", async () => {
    expect(BOMB.length).toBeLessThan(MODEL_ANSWER_MAX_BYTES);
    for (const cap of [MODEL_ANSWER_MAX_BYTES, undefined]) {
      const f = modelFetch({ baseUrl: base, tenant: true }, env, cap);
      const res = await f(`${base}/bomb`, { method: 'POST' });
      expect(res.status).toBe(200);
      const err = await res.text().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ModelAnswerTooLargeError);
      expect((err as Error).message).toBe(`the model's answer is larger than ${(cap ?? MODEL_STREAM_MAX_BYTES) / 1024} KiB once decoded`);
    }
    expect(bombSent).toBe(2);
  });

  it('passes an answer within the cap whole, decoded', async () => {
    const f = modelFetch({ baseUrl: base, tenant: true }, env, MODEL_ANSWER_MAX_BYTES);
    const res = await f(`${base}/ok`, { method: 'POST' });
    expect(((await res.json()) as { text: string }).text).toHaveLength(100 * 1024);
  });
});
