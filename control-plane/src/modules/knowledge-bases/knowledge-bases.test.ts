// Knowledge bases end to end on a real platform (database, pg-boss): crawling a local site served here
// (sitemap, robots.txt, redirect loop, huge page, private-IP links, non-HTML), real PDF and DOCX files, chunking,
// updates and the worker's search (validation, budget, deletion and tenancy in knowledge-bases-rules.test.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { candidateQuery, knowledgeConfigFor, searchChunks } from './search.ts';
import { chunkSections, countTokens } from './chunk.ts';
import { embeddingsConfig, rrf } from './vector.ts';
import { startTestPlatform } from '../../../../test/support/platform.ts';
import { chunksOf, key, makeDocx, makePdf, orgId, post, site, tp, waitJob } from './knowledge-bases.test-support.ts';

describe('crawling a site', () => {
  it('follows same-site links and the sitemap, respects robots.txt, and guards every URL', async () => {
    const res = await post('/v1/knowledge-bases/sources', { type: 'url', source: `${site.url}/` });
    expect(res.status).toBe(201);
    expect(res.body.message).toMatch(/poll GET \/v1\/knowledge-bases\/[0-9a-f-]+\/jobs\/[0-9a-f-]+/);
    expect(res.body.source).toMatchObject({ type: 'url', status: 'queued', source: `${site.url}/`, token_count: 0 });
    const kbId = res.body.source.kb_id;
    const job = await waitJob(kbId, res.body.job.job_id);
    expect(job.status).toBe('succeeded');
    // Fetched: home, pricing (three spellings, one page), warranty (sitemap only).
    expect(job.progress.pages_fetched).toBe(3);
    // Failed: the redirect loop, the huge page, the redirect to a private address.
    expect(job.progress.pages_failed).toBe(3);
    // Skipped: robots.txt, the PNG, the private-IP link.
    expect(job.progress.pages_skipped).toBe(3);
    expect(job.progress.pages_found).toBe(9);
    expect(job.timings.duration_ms).toBeGreaterThanOrEqual(0);
    expect(site.hits).not.toContain('/private/secret');
    expect(site.hits.filter((h) => h.startsWith('/pricing'))).toEqual(['/pricing']);

    const kb = (await tp.request('get', `/v1/knowledge-bases/${kbId}`, { key })).body;
    expect(kb).toMatchObject({ name: site.url.replace('http://', ''), mode: 'retrieval', chunk_size: 512, multilingual: false });
    const src = kb.sources[0];
    expect(src).toMatchObject({ status: 'ready', error_message: null });
    expect(kb.total_tokens).toBe(src.token_count);
    const chunks = await chunksOf(src.source_id);
    expect(chunks.length).toBe(src.chunk_count);
    const all = chunks.map((c) => `${c.heading}\n${c.content}`).join('\n');
    expect(all).toContain('42 euros');
    expect(all).toContain('seven years');
    for (const junk of ['NAVIGATIONMENU', 'SCRIPTTEXT', 'FOOTERTEXT', 'PRIVATE CONTENT', 'xxxxxxxx']) expect(all).not.toContain(junk);
    expect(chunks.find((c) => c.content.includes('42 euros'))).toMatchObject({ heading: 'Plans', url: `${site.url}/pricing` });

    const hits = await searchChunks(tp.sql, orgId, [kbId], 'How much does the Pro plan cost per month?', { topK: 3, maxTokens: 2000 });
    expect(hits[0]!.content).toContain('42 euros');
    expect(hits[0]!.score).toBeGreaterThan(0);
  }, 60_000);

  it('refuses a private or local URL at submission (422 at body.source)', async () => {
    for (const source of ['http://10.0.0.1/', 'http://localhost:8080/', 'ftp://example.com/x', 'not a url']) {
      const res = await post('/v1/knowledge-bases/sources', { type: 'url', source });
      expect(res.status, source).toBe(422);
      expect(res.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'source'], type: 'url_not_public', input: source })]);
    }
  });

  it('ends in error with an actionable message when no page can be read', async () => {
    // A port where nothing listens: robots.txt, the sitemap and the page all fail.
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const res = await post('/v1/knowledge-bases/sources', { type: 'url', source: `http://127.0.0.1:${port}/start` });
    const job = await waitJob(res.body.source.kb_id, res.body.job.job_id);
    expect(job).toMatchObject({ status: 'failed', attempts: 1 });
    const src = (await tp.request('get', `/v1/knowledge-bases/${res.body.source.kb_id}/sources/${res.body.source.source_id}`, { key })).body;
    expect(src.status).toBe('error');
    expect(src.error_message).toMatch(/No page of .* could be read: connection refused/);
  }, 30_000);
});

