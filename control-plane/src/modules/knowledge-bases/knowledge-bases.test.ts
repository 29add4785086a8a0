// Knowledge bases end to end on a real platform (database, pg-boss): crawling a local site served here
// (sitemap, robots.txt, redirect loop, huge page, private-IP links, non-HTML), real PDF and DOCX files,
// validation (every 422 and 413), the token budget under concurrent jobs, deletion, retry after a crash,
// tenant isolation and the worker's search.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { Document, HeadingLevel, Packer, Paragraph } from 'docx';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { setTestHooks } from './jobs.ts';
import { erroredSources } from './queries.ts';
import { candidateQuery, knowledgeConfigFor, searchChunks } from './search.ts';
import { chunkSections, countTokens } from './chunk.ts';
import { embeddingsConfig, rrf } from './vector.ts';
import { startTestPlatform } from '../../../../test/support/platform.ts';

let tp: TestPlatform;
let key: string;
let orgId: string;
let site: { url: string; hits: string[]; close(): Promise<void> };
const WORKER = 'test-worker-token-0123456789abcdef0123';

const para = (topic: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${topic} detail number ${i + 1} explains how the ${topic} works in practice for our customers.`).join(' ');

function startSite(): Promise<typeof site> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const html = (body: string, head = '') => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html><head><title>Acme</title>${head}</head><body>${body}</body></html>`);
    };
    switch (req.url) {
      case '/robots.txt':
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(`User-agent: *\nDisallow: /private/\nSitemap: ${base}/sitemap.xml\n`);
      case '/sitemap.xml':
        res.writeHead(200, { 'content-type': 'application/xml' });
        return res.end(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${base}/warranty</loc></url></urlset>`);
      case '/':
        return html(
          `<nav><a href="/pricing">Pricing</a> NAVIGATIONMENU</nav><script>var SCRIPTTEXT = 1;</script>
           <main><article><h1>Acme Help Centre</h1><p>${para('help centre', 8)}</p>
           <p>Links: <a href="/pricing#plans">plans</a> <a href="/pricing?utm_source=home">pricing again</a>
           <a href="/private/secret">secret</a> <a href="/loop-a">loop</a> <a href="/huge">huge</a>
           <a href="/logo.png">logo</a> <a href="http://10.0.0.1/internal">intranet</a> <a href="/to-private">moved</a>
           <a href="https://elsewhere.example.com/">another site</a></p></article></main><footer>FOOTERTEXT</footer>`,
        );
      case '/pricing':
        return html(`<main><article><h1>Pricing</h1><h2>Plans</h2><p>The Pro plan costs 42 euros per month and includes priority support. ${para('pricing', 6)}</p></article></main>`);
      case '/warranty':
        return html(`<main><article><h1>Warranty</h1><p>Every kettle carries a warranty of seven years against limescale. ${para('warranty', 6)}</p></article></main>`);
      case '/private/secret':
        return html('<p>PRIVATE CONTENT</p>');
      case '/loop-a':
        res.writeHead(302, { location: '/loop-b' });
        return res.end();
      case '/loop-b':
        res.writeHead(302, { location: '/loop-a' });
        return res.end();
      case '/to-private':
        res.writeHead(302, { location: 'http://10.0.0.1/admin' });
        return res.end();
      case '/huge':
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end(`<p>${'x'.repeat(200 * 1024)}</p>`);
      case '/logo.png':
        res.writeHead(200, { 'content-type': 'image/png' });
        return res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
      default:
        res.writeHead(404, { 'content-type': 'text/plain' });
        return res.end('not found');
    }
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, close: () => new Promise((r) => server.close(() => r())) }),
    ),
  );
}

beforeAll(async () => {
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1', KB_CRAWL_MAX_PAGE_BYTES: 64 * 1024, KB_MAX_FILE_BYTES: 300_000, KB_MAX_TEXT_BYTES: 100_000, KB_JOB_RETRY_DELAY_SECONDS: 1 });
  ({ key, orgId } = await tp.createOrg('kb'));
  site = await startSite();
});
afterAll(async () => {
  setTestHooks(undefined);
  await site?.close();
});

async function post(path: string, fields: Record<string, string | Blob | [Blob, string]>, k = key) {
  const form = new FormData();
  for (const [name, v] of Object.entries(fields)) {
    if (Array.isArray(v)) form.append(name, v[0], v[1]);
    else form.append(name, v);
  }
  const res = await fetch(tp.url + path, { method: 'POST', headers: { authorization: `Bearer ${k}` }, body: form });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function waitJob(kbId: string, jobId: string, k = key) {
  for (;;) {
    const res = await tp.request('get', `/v1/knowledge-bases/${kbId}/jobs/${jobId}`, { key: k });
    expect(res.status).toBe(200);
    if (res.body.status === 'succeeded' || res.body.status === 'failed') return res.body;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const chunksOf = (sourceId: string) =>
  tp.sql<{ ordinal: number; heading: string; content: string; url: string | null; token_count: number }[]>`
    select ordinal, heading, content, url, token_count from knowledge_chunks where source_id = ${sourceId} order by ordinal`;

async function makePdf(lines: string[]): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage([600, 800]);
  lines.forEach((l, i) => page.drawText(l, { x: 40, y: 760 - i * 18, size: 11, font }));
  return Buffer.from(await pdf.save());
}

async function makeDocx(): Promise<Buffer> {
  const doc = new Document({
    sections: [
      {
        children: [
          new Paragraph({ text: 'Returns policy', heading: HeadingLevel.HEADING_1 }),
          new Paragraph({ text: 'Refunds', heading: HeadingLevel.HEADING_2 }),
          new Paragraph('Customers may return a toaster within 45 days for a full refund, no questions asked.'),
        ],
      },
    ],
  });
  return Packer.toBuffer(doc);
}

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
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', text: 'Our support line is open from 8 am to 6 pm on weekdays.', name: 'Support hours', file_name: 'hours' });
    expect(res.status).toBe(201);
    expect(res.body.source).toMatchObject({ type: 'text', file_name: 'hours', mime_type: 'text/plain', source: 'Our support line is open from 8 am to 6 pm on weekdays.' });
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
    expect(candidateQuery([{ lexeme: 'a', ndoc: 5000 }, { lexeme: 'b', ndoc: 4000 }, { lexeme: 'c', ndoc: 3000 }], 10_000, 1000)).toBe("'c' & 'b' & 'a'"); // 3000 × 0.4 × 0.5 = 600
    expect(candidateQuery([{ lexeme: 'x', ndoc: 0 }], 10)).toBe('');
  });

  it('keeps document frequencies with ingestion and deletion', async () => {
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', text: 'Zebras graze. Zebras run.\n\nGiraffes eat leaves.' });
    await waitJob(res.body.source.kb_id, res.body.job.job_id);
    const terms = () => tp.sql<{ lexeme: string; ndoc: number }[]>`select lexeme, ndoc from knowledge_terms where kb_id = ${res.body.source.kb_id} order by lexeme`;
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
    expect(patched.body).toMatchObject({ kb_id: kbId, name: 'Renamed', multilingual: true, mode: 'stuff', sources: [expect.objectContaining({ status: 'ready' })] });
    // simple: no stemming any more, exact words only
    expect(await searchChunks(tp.sql, orgId, [kbId], 'run', { topK: 3, maxTokens: 1000 })).toEqual([]);
    expect(await searchChunks(tp.sql, orgId, [kbId], 'running', { topK: 3, maxTokens: 1000 })).toHaveLength(1);
    const bad = await tp.request('patch', `/v1/knowledge-bases/${kbId}`, { key, body: { language: 'klingon' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['body', 'language'], type: 'enum' });
  });
});

describe('validation', () => {
  const kbPath = async () => `/v1/knowledge-bases/${(await tp.request('post', '/v1/knowledge-bases', { key, body: { name: 'v' } })).body.kb_id}/sources`;

  it('lists with the spec envelope and 422 on limit/offset', async () => {
    const ok = await tp.request('get', '/v1/knowledge-bases', { key });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ limit: 50, offset: 0, total: expect.any(Number), items: expect.any(Array) });
    for (const [q, loc, type] of [
      ['limit=0', 'limit', 'greater_than_equal'],
      ['limit=101', 'limit', 'less_than_equal'],
      ['offset=-1', 'offset', 'greater_than_equal'],
      ['limit=abc', 'limit', 'int_type'],
    ] as const) {
      const res = await tp.request('get', `/v1/knowledge-bases?${q}`, { key });
      expect(res.status, q).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['query', loc], type });
    }
  });

  it('422 on base fields', async () => {
    const res = await tp.request('post', '/v1/knowledge-bases', { key, body: { name: '', chunk_size: 10, mode: 'all', multilingual: 'yes', colour: 1 } });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(
      expect.arrayContaining([['body', 'name'], ['body', 'chunk_size'], ['body', 'mode'], ['body', 'multilingual'], ['body', 'colour']]),
    );
  });

  it('422 on every form problem, in the detail shape', async () => {
    const path = await kbPath();
    const cases: [Record<string, string | [Blob, string]>, (string | number)[], string][] = [
      [{}, ['body', 'type'], 'missing'],
      [{ type: 'pdf' }, ['body', 'type'], 'enum'],
      [{ type: 'url' }, ['body', 'source'], 'missing'],
      [{ type: 'text' }, ['body', 'source'], 'missing'],
      [{ type: 'file' }, ['body', 'file'], 'missing'],
      [{ type: 'text', text: 'hello', source: 'https://example.com/' }, ['body', 'text'], 'value_error'],
      [{ type: 'url', source: `https://example.com/${'a'.repeat(2100)}` }, ['body', 'source'], 'string_too_long'],
      [{ type: 'text', text: 'hello', colour: 'red' }, ['body', 'colour'], 'extra_forbidden'],
      [{ type: 'file', file: [new Blob([new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0])], { type: 'image/png' }), 'logo.png'] }, ['body', 'file'], 'unsupported_file_type'],
      [{ type: 'file', file: [new Blob(['not a pdf'], { type: 'application/pdf' }), 'fake.pdf'] }, ['body', 'file'], 'unsupported_file_type'],
      [{ type: 'file', file: [new Blob(['MZ\u0000\u0001binary'], { type: 'application/octet-stream' }), 'setup.exe'] }, ['body', 'file'], 'unsupported_file_type'],
      [{ type: 'file', file: [new Blob([''], { type: 'text/plain' }), 'empty.txt'] }, ['body', 'file'], 'value_error'],
    ];
    for (const [fields, loc, type] of cases) {
      const res = await post(path, fields);
      expect(res.status, JSON.stringify(fields)).toBe(422);
      expect(res.body.detail, JSON.stringify(fields)).toContainEqual(expect.objectContaining({ loc, type }));
    }
    const created = await post('/v1/knowledge-bases/sources', { type: 'text', text: 'x', chunk_size: '9', multilingual: 'maybe' });
    expect(created.status).toBe(422);
    expect(created.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([['body', 'chunk_size'], ['body', 'multilingual']]);
    const json = await tp.request('post', path, { key, body: { type: 'text', text: 'x' } });
    expect(json.status).toBe(422);
    expect(json.body.detail[0]).toMatchObject({ loc: ['header', 'content-type'], type: 'content_type' });
  });

  it('413 over the file and text limits, with a clear message', async () => {
    const path = await kbPath();
    const big = await post(path, { type: 'file', file: [new Blob(['a'.repeat(300_001)], { type: 'text/plain' }), 'big.txt'] });
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ type: 'payload_too_large', detail: 'File "big.txt" exceeds the limit of 293 KiB' });
    const text = await post(path, { type: 'text', text: 'b'.repeat(100_001) });
    expect(text.status).toBe(413);
    expect(text.body.detail).toMatch(/Field "text" exceeds the limit/);
    expect((await tp.sql`select count(*)::int as n from knowledge_sources where file_name = 'big.txt'`)[0]!.n).toBe(0);
  });

  it('LLM models link the org\'s bases; unknown or foreign ids are 422 at body.knowledge_base_ids', async () => {
    const own = (await tp.request('post', '/v1/knowledge-bases', { key, body: { name: 'linked' } })).body.kb_id;
    const other = await tp.createOrg('kb-other');
    const foreign = (await tp.request('post', '/v1/knowledge-bases', { key: other.key, body: { name: 'theirs' } })).body.kb_id;
    const ok = await tp.request('post', '/v1/models', { key, body: { name: 'm', model: 'gpt-4o-mini', knowledge_base_ids: [own] } });
    expect(ok.status).toBe(201);
    expect(ok.body.knowledge_base_ids).toEqual([own]);
    const bad = await tp.request('post', '/v1/models', { key, body: { name: 'm', model: 'gpt-4o-mini', knowledge_base_ids: [own, foreign, '00000000-0000-4000-8000-000000000000'] } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([
      ['body', 'knowledge_base_ids', 1],
      ['body', 'knowledge_base_ids', 2],
    ]);
    // Deleting the base unlinks it.
    expect((await tp.request('delete', `/v1/knowledge-bases/${own}`, { key })).status).toBe(204);
    expect((await tp.request('get', `/v1/models/${ok.body.id}`, { key })).body.knowledge_base_ids).toEqual([]);
  });
});

