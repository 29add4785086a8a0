// SQL of knowledge bases, sources, jobs and chunks.
import type { Db } from '../../db/types.ts';
import type { KnowledgeBase, KnowledgeJob, KnowledgeSource } from '../../../../schemas/knowledge-bases.ts';
import { pageOf, totalColumn, type Counted } from '../../db/list-page.ts';

export interface KbRow {
  id: string;
  org_id: string;
  name: string;
  chunk_size: number;
  multilingual: boolean;
  language: string;
  mode: string;
  total_tokens: number;
  created_at: Date;
  updated_at: Date;
}

// A source's `chunk_count` and `token_count` always describe the chunks stored for it: they are written in the
// transaction that replaces the chunks and nowhere else. A source being re-ingested (queued, processing) or whose
// re-ingestion failed (error) keeps its previous chunks and counts, so budgets, totals and search sum the counts
// and read the chunks whatever the status; a source that never finished ingesting has neither.
export interface SourceRow {
  id: string;
  org_id: string;
  kb_id: string;
  type: 'url' | 'file' | 'text';
  source: string;
  file_name: string;
  mime_type: string;
  file_size: number;
  status: 'queued' | 'processing' | 'ready' | 'error';
  error_message: string | null;
  chunk_count: number;
  token_count: number;
  created_at: Date;
}