describe('files and text', () => {
  it('ingests real PDF, DOCX, Markdown, CSV, HTML and TXT files', async () => {
    const kb = await tp.request('post', '/v1/knowledge-bases', { key, body: { name: 'Docs', chunk_size: 128, mode: 'stuff' } });
    expect(kb.status).toBe(201);
    const kbId = kb.body.kb_id;
    const files: [Buffer, string, string, string][] = [
      [await makePdf(['Kettle manual', 'The kettle boils one litre of water in 90 seconds.']), 'manual.pdf', 'application/pdf', '90 seconds'],
      [await makeDocx(), 'returns.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', '45 days'],
      [Buffer.from('# Shipping\n\n## Europe\n\nParcels to Europe arrive within 3 working days.\n'), 'shipping.md', 'text/markdown', '3 working days'],
      [Buffer.from('product,colour,price\nkettle,red,30\ntoaster,blue,25\n'), 'prices.csv', 'text/csv', 'product: toaster; colour: blue; price: 25'],
      [Buffer.from('<html><body><h1>Stores</h1><p>Our Lyon store opens at 9 am.</p></body></html>'), 'stores.html', 'text/html', 'Lyon store opens at 9 am'],
      [Buffer.from('Gift cards never expire.\n\nThey can be used online and in stores.'), 'gifts.txt', 'text/plain', 'never expire'],
    ];
    const results = [];
    for (const [data, name, type, needle] of files) {
      const res = await post(`/v1/knowledge-bases/${kbId}/sources`, { type: 'file', file: [new Blob([new Uint8Array(data)], { type }), name] });
      expect(res.status, name).toBe(201);
      expect(res.body.source).toMatchObject({ type: 'file', file_name: name, file_size: data.length, source: name, status: 'queued' });
      results.push({ res, needle, name });
    }
    for (const { res, needle, name } of results) {
      const job = await waitJob(kbId, res.body.job.job_id);
      expect(job.status, `${name}: ${job.error}`).toBe('succeeded');
      expect(job.progress).toMatchObject({ pages_found: 1, pages_fetched: 1, chunks: expect.any(Number) });
      const text = (await chunksOf(res.body.source.source_id)).map((c) => c.content).join('\n');
      expect(text, name).toContain(needle);
    }
    const docx = await chunksOf(results[1]!.res.body.source.source_id);
    expect(docx[0]!.heading).toBe('Returns policy › Refunds');
    const md = await chunksOf(results[2]!.res.body.source.source_id);
    expect(md[0]!.heading).toBe('Shipping › Europe');
    const cfg = await knowledgeConfigFor(tp.sql, orgId, [kbId], 8000);
    expect(cfg.mode).toBe('stuff');
    expect(cfg.stuffed_context).toContain('45 days');
    expect(cfg.stuffed_context).toContain('[returns.docx › Returns policy › Refunds]');
    // Over the stuffing limit the call searches instead of cutting the base.
    expect(await knowledgeConfigFor(tp.sql, orgId, [kbId], 10)).toEqual({ knowledge_base_ids: [kbId], mode: 'retrieve' });
  }, 60_000);

  it('takes the text of a text source in `source`, as the spec names the field, with `text` as an alias', async () => {
    const words = 'Parking is free for visitors on the second floor.';
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', source: words });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.source).toMatchObject({ type: 'text', mime_type: 'text/plain', source: words });
    expect((await waitJob(res.body.source.kb_id, res.body.job.job_id)).status).toBe('succeeded');
    // Both fields at once are fine when they say the same.
    const both = await post(`/v1/knowledge-bases/${res.body.source.kb_id}/sources`, { type: 'text', source: words, text: words });
    expect(both.status).toBe(201);
    // A text source is not held to a URL's length.
    const long = await post(`/v1/knowledge-bases/${res.body.source.kb_id}/sources`, { type: 'text', source: 'Opening hours. '.repeat(300) });
    expect(long.status, JSON.stringify(long.body)).toBe(201);
  });

  it('ingests inline text and names the source', async () => {
    const res = await post('/v1/knowledge-bases/sources', {
      type: 'text',
      text: 'Our support line is open from 8 am to 6 pm on weekdays.',
      name: 'Support hours',
      file_name: 'hours',
    });
    expect(res.status).toBe(201);
    expect(res.body.source).toMatchObject({
      type: 'text',
      file_name: 'hours',
      mime_type: 'text/plain',
      source: 'Our support line is open from 8 am to 6 pm on weekdays.',
    });
    const job = await waitJob(res.body.source.kb_id, res.body.job.job_id);
    expect(job.status).toBe('succeeded');
    const kb = (await tp.request('get', `/v1/knowledge-bases/${res.body.source.kb_id}`, { key })).body;
    expect(kb.name).toBe('Support hours');
  });
});

