// Re-ingesting a knowledge source in place (POST …/sources/{source_id}/reingest) on a real platform (database,
// pg-boss): a URL source is crawled again from a local site served here, whose page is held open so the test
// can look at the source while the job runs (previous chunks still searched, a second request refused); a
// failed re-read keeps the previous chunks; text sources are parsed again from their stored content with the
// base's current chunk size; other organisations get 404.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { knowledgeConfigFor, searchChunks } from './search.ts';
import { tokensUsed } from './queries.ts';

let tp: TestPlatform;
let key: string;
let orgId: string;

// The site's one page: its text and status. While a hold is set, the page's request waits for its release.
const page = { text: '', status: 200 };
let gate: { reach(): void; released: Promise<void> } | null = null;
let site: { url: string; close(): Promise<void> };

/** Holds the next requests for the page; `reached` resolves when the crawler asks for it. */
function hold() {
  let release!: () => void;
  let reach!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  gate = { reach, released: new Promise<void>((r) => (release = r)) };
  return {
    reached,
    release: () => {
      gate = null;
      release();
    },
  };
}

function startSite(): Promise<typeof site> {
  const server = http.createServer((req, res) => {
    if (req.url !== '/page') {
      res.writeHead(404, { 'content-type': 'text/plain' });
      return res.end('not found');
    }
    const answer = () => {
      res.writeHead(page.status, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html><head><title>Acme</title></head><body><main><h1>Opening hours</h1><p>${page.text}</p></main></body></html>`);
    };
    if (!gate) return answer();
    gate.reach();
    void gate.released.then(answer);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => {
          server.closeAllConnections();
          return new Promise((r) => server.close(() => r()));
        },
      }),
    ),
  );
}

beforeAll(async () => {
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1', KB_JOB_RETRY_DELAY_SECONDS: 1 });
  ({ key, orgId } = await tp.createOrg('kb-reingest'));
  site = await startSite();
});
afterAll(async () => {
  await site?.close();
});

async function post(path: string, fields: Record<string, string>, k = key) {
  const form = new FormData();
  for (const [name, v] of Object.entries(fields)) form.append(name, v);
  const res = await fetch(tp.url + path, { method: 'POST', headers: { authorization: `Bearer ${k}` }, body: form });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const reingest = (kbId: string, sourceId: string, k = key) => tp.request('post', `/v1/knowledge-bases/${kbId}/sources/${sourceId}/reingest`, { key: k });

async function waitJob(kbId: string, jobId: string) {
  for (;;) {
    const res = await tp.request('get', `/v1/knowledge-bases/${kbId}/jobs/${jobId}`, { key });
    expect(res.status).toBe(200);
    if (res.body.status === 'succeeded' || res.body.status === 'failed') return res.body;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const getSource = async (kbId: string, sourceId: string) => (await tp.request('get', `/v1/knowledge-bases/${kbId}/sources/${sourceId}`, { key })).body;
const chunkText = async (sourceId: string) =>
  (await tp.sql<{ content: string }[]>`select content from knowledge_chunks where source_id = ${sourceId} order by ordinal`).map((c) => c.content).join('\n');
const search = (kbId: string, q: string) => searchChunks(tp.sql, orgId, [kbId], q, { topK: 3, maxTokens: 2000 });

describe('re-ingesting a URL source', () => {
  let kbId: string;
  let sourceId: string;

  beforeAll(async () => {
    page.text = 'The shop opens at nine and closes at marmalade o clock on weekdays.';
    const res = await post('/v1/knowledge-bases/sources', { type: 'url', source: `${site.url}/page`, mode: 'stuff' });
    expect(res.status).toBe(201);
    kbId = res.body.source.kb_id;
    sourceId = res.body.source.source_id;
    expect((await waitJob(kbId, res.body.job.job_id)).status).toBe('succeeded');
  }, 60_000);

  it('reads the page again under the same id, searching the previous chunks until the new ones replace them', async () => {
    const before = await getSource(kbId, sourceId);
    expect(before).toMatchObject({ status: 'ready', chunk_count: 1 });
    const usedBefore = await tokensUsed(tp.sql, orgId);
    expect(usedBefore).toBe(before.token_count);

    page.text = 'The shop now opens at ten and closes at porridge o clock on weekdays, and on Saturdays too.';
    const { reached, release } = hold();

    const res = await reingest(kbId, sourceId);
    expect(res.status).toBe(202);
    expect(res.body.source).toMatchObject({ source_id: sourceId, kb_id: kbId, status: 'queued', error_message: null, chunk_count: 1 });
    expect(res.body.job).toMatchObject({ source_id: sourceId, status: 'queued', attempts: 0 });
    expect(res.body.message).toContain(`/v1/knowledge-bases/${kbId}/jobs/${res.body.job.job_id}`);

    // The crawler is now waiting on the page: the source is processing and still answers from its previous chunks.
    await reached;
    expect(await getSource(kbId, sourceId)).toMatchObject({ status: 'processing', chunk_count: 1, token_count: before.token_count });
    expect((await search(kbId, 'When does the shop close? marmalade'))[0]?.content).toContain('marmalade');
    expect((await knowledgeConfigFor(tp.sql, orgId, [kbId], 8000)).stuffed_context).toContain('marmalade');
    expect(await tokensUsed(tp.sql, orgId)).toBe(usedBefore);
    expect((await tp.request('get', `/v1/knowledge-bases/${kbId}`, { key })).body.total_tokens).toBe(before.token_count);

    // A second re-ingestion while one runs is refused.
    const again = await reingest(kbId, sourceId);
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/already being ingested \(status processing\)/);

    release();
    const job = await waitJob(kbId, res.body.job.job_id);
    expect(job).toMatchObject({ status: 'succeeded', attempts: 1, error: null });
    const after = await getSource(kbId, sourceId);
    expect(after).toMatchObject({ source_id: sourceId, status: 'ready', error_message: null, chunk_count: 1 });
    expect(after.created_at).toBe(before.created_at);
    const text = await chunkText(sourceId);
    expect(text).toContain('porridge');
    expect(text).not.toContain('marmalade');
    expect(await search(kbId, 'marmalade')).toEqual([]);
    expect((await search(kbId, 'porridge'))[0]?.source_id).toBe(sourceId);
    expect(await tokensUsed(tp.sql, orgId)).toBe(after.token_count);
    expect((await tp.request('get', `/v1/knowledge-bases/${kbId}`, { key })).body).toMatchObject({ total_tokens: after.token_count, sources: [{ source_id: sourceId }] });
    // A new job; the first one stays as it was.
    const jobs = await tp.sql<{ status: string }[]>`select status from knowledge_jobs where source_id = ${sourceId} order by created_at`;
    expect(jobs.map((j) => j.status)).toEqual(['succeeded', 'succeeded']);

    const [audit] = await tp.sql<{ action: string; resource_id: string; details: Record<string, unknown> }[]>`
      select action, resource_id, details from audit_events where org_id = ${orgId} and action = 'knowledge_source.reingest' order by created_at desc limit 1`;
    expect(audit).toMatchObject({ resource_id: sourceId, details: { kb_id: kbId, type: 'url', job_id: res.body.job.job_id, previous_status: 'ready' } });
  }, 60_000);

  it('keeps the previous chunks when the page cannot be read, and says so', async () => {
    const before = await getSource(kbId, sourceId);
    const used = await tokensUsed(tp.sql, orgId);
    page.status = 404;
    try {
      const res = await reingest(kbId, sourceId);
      expect(res.status).toBe(202);
      const job = await waitJob(kbId, res.body.job.job_id);
      expect(job.status).toBe('failed');
      expect(job.error).toMatch(/No page of .* could be read/);
      const after = await getSource(kbId, sourceId);
      expect(after).toMatchObject({ status: 'error', chunk_count: before.chunk_count, token_count: before.token_count });
      expect(after.error_message).toMatch(/No page of .* could be read.*\(the previous content, 1 chunks, is still searched\)$/);
      expect(await chunkText(sourceId)).toContain('porridge');
      expect((await search(kbId, 'porridge'))[0]?.source_id).toBe(sourceId);
      expect(await tokensUsed(tp.sql, orgId)).toBe(used);
    } finally {
      page.status = 200;
    }
    // From error it may be re-ingested again, and then it is ready with the page's text.
    page.text = 'Closing time is now at crumpet o clock.';
    const res = await reingest(kbId, sourceId);
    expect(res.status).toBe(202);
    expect(res.body.source).toMatchObject({ status: 'queued', error_message: null });
    expect((await waitJob(kbId, res.body.job.job_id)).status).toBe('succeeded');
    expect(await getSource(kbId, sourceId)).toMatchObject({ status: 'ready', error_message: null });
    expect(await chunkText(sourceId)).toContain('crumpet');
  }, 60_000);

  it('queues one job for concurrent requests', async () => {
    const results = await Promise.all([reingest(kbId, sourceId), reingest(kbId, sourceId), reingest(kbId, sourceId)]);
    expect(results.map((r) => r.status).sort()).toEqual([202, 409, 409]);
    const job = results.find((r) => r.status === 202)!.body.job;
    expect((await waitJob(kbId, job.job_id)).status).toBe('succeeded');
    const [open] = await tp.sql<{ n: number }[]>`select count(*)::int as n from knowledge_jobs where source_id = ${sourceId} and status not in ('succeeded', 'failed')`;
    expect(open!.n).toBe(0);
  }, 60_000);
});

describe('re-ingesting a text source', () => {
  it('parses the stored text again with the base\'s current chunk size', async () => {
    const text = Array.from({ length: 40 }, (_, i) => `Paragraph ${i + 1} tells how the kettle descaling programme number ${i + 1} works.`).join('\n\n');
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', source: text, chunk_size: '512' });
    expect(res.status).toBe(201);
    const { kb_id: kbId, source_id: sourceId } = res.body.source;
    expect((await waitJob(kbId, res.body.job.job_id)).status).toBe('succeeded');
    const before = await getSource(kbId, sourceId);

    expect((await tp.request('patch', `/v1/knowledge-bases/${kbId}`, { key, body: { chunk_size: 64 } })).status).toBe(200);
    const again = await reingest(kbId, sourceId);
    expect(again.status).toBe(202);
    expect(again.body.job.progress.pages_found).toBe(1);
    expect((await waitJob(kbId, again.body.job.job_id)).status).toBe('succeeded');
    const after = await getSource(kbId, sourceId);
    expect(after).toMatchObject({ source_id: sourceId, status: 'ready', type: 'text', source: before.source });
    expect(after.chunk_count).toBeGreaterThan(before.chunk_count);
    expect(await chunkText(sourceId)).toContain('programme number 40 works');
  }, 60_000);

  it('is a 409 when the content of a text source is not stored', async () => {
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', source: 'The warranty lasts three years.' });
    const { kb_id: kbId, source_id: sourceId } = res.body.source;
    expect((await waitJob(kbId, res.body.job.job_id)).status).toBe('succeeded');
    await tp.sql`update knowledge_sources set payload = null where id = ${sourceId}`;
    const again = await reingest(kbId, sourceId);
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/content of this source is not stored; add the file or text again/);
    expect(await getSource(kbId, sourceId)).toMatchObject({ status: 'ready', error_message: null });
  }, 60_000);
});

describe('who may re-ingest', () => {
  it('answers 404 for another organisation\'s base or source, an unknown source, and 422 for a malformed id', async () => {
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', source: 'Deliveries take two days.' });
    const { kb_id: kbId, source_id: sourceId } = res.body.source;
    expect((await waitJob(kbId, res.body.job.job_id)).status).toBe('succeeded');
    const other = await tp.createOrg('kb-reingest-other');
    const foreign = await reingest(kbId, sourceId, other.key);
    expect(foreign.status).toBe(404);
    expect(foreign.body.detail).toBe('Knowledge source not found');
    // The other organisation's own base with this org's source id.
    const own = await tp.request('post', '/v1/knowledge-bases', { key: other.key, body: { name: 'theirs' } });
    expect((await reingest(own.body.kb_id, sourceId, other.key)).status).toBe(404);
    expect((await reingest(kbId, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await reingest(kbId, 'not-a-uuid')).status).toBe(422);
    expect(await getSource(kbId, sourceId)).toMatchObject({ status: 'ready' });
    const [jobs] = await tp.sql<{ n: number }[]>`select count(*)::int as n from knowledge_jobs where source_id = ${sourceId}`;
    expect(jobs!.n).toBe(1);
  }, 60_000);
});
