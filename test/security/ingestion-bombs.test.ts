// Hostile knowledge sources against the real API and the real pg-boss `knowledge.ingest` jobs: bombs made
// here, byte by byte. A DOCX whose document.xml inflates to 2 GiB (declared honestly, then lying about its
// size), a CSV with a 2 MB header repeated on every row, a PDF of a million pages (a 1 kB page tree), and a
// sitemap index of a million URLs served from loopback (admitted by SSRF_ALLOWLIST). Each time the API keeps
// answering, the source ends in `error` with a message that names the limit (or the crawl stays within its
// URL cap), another organisation's ingestion finishes, and no parsing process is left behind.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { deflateRawSync, crc32, constants as zc } from 'node:zlib';
import { readFileSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import JSZip from 'jszip';
import { Document, Packer, Paragraph } from 'docx';
import { PDFDocument, PDFName, PDFNumber, StandardFonts, type PDFDict } from 'pdf-lib';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { liveParses } from '../../control-plane/src/modules/knowledge-bases/parse-sandbox.ts';

const MEMORY_MB = 256;
const MiB = 1024 * 1024;

let tp: TestPlatform;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  tp = await usePlatform({
    SSRF_ALLOWLIST: '127.0.0.1',
    KB_MAX_FILE_BYTES: 12 * MiB,
    KB_PARSE_MAX_MEMORY_MB: MEMORY_MB,
    KB_JOB_RETRY_DELAY_SECONDS: 1,
    KB_CRAWL_MAX_PAGES: 3,
  });
  ({ key: keyA } = await tp.createOrg('bomber'));
  ({ key: keyB } = await tp.createOrg('bystander'));
});

afterAll(() => {
  // Nothing the tests started is still running: no parsing process, in our bookkeeping or in /proc.
  expect(liveParses()).toEqual([]);
  expect(childParsers()).toEqual([]);
});

/** Pids of this process's children that run the parser (Linux: /proc/self/task/<tid>/children). */
function childParsers(): number[] {
  const pids: number[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    for (const pid of readFileSync(`/proc/self/task/${tid}/children`, 'utf8').split(/\s+/).filter(Boolean)) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('parse-child')) pids.push(Number(pid));
      } catch {
        // exited meanwhile
      }
    }
  }
  return pids;
}

