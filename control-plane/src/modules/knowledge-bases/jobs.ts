// Ingestion of one knowledge source (pg-boss queue `knowledge.ingest`, data `{job_id}`):
//   fetch or crawl → parse → chunk → one transaction that checks the org's token budget and writes the chunks.
// Idempotent: the chunks of a source are deleted and inserted in that single transaction, keyed by
// (source_id, ordinal), so a crash at any point followed by a retry leaves exactly one copy. The budget check
// locks the org row, so concurrent jobs of one org are serialised at commit and can never overshoot it; a
// source over the budget ends in `error` with nothing written. A re-ingestion (a new job for an existing source)
// runs the same way: its previous chunks are searched until this transaction replaces them, and stay when it fails. Progress is written as the job goes (it is
// informational; a retry starts it again).
import type { Job, QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import type { Db } from '../../db/types.ts';
import { ssrfOptions } from '../../net/ssrf.ts';
import { crawl, type CrawlProgress } from './crawl.ts';
import { chunkSections, type Chunk } from './chunk.ts';
import { type FileKind, FILE_KINDS, mimeOfKind, type Section, type ParseLimits } from './parse.ts';
import { parseInSandbox, registerParseMetrics, SandboxError } from './parse-sandbox.ts';
import type { Config } from '../../config.ts';
import { embed, embeddingsConfig, storeEmbeddings, vectorReady } from './vector.ts';
import { formatChunk } from './format.ts';
import {
  adjustTerms,
  deleteChunksOf,
  finishJob,
  getJobById,
  ingestTarget,
  insertChunks,
  lockBudget,
  lockLiveSource,
  markSourceError,
  markSourceReady,
  refreshKbTotal,
  requeueSource,
  setJobProgress,
  setJobTotals,
  startAttempt,
  tsConfigOf,
  type KbRow,
} from './queries.ts';

export const INGEST_QUEUE = 'knowledge.ingest';
export const USER_AGENT = 'vap-knowledge-bot/1.0';

/** A failure the user must act on (bad URL, unreadable file, over budget): not retried. */
export class IngestError extends Error {
  override name = 'IngestError';
}

export interface IngestHooks {
  /** Called inside the write transaction after each batch of chunk rows (tests use it to crash mid-write). */
  afterBatch?(batch: number): void | Promise<void>;
}

const BATCH = 100;

/** A crawled page (sections, chunked here) or an uploaded document (chunked by its parsing process). */
type Doc = { url: string | null; title: string } & ({ sections: Section[] } | { chunks: Chunk[] });

export const parseLimitsOf = (c: Config): ParseLimits => ({
  maxUnzippedBytes: c.KB_MAX_UNZIPPED_BYTES,
  maxZipEntries: c.KB_MAX_ZIP_ENTRIES,
  maxPdfPages: c.KB_MAX_PDF_PAGES,
  maxCsvRecordBytes: c.KB_MAX_CSV_RECORD_BYTES,
  maxTextChars: c.KB_MAX_EXTRACTED_CHARS,
});

export async function runIngest(services: Services, jobId: string, opts: { final?: boolean; hooks?: IngestHooks } = {}): Promise<void> {
  const sql = services.sql;
  const job = await getJobById(sql, jobId);
  if (!job || job.status === 'succeeded') return; // deleted with its source, or already done (redelivery)
  const { src, kb } = await ingestTarget(sql, job);
  if (!src || !kb) return;
  if (src.status === 'ready' || src.status === 'error') return;

  const log = services.log.child({ kb_id: kb.id, source_id: src.id, job_id: job.id });
  const started = Date.now();
  await startAttempt(sql, job.id, src.id, src.type === 'url');

  try {
    const docs = await documentsOf(services, src, job.id, kb.chunk_size);
    const chunks: (Chunk & { url: string | null; title: string })[] = [];
    for (const d of docs) for (const c of 'chunks' in d ? d.chunks : chunkSections(d.sections, kb.chunk_size)) chunks.push({ ...c, url: d.url, title: d.title });
    if (!chunks.length) throw new IngestError('No text could be extracted from this source; check that it is not empty or a scanned image');
    const tokens = chunks.reduce((n, c) => n + c.token_count, 0);
    await setJobTotals(sql, job.id, chunks.length, tokens);
    // Optional vectors (pgvector + an embeddings API), computed before the write transaction opens.
    const emb = embeddingsConfig(services.config);
    const vectors = emb && (await vectorReady(sql, emb)) ? await embed(emb, chunks.map((c) => formatChunk({ ...c, title: c.title }))) : null;

    const written = await sql.begin(async (tx) => {
      // The source row first: a concurrent delete either waits for us or has already removed it.
      if (!(await lockLiveSource(tx, src.id))) return false;
      const { budget, used } = await lockBudget(tx, job.org_id, src.id);
      if (used + tokens > budget) {
        throw new IngestError(
          `This source needs ${tokens} tokens but only ${Math.max(0, budget - used)} of the organisation's knowledge token budget ` +
            `(${budget}) are left; delete sources you no longer need or ask for a larger budget`,
        );
      }
      await writeChunks(tx, job.org_id, kb, src.id, chunks, opts.hooks, vectors);
      await markSourceReady(tx, src.id, chunks.length, tokens);
      await refreshKbTotal(tx, kb.id);
      await finishJob(tx, job.id, 'succeeded', null);
      return true;
    });
    log.info({ chunks: chunks.length, tokens, ms: Date.now() - started, written }, 'knowledge source ingested');
  } catch (err) {
    const permanent = err instanceof IngestError;
    const final = permanent || (opts.final ?? true);
    const message = permanent ? err.message : `Ingestion failed: ${(err as Error).message}`;
    log.warn({ err, final }, 'knowledge ingestion failed');
    // The job and its source change together: whoever sees the job finished sees the source's outcome too.
    await sql.begin(async (tx) => {
      await finishJob(tx, job.id, final ? 'failed' : 'queued', message.slice(0, 1000));
      if (final) {
        // A re-ingestion that fails leaves the previous chunks in place (they are replaced only on success).
        const kept = src.chunk_count > 0 ? ` (the previous content, ${src.chunk_count} chunks, is still searched)` : '';
        await markSourceError(tx, src.id, message.slice(0, 1000 - kept.length) + kept);
      } else {
        await requeueSource(tx, src.id);
      }
    });
    if (final) return;
    throw err; // pg-boss retries with backoff
  }
}

async function writeChunks(
  tx: Db,
  orgId: string,
  kb: KbRow,
  sourceId: string,
  chunks: (Chunk & { url: string | null; title: string })[],
  hooks?: IngestHooks,
  vectors?: number[][] | null,
) {
  await adjustTerms(tx, kb.id, sourceId, -1);
  await deleteChunksOf(tx, sourceId);
  const config = tsConfigOf(kb);
  for (let i = 0, batch = 0; i < chunks.length; i += BATCH, batch++) {
    const rows = chunks.slice(i, i + BATCH).map((c, j) => ({
      org_id: orgId,
      kb_id: kb.id,
      source_id: sourceId,
      ordinal: i + j,
      heading: c.heading,
      content: c.content,
      url: c.url,
      title: c.title,
      token_count: c.token_count,
      ts_config: config,
    }));
    const ids = await insertChunks(tx, rows);
    if (vectors) await storeEmbeddings(tx, kb.id, ids.map((r) => ({ id: r.id, embedding: vectors[r.ordinal]! })));
    await hooks?.afterBatch?.(batch);
  }
  await adjustTerms(tx, kb.id, sourceId, 1);
}

async function documentsOf(
  services: Services,
  src: { id: string; type: 'url' | 'file' | 'text'; source: string; file_name: string; mime_type: string; payload: Buffer | null },
  jobId: string,
  chunkSize: number,
): Promise<Doc[]> {
  const sql = services.sql;
  if (src.type === 'url') {
    const c = services.config;
    let last = 0;
    let pending: CrawlProgress | null = null;
    // Writes go one after another: two in flight on different connections could land out of order.
    let writes: Promise<void> = Promise.resolve();
    const flush = () => {
      writes = writes.then(async () => {
        if (!pending) return;
        const p = pending;
        pending = null;
        await setJobProgress(sql, jobId, p).catch(() => {});
      });
      return writes;
    };
    const result = await crawl(
      src.source,
      {
        maxPages: c.KB_CRAWL_MAX_PAGES,
        maxDepth: c.KB_CRAWL_MAX_DEPTH,
        timeoutMs: c.KB_CRAWL_TIMEOUT_MS,
        maxPageBytes: c.KB_CRAWL_MAX_PAGE_BYTES,
        concurrency: c.KB_CRAWL_CONCURRENCY,
        deadlineMs: c.KB_CRAWL_DEADLINE_MS,
        maxUrls: c.KB_CRAWL_MAX_URLS,
        userAgent: USER_AGENT,
        ssrf: ssrfOptions(c),
      },
      (p) => {
        pending = p;
        // At most a few progress writes a second.
        if (Date.now() - last > 250) {
          last = Date.now();
          void flush();
        }
      },
    );
    await flush();
    if (!result.pages.length) {
      const why = result.problems[0] ? `${result.problems[0].reason} (${result.problems[0].url})` : 'nothing to read';
      throw new IngestError(`No page of ${src.source} could be read: ${why}`);
    }
    return result.pages.map((p) => ({ url: p.url, title: p.title, sections: p.sections }));
  }
  const data = src.payload ?? Buffer.alloc(0);
  let kind: FileKind | 'text' = 'text';
  if (src.type === 'file') {
    const k = FILE_KINDS.find((f) => mimeOfKind(f) === src.mime_type);
    if (!k) throw new IngestError(`Unsupported file type ${src.mime_type}`);
    kind = k;
  }
  const c = services.config;
  let doc;
  try {
    doc = await parseInSandbox({ kind, data, fileName: src.file_name, chunkSize, limits: parseLimitsOf(c) }, { memoryMb: c.KB_PARSE_MAX_MEMORY_MB, timeoutMs: c.KB_PARSE_TIMEOUT_MS });
  } catch (err) {
    if (!(err instanceof SandboxError)) throw err;
    const what = kind === 'text' ? 'the text' : `${src.file_name} as ${kind.toUpperCase()}`;
    if (err.reason === 'invalid') {
      throw new IngestError(`Could not read ${what}: ${err.message}; check that the file is not damaged or password-protected`, { cause: err });
    }
    // Over a limit, or the parser had to be stopped: the same document would do it again, so no retry.
    if (err.reason !== 'crash') throw new IngestError(`Could not read ${what}: ${err.message}; split the document or remove what makes it so large`, { cause: err });
    throw new Error(`Could not read ${what}: ${err.message}`, { cause: err }); // retried
  }
  await setJobProgress(sql, jobId, { pages_found: 1, pages_fetched: 1, pages_skipped: 0, pages_failed: 0 });
  return [{ url: null, title: doc.title, chunks: doc.chunks }];
}

export function knowledgeQueues(services: Services): QueueDef<never>[] {
  registerParseMetrics(services.metrics.registry);
  return [
    {
      name: INGEST_QUEUE,
      options: { retryLimit: services.config.KB_JOB_RETRY_LIMIT, retryDelay: services.config.KB_JOB_RETRY_DELAY_SECONDS, retryBackoff: true },
      // Two jobs at a time per process (crawls mostly wait on the network). A NOTIFY that arrives while both
      // are busy is missed, so the backstop poll is short.
      work: { batchSize: 1, localConcurrency: 2, pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 2 },
      handler: async (jobs: Job<{ job_id: string }>[]) => {
        for (const job of jobs) await runIngest(services, job.data.job_id, { final: job.retryCount >= services.config.KB_JOB_RETRY_LIMIT, hooks: testHooks });
      },
    },
  ];
}

/** Tests install hooks on the queue worker here (never set in production). */
export let testHooks: IngestHooks | undefined;
export const setTestHooks = (h: IngestHooks | undefined) => void (testHooks = h);