describe('chunking', () => {
  it('cuts by tokens along paragraphs and sentences, with overlap, never over chunk_size', () => {
    const text = Array.from({ length: 30 }, (_, i) => `Sentence ${i} talks about topic ${i} in some detail.`).join(' ');
    const chunks = chunkSections([{ heading: 'Topics', text: `${text}\n\nA closing paragraph.` }], 64, 16);
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) {
      expect(c.token_count).toBeLessThanOrEqual(64);
      expect(c.token_count).toBe(countTokens(`Topics\n${c.content}`));
      expect(c.content).toMatch(/^(Sentence \d+|A closing)/); // starts on a sentence boundary
    }
    // Consecutive chunks share their boundary sentence.
    const last = chunks[0]!.content.split('. ').at(-1)!;
    expect(chunks[1]!.content).toContain(last.replace(/\.$/, ''));
  });
});

describe('candidate selection', () => {
  it('ORs the rarest words within the budget, or ANDs them when even the rarest is too common', () => {
    const terms = [
      { lexeme: 'batteri', ndoc: 40 },
      { lexeme: 'long', ndoc: 900 },
      { lexeme: 'last', ndoc: 300 },
      { lexeme: 'nimbus', ndoc: 0 },
    ];
    expect(candidateQuery(terms, 10_000, 1000)).toBe("'batteri' | 'last'");
    expect(
      candidateQuery(
        [
          { lexeme: 'a', ndoc: 5000 },
          { lexeme: 'b', ndoc: 4000 },
          { lexeme: 'c', ndoc: 3000 },
        ],
        10_000,
        1000,
      ),
    ).toBe("'c' & 'b' & 'a'"); // 3000 × 0.4 × 0.5 = 600
    expect(candidateQuery([{ lexeme: 'x', ndoc: 0 }], 10)).toBe('');
  });

  it('keeps document frequencies with ingestion and deletion', async () => {
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', text: 'Zebras graze. Zebras run.\n\nGiraffes eat leaves.' });
    await waitJob(res.body.source.kb_id, res.body.job.job_id);
    const terms = () =>
      tp.sql<{ lexeme: string; ndoc: number }[]>`select lexeme, ndoc from knowledge_terms where kb_id = ${res.body.source.kb_id} order by lexeme`;
    expect(await terms()).toContainEqual({ lexeme: 'zebra', ndoc: 1 });
    await tp.request('delete', `/v1/knowledge-bases/${res.body.source.kb_id}/sources/${res.body.source.source_id}`, { key });
    expect(await terms()).toEqual([]);
  });
});

