// Benchmark: knowledge bases, against an embedded PostgreSQL started here.
//   npm run bench:kb   [BENCH_PAGES=100] [BENCH_SIZES=10000,100000,1000000] [BENCH_QUERIES=200] [BENCH_OUT=bench/results/knowledge.json]
// 1. Ingestion from a local site: the platform's job (crawl with robots/sitemap/SSRF checks, Readability,
//    chunking, one write transaction) vs a bare fetch of the same pages at the same concurrency, pages/s.
// 2. Ingestion of files (Markdown, DOCX, PDF): the platform's job vs tokenizing the same text alone, tokens/s.
// 3. Retrieval at 10k, 100k and 1M chunks (rows made with generate_series, not through the API): the
//    platform's search (searchChunks: base lookup + ranked full-text query + token budget) vs the same
//    ranked query run bare through postgres.js, p50/p95 over BENCH_QUERIES queries each, interleaved.
import { mkdirSync, writeFileSync } from 'node:fs';
import { execSync } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Document, Packer, Paragraph, HeadingLevel } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { Agent, request } from 'undici';
import { startBenchDatabase } from './support/bench-database.ts';
import { createSql } from '../control-plane/src/db/connect.ts';
import { migrate } from '../control-plane/src/db/migrate.ts';
import { loadConfig } from '../control-plane/src/config.ts';
import { createOrgWithKey } from '../control-plane/src/modules/workspace/orgs.ts';
import { createLogger } from '../shared/logger.ts';
import { insertKb, insertSourceAndJob } from '../control-plane/src/modules/knowledge-bases/queries.ts';
import { runIngest } from '../control-plane/src/modules/knowledge-bases/jobs.ts';
import { countTokens } from '../control-plane/src/modules/knowledge-bases/chunk.ts';
import { parseFile } from '../control-plane/src/modules/knowledge-bases/parse.ts';
import { queryWords, searchChunks, candidateQuery } from '../control-plane/src/modules/knowledge-bases/search.ts';
import { rebuildTerms } from '../control-plane/src/modules/knowledge-bases/queries.ts';
import type { Services } from '../control-plane/src/services.ts';

const PAGES = Number(process.env.BENCH_PAGES ?? 100);
const SIZES = (process.env.BENCH_SIZES ?? '10000,100000,1000000').split(',').map(Number);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);
const OUT = process.env.BENCH_OUT ?? 'bench/results/knowledge.json';
const ROOT = path.resolve(import.meta.dirname, '..');
const log = (m: string) => console.log(`[bench:kb] ${m}`);
const started = Date.now();

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => +s[Math.min(s.length - 1, Math.floor(p * s.length))]!.toFixed(2);
  return { p50: q(0.5), p95: q(0.95), max: +s.at(-1)!.toFixed(2), samples: s.length };
};

// A pseudo-vocabulary; word i is drawn with a skewed distribution (low i frequent), like real text.
const SYL = ['ka', 'lo', 'mi', 'ren', 'tos', 'va', 'dur', 'pel', 'sin', 'gor', 'fa', 'nu', 'bri', 'tel', 'xo', 'qua'];
const VOCAB = Array.from({ length: 5000 }, (_, i) => `${SYL[i % 16]}${SYL[Math.floor(i / 16) % 16]}${SYL[Math.floor(i / 256) % 16]}${i}`);
const sentence = (seed: number, n: number) => Array.from({ length: n }, (_, j) => VOCAB[Math.floor(VOCAB.length * Math.pow(((seed * 7919 + j * 104729) % 1000) / 1000, 3))]).join(' ');