async function until<T>(probe: () => Promise<T | null | undefined | false>, what: string, bound = 2400): Promise<T> {
  for (let i = 0; i < bound; i++) {
    const v = await probe();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gave up waiting for ${what}`);
}

async function addSource(key: string, fields: Record<string, string | [Blob, string]>) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (Array.isArray(v)) form.append(k, v[0], v[1]);
    else form.append(k, v);
  }
  const res = await fetch(`${tp.url}/v1/knowledge-bases/sources`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body as { source: { source_id: string; kb_id: string }; job: { job_id: string } };
}
const addFile = (key: string, data: Buffer, name: string) => addSource(key, { type: 'file', file: [new Blob([new Uint8Array(data)]), name] });

/** Waits (bounded) for the job to end; returns it and its source. */
async function finished(key: string, added: Awaited<ReturnType<typeof addSource>>) {
  const kb = added.source.kb_id;
  const job = await until(async () => {
    const res = await tp.request('get', `/v1/knowledge-bases/${kb}/jobs/${added.job.job_id}`, { key });
    expect(res.status).toBe(200);
    return res.body.status === 'succeeded' || res.body.status === 'failed' ? res.body : null;
  }, `job ${added.job.job_id}`);
  const source = (await tp.request('get', `/v1/knowledge-bases/${kb}/sources/${added.source.source_id}`, { key })).body;
  return { job, source };
}

// ---- The bombs ------------------------------------------------------------------------------------------

/**
 * Raw deflate of `mib` MiB of zeros without compressing them: one MiB deflated and ended with a full flush
 * (byte aligned, dictionary reset) gives a segment that can be repeated as is; a final empty fixed-Huffman
 * block (0x03 0x00) ends the stream. About 1 kB per MiB.
 */
function zerosDeflated(mib: number): { data: Buffer; crc: number; size: number } {
  const zeros = Buffer.alloc(MiB);
  const segment = deflateRawSync(zeros, { finishFlush: zc.Z_FULL_FLUSH, level: 9 });
  let crc = 0;
  for (let i = 0; i < mib; i++) crc = crc32(zeros, crc);
  return { data: Buffer.concat([...Array(mib).fill(segment), Buffer.from([0x03, 0x00])]), crc, size: mib * MiB };
}

interface RawEntry {
  name: string;
  data: Buffer; // raw deflate
  crc: number;
  size: number; // true uncompressed size
  declared?: number; // the size written in the headers, when it lies
}

/** A ZIP archive (APPNOTE 4.3) of already deflated entries: local headers, data, central directory, EOCD. */
function zip(entries: RawEntry[]): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const size = e.declared ?? e.size;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0, 6); // flags
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt32LE(0, 10); // time, date
    local.writeUInt32LE(e.crc >>> 0, 14);
    local.writeUInt32LE(e.data.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const cd = Buffer.alloc(46);
    cd.writeUInt32LE(0x02014b50, 0);
    cd.writeUInt16LE(20, 4); // made by
    cd.writeUInt16LE(20, 6); // needed
    cd.writeUInt16LE(0, 8);
    cd.writeUInt16LE(8, 10);
    cd.writeUInt32LE(0, 12);
    cd.writeUInt32LE(e.crc >>> 0, 16);
    cd.writeUInt32LE(e.data.length, 20);
    cd.writeUInt32LE(size, 24);
    cd.writeUInt16LE(name.length, 28);
    cd.writeUInt32LE(offset, 42);
    central.push(cd, name);
    parts.push(local, name, e.data);
    offset += local.length + name.length + e.data.length;
  }
  const cdBuf = Buffer.concat(central);
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(entries.length, 8);
  eocd.writeUInt16LE(entries.length, 10);
  eocd.writeUInt32LE(cdBuf.length, 12);
  eocd.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, cdBuf, eocd]);
}

/** A valid DOCX (from the docx package) whose word/document.xml is replaced by `mib` MiB of zeros. */
async function docxBomb(mib: number, declared?: number): Promise<Buffer> {
  const valid = await Packer.toBuffer(new Document({ sections: [{ children: [new Paragraph('A harmless paragraph.')] }] }));
  const files = await JSZip.loadAsync(valid);
  const entries: RawEntry[] = [];
  for (const [name, f] of Object.entries(files.files)) {
    if (f.dir) continue;
    if (name === 'word/document.xml') {
      entries.push({ name, ...zerosDeflated(mib), ...(declared !== undefined ? { declared } : {}) });
      continue;
    }
    const data = await f.async('nodebuffer');
    entries.push({ name, data: deflateRawSync(data), crc: crc32(data), size: data.length });
  }
  return zip(entries);
}

/** A PDF of a million pages in about a kilobyte: a page tree whose nodes repeat one reference. */
async function pdfBomb(): Promise<{ data: Buffer; pages: number }> {
  const FAN = 1000;
  const pdf = await PDFDocument.create();
  const page = pdf.addPage([200, 200]);
  page.drawText('The same page, a million times.', { x: 10, y: 100, size: 10, font: await pdf.embedFont(StandardFonts.Helvetica) });
  const ctx = pdf.context;
  const rootRef = pdf.catalog.get(PDFName.of('Pages'))!;
  const root = pdf.catalog.lookup(PDFName.of('Pages')) as PDFDict;
  const midRef = ctx.register(ctx.obj({ Type: 'Pages', Parent: rootRef, Count: FAN, Kids: Array(FAN).fill(page.ref) }));
  page.node.set(PDFName.of('Parent'), midRef);
  root.set(PDFName.of('Kids'), ctx.obj(Array(FAN).fill(midRef)));
  root.set(PDFName.of('Count'), PDFNumber.of(FAN * FAN));
  return { data: Buffer.from(await pdf.save()), pages: FAN * FAN };
}

/** A CSV whose 2 MB header line is repeated as each of its rows. */
function csvBomb(): Buffer {
  const header = Array.from({ length: 2 * MiB / 8 }, (_, i) => `c${String(i).padStart(6, '0')}`).join(','); // 8 bytes a field
  return Buffer.from(Array(5).fill(header).join('\n'));
}

// ---- The tests ------------------------------------------------------------------------------------------

describe('knowledge ingestion bombs', () => {
  it('refuses a DOCX whose directory declares 2 GiB, unread', { timeout: 180_000 }, async () => {
    const bomb = await docxBomb(2048);
    expect(bomb.length).toBeLessThan(4 * MiB);
    const { job, source } = await finished(keyA, await addFile(keyA, bomb, 'bomb.docx'));
    expect(job.status).toBe('failed');
    expect(source.status).toBe('error');
    expect(source.error_message).toMatch(/would unpack to 2048 MB, more than the limit of 200 MB/);
  });

  it('stops a DOCX that lies about its size at the memory cap, while the API answers and another org ingests', { timeout: 180_000 }, async () => {
    const bomb = await docxBomb(2048, 4096);
    const added = await addFile(keyA, bomb, 'liar.docx');
    // While the bomb is being parsed (a parsing process is running), the API answers.
    await until(async () => liveParses().length > 0, 'the parsing process');
    const during = await tp.request('get', '/v1/knowledge-bases', { key: keyA });
    expect(during.status).toBe(200);
    // Another organisation's source, queued behind the bomb, is ingested.
    const other = await addSource(keyB, { type: 'text', text: 'The bystander sells umbrellas on rainy days.' });
    const { job, source } = await finished(keyA, added);
    expect(job.status).toBe('failed');
    expect(source.status).toBe('error');
    expect(source.error_message).toContain(`parsing needed more than ${MEMORY_MB} MB of memory`);
    const b = await finished(keyB, other);
    expect(b.job.status).toBe('succeeded');
    expect(b.source.status).toBe('ready');
    const metrics = await tp.platform.services.metrics.registry.getSingleMetricAsString('vap_kb_parse_total');
    expect(metrics).toMatch(/vap_kb_parse_total\{outcome="memory"\} 1/);
  });

  it('refuses a CSV with a 2 MB header repeated on every row', { timeout: 180_000 }, async () => {
    const { job, source } = await finished(keyA, await addFile(keyA, csvBomb(), 'wide.csv'));
    expect(job.status).toBe('failed');
    expect(source.status).toBe('error');
    expect(source.error_message).toMatch(/a CSV record is longer than the limit of 131072 characters/);
  });

  it('refuses a PDF of a million pages before reading one', { timeout: 180_000 }, async () => {
    const { data, pages } = await pdfBomb();
    expect(data.length).toBeLessThan(4096);
    const { job, source } = await finished(keyA, await addFile(keyA, data, 'pages.pdf'));
    expect(job.status).toBe('failed');
    expect(source.status).toBe('error');
    expect(source.error_message).toContain(`the PDF has ${pages} pages, more than the limit of 2000`);
  });

  it('keeps a sitemap index of a million URLs within the crawl URL cap', { timeout: 180_000 }, async () => {
    let sitemapHits = 0;
    const server = http.createServer((req, res) => {
      const url = req.url ?? '/';
      if (url === '/sitemap.xml') {
        sitemapHits++;
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(`<?xml version="1.0"?><sitemapindex>${Array.from({ length: 1000 }, (_, i) => `<sitemap><loc>${base}/sm-${i}.xml</loc></sitemap>`).join('')}</sitemapindex>`);
      } else if (/^\/sm-\d+\.xml$/.test(url)) {
        sitemapHits++;
        const n = /\d+/.exec(url)![0];
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(`<?xml version="1.0"?><urlset>${Array.from({ length: 1000 }, (_, i) => `<url><loc>${base}/p/${n}-${i}</loc></url>`).join('')}</urlset>`);
      } else if (url === '/' || url.startsWith('/p/')) {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(`<html><head><title>${url}</title></head><body><p>The page at ${url} says its own thing about umbrellas.</p></body></html>`);
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const { job, source } = await finished(keyA, await addSource(keyA, { type: 'url', source: `${base}/` }));
      expect(job.status).toBe('succeeded');
      expect(source.status).toBe('ready');
      // Discovery stopped at KB_CRAWL_MAX_URLS (5000): the index and a handful of its sitemaps, not 1000.
      expect(job.progress.pages_found).toBeLessThanOrEqual(5000);
      expect(sitemapHits).toBeLessThanOrEqual(7);
      expect(job.progress.pages_fetched).toBeLessThanOrEqual(3);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('retries a job whose parsing process was killed from outside, and the source ends ready', { timeout: 180_000 }, async () => {
    const added = await addSource(keyB, { type: 'text', text: 'The bystander also repairs umbrellas on Tuesdays.' });
    // The kernel's OOM killer, say: the process dies without a word.
    const [pid] = await until(async () => (liveParses().length ? liveParses() : null), 'the parsing process');
    process.kill(pid!, 'SIGKILL');
    const { job, source } = await finished(keyB, added);
    expect(job.status).toBe('succeeded');
    expect(job.attempts).toBe(2);
    expect(source.status).toBe('ready');
    const metrics = await tp.platform.services.metrics.registry.getSingleMetricAsString('vap_kb_parse_total');
    expect(metrics).toMatch(/vap_kb_parse_total\{outcome="crash"\} 1/);
  });
});
