// The knowledge-base API tests' fixture (knowledge-bases*.test.ts): the platform, an org, a local site to crawl, and
// the helpers that post files and make PDFs and DOCX files. Importing this module registers the hooks that build and
// close them in the importing test file; the exported bindings are live.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect } from 'vitest';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { Document, HeadingLevel, Packer, Paragraph } from 'docx';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { setTestHooks } from './jobs.ts';

export let tp: TestPlatform;
export let key: string;
export let orgId: string;
export let site: { url: string; hits: string[]; close(): Promise<void> };
export const WORKER = 'test-worker-token-0123456789abcdef0123';

export const para = (topic: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${topic} detail number ${i + 1} explains how the ${topic} works in practice for our customers.`).join(' ');

export function startSite(): Promise<typeof site> {
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
        return html(
          `<main><article><h1>Pricing</h1><h2>Plans</h2><p>The Pro plan costs 42 euros per month and includes priority support. ${para('pricing', 6)}</p></article></main>`,
        );
      case '/warranty':
        return html(
          `<main><article><h1>Warranty</h1><p>Every kettle carries a warranty of seven years against limescale. ${para('warranty', 6)}</p></article></main>`,
        );
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
  tp = await usePlatform({
    SSRF_ALLOWLIST: '127.0.0.1',
    KB_CRAWL_MAX_PAGE_BYTES: 64 * 1024,
    KB_MAX_FILE_BYTES: 300_000,
    KB_MAX_TEXT_BYTES: 100_000,
    KB_JOB_RETRY_DELAY_SECONDS: 1,
  });
  ({ key, orgId } = await tp.createOrg('kb'));
  site = await startSite();
});
afterAll(async () => {
  setTestHooks(undefined);
  await site?.close();
});

export async function post(path: string, fields: Record<string, string | Blob | [Blob, string]>, k = key) {
  const form = new FormData();
  for (const [name, v] of Object.entries(fields)) {
    if (Array.isArray(v)) form.append(name, v[0], v[1]);
    else form.append(name, v);
  }
  const res = await fetch(tp.url + path, { method: 'POST', headers: { authorization: `Bearer ${k}` }, body: form });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export async function waitJob(kbId: string, jobId: string, k = key) {
  for (;;) {
    const res = await tp.request('get', `/v1/knowledge-bases/${kbId}/jobs/${jobId}`, { key: k });
    expect(res.status).toBe(200);
    if (res.body.status === 'succeeded' || res.body.status === 'failed') return res.body;
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const chunksOf = (sourceId: string) =>
  tp.sql<{ ordinal: number; heading: string; content: string; url: string | null; token_count: number }[]>`
    select ordinal, heading, content, url, token_count from knowledge_chunks where source_id = ${sourceId} order by ordinal`;

export async function makePdf(lines: string[]): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage([600, 800]);
  lines.forEach((l, i) => page.drawText(l, { x: 40, y: 760 - i * 18, size: 11, font }));
  return Buffer.from(await pdf.save());
}

export async function makeDocx(): Promise<Buffer> {
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