export interface JobRow {
  id: string;
  org_id: string;
  kb_id: string;
  source_id: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  attempts: number;
  pages_found: number;
  pages_fetched: number;
  pages_skipped: number;
  pages_failed: number;
  chunks: number;
  tokens: number;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** Text-search configuration of a base's chunks. */
export const tsConfigOf = (kb: Pick<KbRow, 'multilingual' | 'language'>) => (kb.multilingual ? 'simple' : kb.language);

const sourceCols = (db: Db) => db`
  id, org_id, kb_id, type, source, file_name, mime_type, file_size, status, error_message, chunk_count, token_count, created_at`;
const jobCols = (db: Db) => db`
  id, org_id, kb_id, source_id, status, attempts, pages_found, pages_fetched, pages_skipped, pages_failed, chunks, tokens, error,
  created_at, started_at, finished_at`;

export const sourceView = (s: SourceRow): KnowledgeSource => ({
  source_id: s.id,
  kb_id: s.kb_id,
  type: s.type,
  source: s.source,
  chunk_count: s.chunk_count,
  status: s.status,
  error_message: s.error_message,
  created_at: s.created_at.toISOString(),
  file_name: s.file_name,
  mime_type: s.mime_type,
  file_size: s.file_size,
  token_count: s.token_count,
});

export const kbView = (k: KbRow, sources: SourceRow[]): KnowledgeBase => ({
  kb_id: k.id,
  name: k.name,
  chunk_size: k.chunk_size,
  multilingual: k.multilingual,
  language: k.language,
  created_at: k.created_at.toISOString(),
  updated_at: k.updated_at.toISOString(),
  total_tokens: k.total_tokens,
  mode: k.mode,
  sources: sources.map(sourceView),
});

export const jobView = (j: JobRow): KnowledgeJob => ({
  job_id: j.id,
  kb_id: j.kb_id,
  source_id: j.source_id,
  status: j.status,
  attempts: j.attempts,
  progress: {
    pages_found: j.pages_found,
    pages_fetched: j.pages_fetched,
    pages_skipped: j.pages_skipped,
    pages_failed: j.pages_failed,
    chunks: j.chunks,
    tokens: j.tokens,
  },
  timings: {
    created_at: j.created_at.toISOString(),
    started_at: j.started_at?.toISOString() ?? null,
    finished_at: j.finished_at?.toISOString() ?? null,
    duration_ms: j.started_at && j.finished_at ? j.finished_at.getTime() - j.started_at.getTime() : null,
  },
  error: j.error,
});

export interface KbWrite {
  name: string;
  chunk_size: number;
  multilingual: boolean;
  language: string;
  mode: string;
}

export async function insertKb(db: Db, orgId: string, k: KbWrite): Promise<KbRow> {
  const [row] = await db<KbRow[]>`
    insert into knowledge_bases (org_id, name, chunk_size, multilingual, language, mode)
    values (${orgId}, ${k.name}, ${k.chunk_size}, ${k.multilingual}, ${k.language}, ${k.mode})
    returning *`;
  return row!;
}

export async function getKb(db: Db, orgId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<KbRow | null> {
  const [row] = await db<KbRow[]>`
    select * from knowledge_bases where id = ${id} and org_id = ${orgId} ${opts.forUpdate ? db`for update` : db``}`;
  return row ?? null;
}

export async function listKbs(db: Db, orgId: string, q: { limit: number; offset: number }): Promise<{ items: KbRow[]; total: number }> {
  const from = db`knowledge_bases where org_id = ${orgId}`;
  const rows = await db<Counted<KbRow>[]>`select *, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`;
  return pageOf(db, rows, q.offset, from);
}

export async function updateKb(db: Db, orgId: string, id: string, k: KbWrite): Promise<KbRow> {
  const [row] = await db<KbRow[]>`
    update knowledge_bases set name = ${k.name}, chunk_size = ${k.chunk_size}, multilingual = ${k.multilingual},
      language = ${k.language}, mode = ${k.mode}, updated_at = now()
    where id = ${id} and org_id = ${orgId}
    returning *`;
  return row!;
}

/** Re-indexes a base's chunks under a new text-search configuration (the tsvector is generated from it). */
export async function setChunksConfig(db: Db, kbId: string, config: string): Promise<void> {
  await db`update knowledge_chunks set ts_config = ${config}::regconfig where kb_id = ${kbId} and ts_config <> ${config}::regconfig`;
  await rebuildTerms(db, kbId);
}

/** Deletes a base with its sources, jobs and chunks, and unlinks it from every model of the org. */
export async function deleteKb(db: Db, orgId: string, id: string): Promise<void> {
  await db`update llm_models set knowledge_base_ids = array_remove(knowledge_base_ids, ${id}::uuid), updated_at = now()
           where org_id = ${orgId} and knowledge_base_ids @> array[${id}::uuid]`;
  await db`delete from knowledge_bases where id = ${id} and org_id = ${orgId}`;
}

export async function sourcesOf(db: Db, kbIds: string[]): Promise<Map<string, SourceRow[]>> {
  const map = new Map<string, SourceRow[]>(kbIds.map((id) => [id, []]));
  if (!kbIds.length) return map;
  const rows = await db<SourceRow[]>`select ${sourceCols(db)} from knowledge_sources where kb_id = any(${kbIds}::uuid[]) order by created_at, id`;
  for (const r of rows) map.get(r.kb_id)!.push(r);
  return map;
}

export async function listSources(db: Db, kbId: string, q: { limit: number; offset: number }): Promise<{ items: SourceRow[]; total: number }> {
  const from = db`knowledge_sources where kb_id = ${kbId}`;
  const rows = await db<Counted<SourceRow>[]>`select ${sourceCols(db)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`;
  return pageOf(db, rows, q.offset, from);
}

export async function getSource(db: Db, orgId: string, kbId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<SourceRow | null> {
  const [row] = await db<SourceRow[]>`
    select ${sourceCols(db)} from knowledge_sources where id = ${id} and kb_id = ${kbId} and org_id = ${orgId}
    ${opts.forUpdate ? db`for update` : db``}`;
  return row ?? null;
}

export interface SourceWrite {
  type: 'url' | 'file' | 'text';
  source: string;
  file_name: string;
  mime_type: string;
  file_size: number;
  payload: Buffer | null;
}

export async function insertSourceAndJob(db: Db, orgId: string, kbId: string, s: SourceWrite): Promise<{ source: SourceRow; job: JobRow }> {
  const [source] = await db<SourceRow[]>`
    insert into knowledge_sources (org_id, kb_id, type, source, file_name, mime_type, file_size, payload)
    values (${orgId}, ${kbId}, ${s.type}, ${s.source}, ${s.file_name}, ${s.mime_type}, ${s.file_size}, ${s.payload})
    returning ${sourceCols(db)}`;
  const [job] = await db<JobRow[]>`
    insert into knowledge_jobs (org_id, kb_id, source_id, pages_found) values (${orgId}, ${kbId}, ${source!.id}, ${s.type === 'url' ? 0 : 1})
    returning ${jobCols(db)}`;
  return { source: source!, job: job! };
}

/**
 * Queues a source for re-ingestion: back to `queued` with a new job. The chunks and counts stay until the new
 * job replaces them. Null when the source has no stored content to read again (a file or text without payload).
 */
export async function queueReingest(db: Db, s: SourceRow): Promise<{ source: SourceRow; job: JobRow } | null> {
  const [source] = await db<SourceRow[]>`
    update knowledge_sources set status = 'queued', error_message = null, updated_at = now()
    where id = ${s.id} and (type = 'url' or payload is not null)
    returning ${sourceCols(db)}`;
  if (!source) return null;
  const [job] = await db<JobRow[]>`
    insert into knowledge_jobs (org_id, kb_id, source_id, pages_found) values (${s.org_id}, ${s.kb_id}, ${s.id}, ${s.type === 'url' ? 0 : 1})
    returning ${jobCols(db)}`;
  return { source: source!, job: job! };
}

/** Deletes a source (its chunks and jobs follow) and gives its tokens back: the base total is recomputed. */
export async function deleteSource(db: Db, kbId: string, id: string): Promise<void> {
  await adjustTerms(db, kbId, id, -1);
  await db`delete from knowledge_sources where id = ${id} and kb_id = ${kbId}`;
  await refreshKbTotal(db, kbId);
}

export async function refreshKbTotal(db: Db, kbId: string): Promise<void> {
  await db`
    update knowledge_bases set total_tokens = coalesce((select sum(token_count) from knowledge_sources where kb_id = ${kbId}), 0),
      updated_at = now()
    where id = ${kbId}`;
}

export async function getJob(db: Db, orgId: string, kbId: string, id: string): Promise<JobRow | null> {
  const [row] = await db<JobRow[]>`select ${jobCols(db)} from knowledge_jobs where id = ${id} and kb_id = ${kbId} and org_id = ${orgId}`;
  return row ?? null;
}

export async function getJobById(db: Db, id: string): Promise<JobRow | null> {
  const [row] = await db<JobRow[]>`select ${jobCols(db)} from knowledge_jobs where id = ${id}`;
  return row ?? null;
}

export async function latestJobOf(db: Db, sourceId: string): Promise<JobRow | null> {
  const [row] = await db<JobRow[]>`select ${jobCols(db)} from knowledge_jobs where source_id = ${sourceId} order by created_at desc, id desc limit 1`;
  return row ?? null;
}

/** Tokens indexed for the org's sources other than `exceptSource`, with the org's budget; locks the org row. */
export async function lockBudget(db: Db, orgId: string, exceptSource: string): Promise<{ budget: number; used: number }> {
  const [org] = await db<{ kb_token_budget: number }[]>`select kb_token_budget from orgs where id = ${orgId} for update`;
  const [u] = await db<{ used: number }[]>`
    select coalesce(sum(token_count), 0)::int as used from knowledge_sources where org_id = ${orgId} and id <> ${exceptSource}`;
  return { budget: org!.kb_token_budget, used: u!.used };
}

/** Sources in error, for the activity summary's `error_signals.kb_sources_errored`. */
export async function erroredSources(db: Db, orgId: string): Promise<{ knowledge_base_id: string; source_id: string; error_message: string | null }[]> {
  return db<{ knowledge_base_id: string; source_id: string; error_message: string | null }[]>`
    select kb_id as knowledge_base_id, id as source_id, error_message from knowledge_sources
    where org_id = ${orgId} and status = 'error' order by updated_at desc, id limit 100`;
}

/** Tokens indexed for the org's sources (usage). */
export async function tokensUsed(db: Db, orgId: string): Promise<number> {
  const [u] = await db<{ used: number }[]>`select coalesce(sum(token_count), 0)::int as used from knowledge_sources where org_id = ${orgId}`;
  return u!.used;
}

/**
 * Adds (sign 1) or removes (sign -1) the lexeme counts of a source's chunks to its base's document
 * frequencies. Called in the transaction that writes or deletes the chunks.
 */
export async function adjustTerms(db: Db, kbId: string, sourceId: string, sign: 1 | -1): Promise<void> {
  // ts_stat takes the text of a query; the id is quoted by format(%L).
  const stat = db`ts_stat(format('select tsv from knowledge_chunks where source_id = %L', ${sourceId}::text))`;
  if (sign > 0) {
    await db`
      insert into knowledge_terms (kb_id, lexeme, ndoc)
      select ${kbId}, word, ndoc from ${stat}
      on conflict (kb_id, lexeme) do update set ndoc = knowledge_terms.ndoc + excluded.ndoc`;
  } else {
    await db`
      update knowledge_terms t set ndoc = greatest(0, t.ndoc - s.ndoc)
      from ${stat} s where t.kb_id = ${kbId} and t.lexeme = s.word`;
    await db`delete from knowledge_terms where kb_id = ${kbId} and ndoc = 0`;
  }
}

/** Recounts a base's document frequencies from its chunks (after a change of text-search configuration). */
export async function rebuildTerms(db: Db, kbId: string): Promise<void> {
  await db`delete from knowledge_terms where kb_id = ${kbId}`;
  await db`
    insert into knowledge_terms (kb_id, lexeme, ndoc)
    select ${kbId}, word, ndoc from ts_stat(format('select tsv from knowledge_chunks where kb_id = %L', ${kbId}::text))`;
}

// ---- Ingestion ------------------------------------------------------------------------------------------

export interface IngestSource {
  id: string;
  chunk_count: number;
  type: 'url' | 'file' | 'text';
  source: string;
  file_name: string;
  mime_type: string;
  payload: Buffer | null;
  status: string;
}

export async function ingestTarget(db: Db, job: Pick<JobRow, 'source_id' | 'kb_id'>): Promise<{ src: IngestSource | undefined; kb: KbRow | undefined }> {
  const [src] = await db<IngestSource[]>`
    select id, chunk_count, type, source, file_name, mime_type, payload, status from knowledge_sources where id = ${job.source_id}`;
  const [kb] = await db<KbRow[]>`select * from knowledge_bases where id = ${job.kb_id}`;
  return { src, kb };
}

/** A new attempt: the job runs with its progress reset, the source is processing. */
export async function startAttempt(db: Db, jobId: string, sourceId: string, isUrl: boolean): Promise<void> {
  await db`
    update knowledge_jobs set status = 'running', attempts = attempts + 1, started_at = now(), finished_at = null, error = null,
      pages_found = ${isUrl ? 0 : 1}, pages_fetched = 0, pages_skipped = 0, pages_failed = 0, chunks = 0, tokens = 0, updated_at = now()
    where id = ${jobId}`;
  await db`update knowledge_sources set status = 'processing', error_message = null, updated_at = now() where id = ${sourceId} and status = 'queued'`;
}

export async function setJobTotals(db: Db, jobId: string, chunks: number, tokens: number): Promise<void> {
  await db`update knowledge_jobs set chunks = ${chunks}, tokens = ${tokens}, updated_at = now() where id = ${jobId}`;
}

export async function setJobProgress(db: Db, jobId: string, p: { pages_found: number; pages_fetched: number; pages_skipped: number; pages_failed: number }): Promise<void> {
  await db`
    update knowledge_jobs set pages_found = ${p.pages_found}, pages_fetched = ${p.pages_fetched}, pages_skipped = ${p.pages_skipped},
      pages_failed = ${p.pages_failed}, updated_at = now()
    where id = ${jobId}`;
}

/** Locks the source row; false when it was deleted (the job then writes nothing). */
export async function lockLiveSource(db: Db, sourceId: string): Promise<boolean> {
  const [live] = await db`select id from knowledge_sources where id = ${sourceId} for update`;
  return !!live;
}

export async function deleteChunksOf(db: Db, sourceId: string): Promise<void> {
  await db`delete from knowledge_chunks where source_id = ${sourceId}`;
}

export interface ChunkRow {
  org_id: string;
  kb_id: string;
  source_id: string;
  ordinal: number;
  heading: string;
  content: string;
  url: string | null;
  title: string;
  token_count: number;
  ts_config: string;
}

export async function insertChunks(db: Db, rows: ChunkRow[]): Promise<{ id: string; ordinal: number }[]> {
  return (await db`
    insert into knowledge_chunks ${db(rows, 'org_id', 'kb_id', 'source_id', 'ordinal', 'heading', 'content', 'url', 'title', 'token_count', 'ts_config')}
    returning id, ordinal`) as unknown as { id: string; ordinal: number }[];
}

export async function markSourceReady(db: Db, sourceId: string, chunks: number, tokens: number): Promise<void> {
  await db`
    update knowledge_sources set status = 'ready', error_message = null, chunk_count = ${chunks}, token_count = ${tokens},
      payload = case when type = 'url' then null else payload end, updated_at = now()
    where id = ${sourceId}`;
}

export async function markSourceError(db: Db, sourceId: string, message: string): Promise<void> {
  await db`update knowledge_sources set status = 'error', error_message = ${message}, updated_at = now() where id = ${sourceId}`;
}

/** Back to queued for a retry. */
export async function requeueSource(db: Db, sourceId: string): Promise<void> {
  await db`update knowledge_sources set status = 'queued', updated_at = now() where id = ${sourceId} and status = 'processing'`;
}

export async function finishJob(db: Db, jobId: string, status: 'succeeded' | 'failed' | 'queued', error: string | null): Promise<void> {
  await db`update knowledge_jobs set status = ${status}, error = ${error}, finished_at = now(), updated_at = now() where id = ${jobId}`;
}

// ---- Retrieval ------------------------------------------------------------------------------------------

export interface SearchHit {
  content: string;
  heading: string;
  score: number;
  source_id: string;
  kb_id: string;
  url: string | null;
  title: string;
  token_count: number;
}

export async function basesForSearch(db: Db, orgId: string, ids: string[]) {
  return db<{ id: string; multilingual: boolean; language: string; mode: string; total_tokens: number }[]>`
    select id, multilingual, language, mode, total_tokens from knowledge_bases where org_id = ${orgId} and id = any(${ids}::uuid[])
    order by array_position(${ids}::uuid[], id)`;
}

/** The lexemes of `text` under `config`, each with its document frequency in the bases, and their chunk total. */
export async function termFrequencies(db: Db, config: string, ids: string[], text: string) {
  return db<{ lexeme: string; ndoc: number; total: number }[]>`
    select q.lexeme, coalesce(sum(t.ndoc), 0)::int as ndoc,
      (select coalesce(sum(chunk_count), 0)::int from knowledge_sources where kb_id = any(${ids}::uuid[])) as total
    from unnest(tsvector_to_array(to_tsvector(${config}::regconfig, ${text}))) as q(lexeme)
    left join knowledge_terms t on t.kb_id = any(${ids}::uuid[]) and t.lexeme = q.lexeme
    group by q.lexeme`;
}

/** Chunks matching the candidate tsquery, ranked by ts_rank_cd against the full one. */
export async function rankedChunks(db: Db, ids: string[], rankQuery: string, candidateQuery: string, limit: number) {
  return db<(SearchHit & { id: string })[]>`
    select c.id::text as id, c.content, c.heading, ts_rank_cd(c.tsv, ${rankQuery}::tsquery, 32)::float8 as score,
      c.source_id, c.kb_id, c.url, c.title, c.token_count
    from knowledge_chunks c
    where c.kb_id = any(${ids}::uuid[]) and c.tsv @@ ${candidateQuery}::tsquery
    order by score desc, c.id
    limit ${limit}`;
}

/** Every chunk of the bases, in base, source and position order (stuff mode). */
export async function chunksInOrder(db: Db, ids: string[]) {
  return db<{ heading: string; content: string; title: string }[]>`
    select c.heading, c.content, c.title from knowledge_chunks c join knowledge_sources s on s.id = c.source_id
    where c.kb_id = any(${ids}::uuid[])
    order by array_position(${ids}::uuid[], c.kb_id), s.created_at, s.id, c.ordinal`;
}

/** The bases linked to a call's agent's model, within the call's organisation. */
export async function kbIdsForCall(db: Db, call: { org_id: string; agent_id: string }): Promise<string[]> {
  const [m] = await db<{ knowledge_base_ids: string[] }[]>`
    select m.knowledge_base_ids from agents a join llm_models m on m.id = a.llm_id and m.org_id = a.org_id
    where a.id = ${call.agent_id} and a.org_id = ${call.org_id}`;
  return m?.knowledge_base_ids ?? [];
}

// ---- Optional vectors (pgvector) ------------------------------------------------------------------------

export async function pgvectorAvailable(db: Db): Promise<boolean> {
  const [avail] = await db<{ n: number }[]>`select count(*)::int as n from pg_available_extensions where name = 'vector'`;
  return avail!.n > 0;
}

/** The embeddings table (dimension from the configuration, hence created at run time, not by a migration). */
export async function createVectorSchema(db: Db, dimensions: number): Promise<void> {
  await db`create extension if not exists vector`;
  await db.unsafe(`
    create table if not exists knowledge_embeddings (
      chunk_id bigint primary key references knowledge_chunks (id) on delete cascade,
      kb_id uuid not null references knowledge_bases (id) on delete cascade,
      embedding vector(${Math.trunc(Number(dimensions))}) not null
    )`);
  await db`create index if not exists knowledge_embeddings_hnsw on knowledge_embeddings using hnsw (embedding vector_cosine_ops)`;
  await db`create index if not exists knowledge_embeddings_kb on knowledge_embeddings (kb_id)`;
}

export async function insertEmbeddings(db: Db, rows: { chunk_id: string; kb_id: string; embedding: string }[]): Promise<void> {
  await db`
    insert into knowledge_embeddings (chunk_id, kb_id, embedding)
    select chunk_id::bigint, kb_id::uuid, embedding::vector from json_to_recordset(${JSON.stringify(rows)}::json)
      as x(chunk_id text, kb_id text, embedding text)
    on conflict (chunk_id) do update set embedding = excluded.embedding`;
}

/** The chunks nearest to a vector literal in the given bases (cosine distance), best first. */
export async function nearestChunks(db: Db, kbIds: string[], vector: string, limit: number) {
  return db<(SearchHit & { id: string })[]>`
    select c.id::text as id, c.content, c.heading, (1 - (e.embedding <=> ${vector}::vector))::float8 as score,
      c.source_id, c.kb_id, c.url, c.title, c.token_count
    from knowledge_embeddings e join knowledge_chunks c on c.id = e.chunk_id
    where e.kb_id = any(${kbIds}::uuid[])
    order by e.embedding <=> ${vector}::vector
    limit ${limit}`;
}