describe('updating a base', () => {
  it('PATCH changes settings; multilingual re-indexes the chunks with the simple configuration', async () => {
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', text: 'The runners were running quickly through the gardens.' });
    const kbId = res.body.source.kb_id;
    await waitJob(kbId, res.body.job.job_id);
    // english stems: "running" finds "runners were running"
    expect(await searchChunks(tp.sql, orgId, [kbId], 'run', { topK: 3, maxTokens: 1000 })).toHaveLength(1);
    const patched = await tp.request('patch', `/v1/knowledge-bases/${kbId}`, { key, body: { multilingual: true, mode: 'stuff', name: 'Renamed' } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      kb_id: kbId,
      name: 'Renamed',
      multilingual: true,
      mode: 'stuff',
      sources: [expect.objectContaining({ status: 'ready' })],
    });
    // simple: no stemming any more, exact words only
    expect(await searchChunks(tp.sql, orgId, [kbId], 'run', { topK: 3, maxTokens: 1000 })).toEqual([]);
    expect(await searchChunks(tp.sql, orgId, [kbId], 'running', { topK: 3, maxTokens: 1000 })).toHaveLength(1);
    const bad = await tp.request('patch', `/v1/knowledge-bases/${kbId}`, { key, body: { language: 'klingon' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['body', 'language'], type: 'enum' });
  });
});

describe('optional vector search (pgvector)', () => {
  it('fuses ranked lists by reciprocal rank', () => {
    const fused = rrf(
      [
        [{ id: 'a' }, { id: 'b' }, { id: 'c' }],
        [{ id: 'c' }, { id: 'd' }],
      ],
      (x) => x.id,
    );
    expect(fused.map((x) => x.id)).toEqual(['c', 'a', 'b', 'd']); // c: 1/63 + 1/61 beats a: 1/61
    expect(fused[0]!.score).toBeCloseTo(1 / 63 + 1 / 61, 10);
    expect(embeddingsConfig({ KB_EMBEDDINGS_MODEL: 'm', KB_EMBEDDINGS_DIMENSIONS: 8 } as never)).toBeNull();
  });

  it('stores chunk vectors and finds by meaning what full text misses (when the database has pgvector)', async (ctx) => {
    const [avail] = await tp.sql<{ n: number }[]>`select count(*)::int as n from pg_available_extensions where name = 'vector'`;
    if (!avail!.n) {
      ctx.skip("pgvector is not installed in this PostgreSQL (neither Debian's PostgreSQL 15 nor the embedded server ships it)");
      return;
    }
    // A local embeddings API: bag of words hashed into 8 dimensions (deterministic, the real wire format).
    const vec = (t: string) => {
      const v = new Array(8).fill(0);
      for (const w of t.toLowerCase().match(/[a-z]+/g) ?? []) v[[...w].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) % 8, 7)] += 1;
      return v;
    };
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const { input } = JSON.parse(body) as { input: string[] };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: input.map((t, index) => ({ index, embedding: vec(t) })) }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const vp = await startTestPlatform({ KB_EMBEDDINGS_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, KB_EMBEDDINGS_DIMENSIONS: 8 });
    try {
      const org = await vp.createOrg('vector');
      const form = new FormData();
      form.append('type', 'text');
      form.append('text', 'Kettles boil water.\n\nToasters brown bread.');
      const res = (await (
        await fetch(`${vp.url}/v1/knowledge-bases/sources`, { method: 'POST', headers: { authorization: `Bearer ${org.key}` }, body: form })
      ).json()) as any;
      for (;;) {
        const j = await vp.request('get', `/v1/knowledge-bases/${res.source.kb_id}/jobs/${res.job.job_id}`, { key: org.key });
        if (j.body.status === 'succeeded') break;
        expect(j.body.status).not.toBe('failed');
        await new Promise((r) => setTimeout(r, 50));
      }
      const [n] = await vp.sql<{ n: number }[]>`select count(*)::int as n from knowledge_embeddings where kb_id = ${res.source.kb_id}`;
      expect(n!.n).toBe(1);
      const emb = embeddingsConfig(vp.config)!;
      expect(await searchChunks(vp.sql, org.orgId, [res.source.kb_id], 'zzz qqq', { topK: 2, maxTokens: 500 })).toEqual([]);
      const hybrid = await searchChunks(vp.sql, org.orgId, [res.source.kb_id], 'zzz qqq', { topK: 2, maxTokens: 500, embeddings: emb });
      expect(hybrid[0]!.content).toContain('Kettles boil water.');
    } finally {
      await vp.close();
      server.close();
    }
  });
});
