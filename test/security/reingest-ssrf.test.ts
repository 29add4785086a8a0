// Re-ingesting a URL source fetches its stored URL again, days after it was checked. The attack: a host that was
// public when the source was added and now points at a private address (DNS rebinding, a re-pointed domain), so
// that a re-ingest would read an internal service into the tenant's knowledge base. The stored URL earns no
// trust: the re-ingest's fetch goes through the same connection-time address check as the first one, so the
// internal service is never asked, the source ends in `error` naming the block, and it keeps its previous chunks.
//
// The platform admits 127.0.0.1 (the site the source was added from, standing for a public host); the stored
// URL is then re-pointed at `localhost`, which resolves to a loopback address the allowlist does not name.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';

let tp: TestPlatform;
let key: string;
let server: http.Server;
let port: number;
const requests: string[] = [];

beforeAll(async () => {
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1', KB_JOB_RETRY_DELAY_SECONDS: 1 });
  ({ key } = await tp.createOrg('kb-reingest-ssrf'));
  server = http.createServer((req, res) => {
    requests.push(`${req.headers.host} ${req.url}`);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><html><body><main><h1>Hours</h1><p>We open at nine and close at seven on weekdays.</p></main></body></html>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

async function waitJob(kbId: string, jobId: string) {
  for (;;) {
    const res = await tp.request('get', `/v1/knowledge-bases/${kbId}/jobs/${jobId}`, { key });
    expect(res.status).toBe(200);
    if (res.body.status === 'succeeded' || res.body.status === 'failed') return res.body;
    await new Promise((r) => setTimeout(r, 50));
  }
}

it('a re-ingest whose stored host now resolves to a private address is refused at the connection, and the source keeps its chunks', async () => {
  const form = new FormData();
  form.append('type', 'url');
  form.append('source', `http://127.0.0.1:${port}/page`);
  form.append('mode', 'stuff');
  const added = await fetch(`${tp.url}/v1/knowledge-bases/sources`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  expect(added.status).toBe(201);
  const { source, job } = (await added.json()) as { source: { kb_id: string; source_id: string }; job: { job_id: string } };
  expect((await waitJob(source.kb_id, job.job_id)).status).toBe('succeeded');
  expect(requests.some((r) => r.endsWith(' /page'))).toBe(true);

  // The host now resolves somewhere private.
  await tp.sql`update knowledge_sources set source = ${`http://localhost:${port}/page`} where id = ${source.source_id}`;
  requests.length = 0;

  const res = await tp.request('post', `/v1/knowledge-bases/${source.kb_id}/sources/${source.source_id}/reingest`, { key });
  expect(res.status).toBe(202);
  const failed = await waitJob(source.kb_id, res.body.job.job_id);
  expect(failed.status).toBe('failed');

  // Not one request reached the private address: not the page, not robots.txt, not a sitemap.
  expect(requests).toEqual([]);
  const after = (await tp.request('get', `/v1/knowledge-bases/${source.kb_id}/sources/${source.source_id}`, { key })).body;
  expect(after.status).toBe('error');
  expect(after.error_message).toMatch(/blocked|not allowed|private|public/i);
  expect(after.chunk_count).toBe(1);
  const [chunk] = await tp.sql<{ content: string }[]>`select content from knowledge_chunks where source_id = ${source.source_id}`;
  expect(chunk?.content).toContain('close at seven');
}, 90_000);