describe('budget, deletion and retries', () => {
  it('two concurrent jobs cannot overshoot the budget; the loser ends in error with nothing indexed; deletion gives tokens back', async () => {
    const org = await tp.createOrg('budget');
    const text = (topic: string) => Array.from({ length: 20 }, (_, i) => `Paragraph ${i} on ${topic}: ${para(topic, 2)}`).join('\n\n');
    const need = Math.max(...['alpha', 'beta'].map((t) => chunkSections([{ heading: '', text: text(t) }], 512).reduce((n, c) => n + c.token_count, 0)));
    await tp.sql`update orgs set kb_token_budget = ${Math.floor(need * 1.5)} where id = ${org.orgId}`;
    const kb = (await tp.request('post', '/v1/knowledge-bases', { key: org.key, body: { name: 'b' } })).body.kb_id;
    const [a, b] = await Promise.all(['alpha', 'beta'].map((t) => post(`/v1/knowledge-bases/${kb}/sources`, { type: 'text', text: text(t) }, org.key)));
    const jobs = await Promise.all([a!, b!].map((r) => waitJob(kb, r.body.job.job_id, org.key)));
    expect(jobs.map((j) => j.status).sort()).toEqual(['failed', 'succeeded']);
    const base = (await tp.request('get', `/v1/knowledge-bases/${kb}`, { key: org.key })).body;
    const ready = base.sources.find((s: { status: string }) => s.status === 'ready');
    const errored = base.sources.find((s: { status: string }) => s.status === 'error');
    expect(errored.error_message).toMatch(/needs \d+ tokens but only \d+ of the organisation's knowledge token budget \(\d+\) are left/);
    expect(errored).toMatchObject({ chunk_count: 0, token_count: 0 });
    expect(await chunksOf(errored.source_id)).toEqual([]);
    expect(base.total_tokens).toBe(ready.token_count);
    expect(await erroredSources(tp.sql, org.orgId)).toEqual([{ knowledge_base_id: kb, source_id: errored.source_id, error_message: errored.error_message }]);
    expect((await tp.request('get', '/v1/usage', { key: org.key })).body.kb_token_budget).toBe(Math.floor(need * 1.5));
    expect((await tp.request('get', '/v1/activity/summary', { key: org.key })).body.error_signals.kb_sources_errored).toEqual([
      { knowledge_base_id: kb, source_id: errored.source_id, error_message: errored.error_message },
    ]);

    // Deleting the ready source removes its chunks and frees its tokens: the other text now fits.
    expect((await tp.request('delete', `/v1/knowledge-bases/${kb}/sources/${ready.source_id}`, { key: org.key })).status).toBe(204);
    expect(await chunksOf(ready.source_id)).toEqual([]);
    expect((await tp.request('get', `/v1/knowledge-bases/${kb}`, { key: org.key })).body.total_tokens).toBe(0);
    const again = await post(`/v1/knowledge-bases/${kb}/sources`, { type: 'text', text: text('beta') }, org.key);
    expect((await waitJob(kb, again.body.job.job_id, org.key)).status).toBe('succeeded');
  }, 60_000);

  it('a crash in the middle of writing chunks is retried and leaves exactly one copy', async () => {
    let crashes = 0;
    setTestHooks({
      afterBatch: () => {
        if (crashes++ === 0) throw new Error('simulated crash after the first batch');
      },
    });
    try {
      const text = Array.from({ length: 700 }, (_, i) => `Fact ${i}: the answer to question ${i} is ${i * 7}.`).join('\n\n');
      const kb = (await tp.request('post', '/v1/knowledge-bases', { key, body: { name: 'retry', chunk_size: 64 } })).body.kb_id;
      const res = await post(`/v1/knowledge-bases/${kb}/sources`, { type: 'text', text });
      const job = await waitJob(kb, res.body.job.job_id);
      expect(job).toMatchObject({ status: 'succeeded', attempts: 2 });
      const src = (await tp.request('get', `/v1/knowledge-bases/${kb}/sources/${res.body.source.source_id}`, { key })).body;
      expect(src.chunk_count).toBeGreaterThan(100); // more than one batch
      const chunks = await chunksOf(src.source_id);
      expect(chunks.length).toBe(src.chunk_count);
      expect(new Set(chunks.map((c) => c.ordinal)).size).toBe(chunks.length);
      expect(chunks.reduce((n, c) => n + c.token_count, 0)).toBe(src.token_count);
    } finally {
      setTestHooks(undefined);
    }
  }, 60_000);
});

describe('tenant isolation', () => {
  it('another organisation gets 404 for bases, sources and jobs, and never sees them in lists', async () => {
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', text: 'Isolation canary: the vault code is 7391.' });
    const { kb_id, source_id } = res.body.source;
    const other = await tp.createOrg('iso');
    for (const path of [`/v1/knowledge-bases/${kb_id}`, `/v1/knowledge-bases/${kb_id}/sources`, `/v1/knowledge-bases/${kb_id}/sources/${source_id}`, `/v1/knowledge-bases/${kb_id}/jobs/${res.body.job.job_id}`]) {
      expect((await tp.request('get', path, { key: other.key })).status, path).toBe(404);
    }
    expect((await post(`/v1/knowledge-bases/${kb_id}/sources`, { type: 'text', text: 'intrusion' }, other.key)).status).toBe(404);
    expect((await tp.request('delete', `/v1/knowledge-bases/${kb_id}`, { key: other.key })).status).toBe(404);
    expect(JSON.stringify((await tp.request('get', '/v1/knowledge-bases', { key: other.key })).body)).not.toContain(kb_id);
  });

  it('the worker search returns the chunks of the call\'s own bases only', async () => {
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', text: 'The vault code of the Geneva office is 7391.' });
    const kbId = res.body.source.kb_id;
    await waitJob(kbId, res.body.job.job_id);
    const model = (await tp.request('post', '/v1/models', { key, body: { name: 'kb', model: 'gpt-4o-mini', knowledge_base_ids: [kbId] } })).body;
    const agent = (await tp.request('post', '/v1/agents', { key, body: { name: 'kb', llm_id: model.id } })).body;
    const [call] = await tp.sql<{ id: string }[]>`insert into calls (org_id, agent_id, type, status) values (${orgId}, ${agent.id}, 'web', 'in_progress') returning id`;

    // Another org whose model row names the first org's base (only possible by writing the database directly).
    const other = await tp.createOrg('iso-search');
    const om = (await tp.request('post', '/v1/models', { key: other.key, body: { name: 'x', model: 'gpt-4o-mini' } })).body;
    await tp.sql`update llm_models set knowledge_base_ids = array[${kbId}::uuid] where id = ${om.id}`;
    const oa = (await tp.request('post', '/v1/agents', { key: other.key, body: { name: 'x', llm_id: om.id } })).body;
    const [ocall] = await tp.sql<{ id: string }[]>`insert into calls (org_id, agent_id, type, status) values (${other.orgId}, ${oa.id}, 'web', 'in_progress') returning id`;

    const search = (callId: string, body: object) =>
      tp.request('post', `/internal/v1/calls/${callId}/knowledge/search`, { headers: { authorization: `Bearer ${WORKER}`, 'x-call-capability': tp.capability(callId) }, body });
    const mine = await search(call!.id, { query: 'What is the vault code in Geneva?', top_k: 3 });
    expect(mine.status).toBe(200);
    expect(mine.body.chunks[0]).toMatchObject({ content: 'The vault code of the Geneva office is 7391.', source_id: res.body.source.source_id, kb_id: kbId, score: expect.any(Number) });
    expect((await search(ocall!.id, { query: 'What is the vault code in Geneva?', top_k: 3 })).body).toEqual({ chunks: [] });
    // The token budget of the turn bounds what comes back.
    expect((await search(call!.id, { query: 'vault code Geneva', top_k: 3, max_tokens: 2 })).body).toEqual({ chunks: [] });
    expect((await search(call!.id, { query: 'x', top_k: 0 })).status).toBe(422);
  });
});

describe('optional vector search (pgvector)', () => {
  it('fuses ranked lists by reciprocal rank', () => {
    const fused = rrf([[{ id: 'a' }, { id: 'b' }, { id: 'c' }], [{ id: 'c' }, { id: 'd' }]], (x) => x.id);
    expect(fused.map((x) => x.id)).toEqual(['c', 'a', 'b', 'd']); // c: 1/63 + 1/61 beats a: 1/61
    expect(fused[0]!.score).toBeCloseTo(1 / 63 + 1 / 61, 10);
    expect(embeddingsConfig({ KB_EMBEDDINGS_MODEL: 'm', KB_EMBEDDINGS_DIMENSIONS: 8 } as never)).toBeNull();
  });

  it('stores chunk vectors and finds by meaning what full text misses (when the database has pgvector)', async (ctx) => {
    const [avail] = await tp.sql<{ n: number }[]>`select count(*)::int as n from pg_available_extensions where name = 'vector'`;
    if (!avail!.n) {
      ctx.skip('pgvector is not installed in this PostgreSQL (neither Debian\'s PostgreSQL 15 nor the embedded server ships it)');
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
      const res = (await (await fetch(`${vp.url}/v1/knowledge-bases/sources`, { method: 'POST', headers: { authorization: `Bearer ${org.key}` }, body: form })).json()) as any;
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