// --- the local site ----------------------------------------------------------------------------------------
const page = (i: number, index = false) => {
  const targets = index ? Array.from({ length: PAGES }, (_, k) => k) : [1, 2, 3].map((k) => (i + k) % PAGES);
  const links = targets.map((k) => `<a href="/p/${k}">page ${k}</a>`).join(' ');
  const paras = Array.from({ length: 8 }, (_, j) => `<p>${sentence(i * 31 + j, 60)}.</p>`).join('');
  return `<!doctype html><html><head><title>Page ${i}</title></head><body><nav>${links}</nav><main><article><h1>Page ${i}</h1><h2>Section</h2>${paras}</article></main></body></html>`;
};
const site = http.createServer((req, res) => {
  const m = /^\/p\/(\d+)$/.exec(req.url ?? '');
  if (req.url === '/robots.txt') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n');
  if (req.url === '/' || m) return void res.writeHead(200, { 'content-type': 'text/html' }).end(m ? page(Number(m[1])) : page(0, true));
  res.writeHead(404).end();
});
await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
const siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;

const db = await startBenchDatabase('kb');
const result: Record<string, unknown> = {};
try {
  const sql = createSql(db.url, { max: 4 });
  await migrate(sql);
  const config = loadConfig({}, { NODE_ENV: 'test', SSRF_ALLOWLIST: '127.0.0.1', KB_CRAWL_MAX_PAGES: PAGES, KB_CRAWL_MAX_DEPTH: 10 } as never);
  const services = { config, sql, log: createLogger('bench', 'silent') } as unknown as Services;
  const org = await createOrgWithKey(sql, 'bench');
  await sql`update orgs set kb_token_budget = 2000000000 where id = ${org.org_id}`;

  // --- 1. crawl ---------------------------------------------------------------------------------------------
  const kb = await insertKb(sql, org.org_id, { name: 'bench', chunk_size: 512, multilingual: false, language: 'english', mode: 'retrieval' });
  const crawlRuns: { platform_pages_per_s: number; bare_pages_per_s: number }[] = [];
  for (let run = 0; run < 3; run++) {
    const { job } = await insertSourceAndJob(sql, org.org_id, kb.id, { type: 'url', source: `${siteUrl}/`, file_name: '', mime_type: '', file_size: 0, payload: null });
    const t0 = performance.now();
    await runIngest(services, job.id);
    const ms = performance.now() - t0;
    const [j] = await sql<{ pages_fetched: number; status: string }[]>`select pages_fetched, status from knowledge_jobs where id = ${job.id}`;
    if (j!.status !== 'succeeded' || j!.pages_fetched < PAGES) throw new Error(`crawl ended ${j!.status} with ${j!.pages_fetched} pages`);
    // Bare: the same pages, same number of parallel requests, bodies read and dropped.
    const agent = new Agent({ connections: config.KB_CRAWL_CONCURRENCY });
    const urls = Array.from({ length: PAGES }, (_, i) => `${siteUrl}/p/${i}`);
    const b0 = performance.now();
    await Promise.all(
      Array.from({ length: config.KB_CRAWL_CONCURRENCY }, async () => {
        for (let u = urls.shift(); u; u = urls.shift()) await (await request(u, { dispatcher: agent })).body.text();
      }),
    );
    const bms = performance.now() - b0;
    await agent.close();
    crawlRuns.push({ platform_pages_per_s: +((PAGES / ms) * 1000).toFixed(1), bare_pages_per_s: +((PAGES / bms) * 1000).toFixed(1) });
    log(`crawl run ${run + 1}: platform ${crawlRuns.at(-1)!.platform_pages_per_s} pages/s, bare fetch ${crawlRuns.at(-1)!.bare_pages_per_s} pages/s`);
  }
  result.crawl = { pages: PAGES, concurrency: config.KB_CRAWL_CONCURRENCY, runs: crawlRuns };

  // --- 2. files ---------------------------------------------------------------------------------------------
  const paragraphs = Array.from({ length: 400 }, (_, i) => `${sentence(i, 80)}.`);
  const md = Buffer.from(paragraphs.map((p, i) => (i % 20 === 0 ? `## Part ${i / 20}\n\n${p}` : p)).join('\n\n'));
  const docx = await Packer.toBuffer(
    new Document({ sections: [{ children: paragraphs.flatMap((p, i) => [...(i % 20 === 0 ? [new Paragraph({ text: `Part ${i / 20}`, heading: HeadingLevel.HEADING_2 })] : []), new Paragraph(p)]) }] }),
  );
  const pdfDoc = await PDFDocument.create();
  const font = await pdfDoc.embedFont(StandardFonts.Helvetica);
  for (let p = 0; p < 40; p++) {
    const pg1 = pdfDoc.addPage([600, 800]);
    for (let l = 0; l < 40; l++) pg1.drawText(sentence(p * 40 + l, 10), { x: 30, y: 770 - l * 18, size: 10, font });
  }
  const pdf = Buffer.from(await pdfDoc.save());
  const files: [string, Buffer, string, 'markdown' | 'docx' | 'pdf'][] = [
    ['doc.md', md, 'text/markdown', 'markdown'],
    ['doc.docx', docx, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'docx'],
    ['doc.pdf', pdf, 'application/pdf', 'pdf'],
  ];
  const fileResults: Record<string, unknown> = {};
  for (const [name, data, mime, kind] of files) {
    const runs: { platform_tokens_per_s: number; tokenize_only_tokens_per_s: number; tokens: number }[] = [];
    for (let run = 0; run < 3; run++) {
      const { job } = await insertSourceAndJob(sql, org.org_id, kb.id, { type: 'file', source: name, file_name: name, mime_type: mime, file_size: data.length, payload: data });
      const t0 = performance.now();
      await runIngest(services, job.id);
      const ms = performance.now() - t0;
      const [j] = await sql<{ tokens: number; status: string }[]>`select tokens, status from knowledge_jobs where id = ${job.id}`;
      if (j!.status !== 'succeeded') throw new Error(`${name} ended ${j!.status}`);
      // Baseline: the tokenizer alone over the same extracted text.
      const text = (await parseFile(kind, data, name)).sections.map((s) => s.text).join('\n\n');
      const b0 = performance.now();
      const tokens = countTokens(text);
      const bms = performance.now() - b0;
      runs.push({ platform_tokens_per_s: Math.round((j!.tokens / ms) * 1000), tokenize_only_tokens_per_s: Math.round((tokens / bms) * 1000), tokens: j!.tokens });
    }
    fileResults[name] = { bytes: data.length, runs };
    log(`${name}: ${JSON.stringify(runs)}`);
  }
  result.files = fileResults;

  // --- 3. retrieval -----------------------------------------------------------------------------------------
  const rkb = await insertKb(sql, org.org_id, { name: 'retrieval', chunk_size: 512, multilingual: false, language: 'english', mode: 'retrieval' });
  const { source } = await insertSourceAndJob(sql, org.org_id, rkb.id, { type: 'text', source: 'bench', file_name: 'bench', mime_type: 'text/plain', file_size: 0, payload: null });
  await sql`update knowledge_sources set status = 'ready' where id = ${source.id}`;
  // Questions: two frequent words, two rare ones and a miss, the shape of a spoken question's content words.
  const questions = Array.from({ length: QUERIES }, (_, i) => {
    const f = (x: number) => `w${Math.floor(5000 * Math.pow(x, 3))}`;
    return `what about ${f(((i * 37) % 100) / 100)} and ${f(((i * 53) % 100) / 100)} with w${(i * 997) % 5000} w${(i * 131) % 5000} zzunknown${i}`;
  });
  const retrieval: Record<string, unknown> = {};
  let have = 0;
  for (const size of SIZES) {
    const t0 = performance.now();
    // 60 words per chunk (w0..w4999, skewed: low numbers frequent); `g >= 0` makes the inner select run per row.
    for (let from = have; from < size; from += 100_000) {
      const to = Math.min(size, from + 100_000);
      await sql`
        insert into knowledge_chunks (org_id, kb_id, source_id, ordinal, heading, content, token_count, ts_config)
        select ${org.org_id}, ${rkb.id}, ${source.id}, g, 'Section ' || (g % 50),
               (select string_agg('w' || floor(5000 * power(random(), 3))::int, ' ') from generate_series(1, 60) k where g >= 0),
               90, 'english'
        from generate_series(${from}::int, ${to - 1}::int) g`;
    }
    have = size;
    await sql`update knowledge_sources set chunk_count = ${size} where id = ${source.id}`;
    await rebuildTerms(sql, rkb.id); // document frequencies, as ingestion keeps them
    await sql`vacuum analyze knowledge_chunks`;
    const buildS = +((performance.now() - t0) / 1000).toFixed(1);
    log(`${size} chunks ready (${buildS} s)`);
    // The statements the platform ends with, prepared outside the timing for the bare runs.
    const lexemes = async (q: string) =>
      sql<{ lexeme: string; ndoc: number }[]>`
        select q.lexeme, coalesce(sum(t.ndoc), 0)::int as ndoc
        from unnest(tsvector_to_array(to_tsvector('english', ${queryWords(q).join(' ')}))) as q(lexeme)
        left join knowledge_terms t on t.kb_id = ${rkb.id} and t.lexeme = q.lexeme group by q.lexeme`;
    const tsq = (ls: string[]) => ls.map((l) => `'${l}'`).join(' | ');
    const prepared = await Promise.all(
      questions.map(async (q) => {
        const present = (await lexemes(q)).filter((t) => t.ndoc > 0);
        return { selective: candidateQuery(present, size), all: tsq(present.map((t) => t.lexeme)) };
      }),
    );
    const RANKED = `select c.content, c.heading, ts_rank_cd(c.tsv, $1::tsquery, 32) as score, c.source_id, c.kb_id, c.url, c.title, c.token_count
       from knowledge_chunks c where c.kb_id = $2 and c.tsv @@ $3::tsquery order by score desc, c.id limit 8`;
    const platform: number[] = [];
    const bare: number[] = [];
    let hits = 0;
    for (const q of questions.slice(0, 10)) await searchChunks(sql, org.org_id, [rkb.id], q, { topK: 4, maxTokens: 1500 }); // warm up
    for (const [i, q] of questions.entries()) {
      const a = performance.now();
      const r = await searchChunks(sql, org.org_id, [rkb.id], q, { topK: 4, maxTokens: 1500 });
      platform.push(performance.now() - a);
      if (r.length) hits++;
      // The same ranked statement, bare: one round trip, its tsqueries given.
      const p = prepared[i]!;
      const b = performance.now();
      await sql.unsafe(RANKED, [p.all, rkb.id, p.selective]);
      bare.push(performance.now() - b);
    }
    // Reference: ranking every chunk that holds any word of the question (no candidate selection).
    const naive: number[] = [];
    if (size <= 100_000) {
      for (const p of prepared.slice(0, 30)) {
        const b = performance.now();
        await sql.unsafe(RANKED, [p.all, rkb.id, p.all]);
        naive.push(performance.now() - b);
      }
    }
    const [plan] = await sql.unsafe<{ 'QUERY PLAN': string }[]>(`explain ${RANKED}`, [prepared[0]!.all, rkb.id, prepared[0]!.selective]);
    retrieval[String(size)] = { build_seconds: buildS, platform_ms: stats(platform), bare_ms: stats(bare), naive_or_ranking_ms: naive.length ? stats(naive) : null, queries_with_hits: hits, plan_head: plan?.['QUERY PLAN'] };
    log(`${size}: platform ${JSON.stringify(stats(platform))}, bare ${JSON.stringify(stats(bare))}${naive.length ? `, naive OR ranking ${JSON.stringify(stats(naive))}` : ''}`);
  }
  result.retrieval = retrieval;
  await sql.end();
} finally {
  await db.stop();
  site.close();
}

const out = {
  benchmark: 'bench:kb',
  command: `${['BENCH_SIZES', 'BENCH_PAGES', 'BENCH_OUT'].filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]} `).join('')}npm run bench:kb`,
  commit: execSync('git rev-parse --short HEAD', { cwd: ROOT }).toString().trim(),
  date: new Date().toISOString(),
  machine: { cores: os.cpus().length, model: os.cpus()[0]?.model, memory_gib: Math.round(os.totalmem() / 2 ** 30), loadavg: os.loadavg().map((l) => +l.toFixed(2)) },
  wall_seconds: Math.round((Date.now() - started) / 1000),
  ...result,
};
mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(path.join(ROOT, OUT), `${JSON.stringify(out, null, 2)}\n`);
log(`written ${OUT} (${out.wall_seconds} s)`);
