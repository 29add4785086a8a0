// Optional vector search, hybrid with full-text search. On only when both hold:
//   - KB_EMBEDDINGS_BASE_URL names an OpenAI-compatible embeddings API (KB_EMBEDDINGS_MODEL, _API_KEY,
//     _DIMENSIONS), set by the operator (not a customer URL);
//   - the database has the pgvector extension (Debian's PostgreSQL 15 and the embedded server do not).
// The vectors live in their own table, created at run time (its dimension comes from the configuration), so
// the migrations and the default path never need pgvector. Ingestion embeds the chunks before its write
// transaction and stores them in it; a search embeds the question, takes the nearest chunks (HNSW, cosine)
// and merges them with the full-text results by reciprocal rank (RRF, k = 60).
import type { Db } from '../../db/types.ts';
import type { Config } from '../../config.ts';
import { createVectorSchema, insertEmbeddings, nearestChunks as nearestRows, pgvectorAvailable, type SearchHit } from './queries.ts';

export interface EmbeddingsConfig {
  baseUrl: string;
  model: string;
  apiKey: string | undefined;
  dimensions: number;
}

export function embeddingsConfig(c: Pick<Config, 'KB_EMBEDDINGS_BASE_URL' | 'KB_EMBEDDINGS_MODEL' | 'KB_EMBEDDINGS_API_KEY' | 'KB_EMBEDDINGS_DIMENSIONS'>): EmbeddingsConfig | null {
  if (!c.KB_EMBEDDINGS_BASE_URL) return null;
  return { baseUrl: c.KB_EMBEDDINGS_BASE_URL.replace(/\/$/, ''), model: c.KB_EMBEDDINGS_MODEL, apiKey: c.KB_EMBEDDINGS_API_KEY, dimensions: c.KB_EMBEDDINGS_DIMENSIONS };
}

const ready = new WeakMap<object, Promise<boolean>>();

/** True when pgvector is installed (or installable) and the embeddings table exists; checked once per pool. */
export function vectorReady(db: Db, cfg: EmbeddingsConfig): Promise<boolean> {
  let p = ready.get(db);
  if (!p) {
    p = (async () => {
      if (!(await pgvectorAvailable(db))) return false;
      await createVectorSchema(db, cfg.dimensions);
      return true;
    })();
    ready.set(db, p);
  }
  return p;
}

/** Embeddings of `texts`, in order, from the configured OpenAI-compatible endpoint (batches of 64). */
export async function embed(cfg: EmbeddingsConfig, texts: string[], timeoutMs = 30_000): Promise<number[][]> {
  const out: number[][] = [];
  for (let i = 0; i < texts.length; i += 64) {
    const res = await fetch(`${cfg.baseUrl}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {}) },
      body: JSON.stringify({ model: cfg.model, input: texts.slice(i, i + 64), dimensions: cfg.dimensions }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) throw new Error(`embeddings endpoint answered ${res.status}`);
    const body = (await res.json()) as { data: { index: number; embedding: number[] }[] };
    for (const d of [...body.data].sort((a, b) => a.index - b.index)) out.push(d.embedding);
  }
  if (out.length !== texts.length || out.some((v) => v.length !== cfg.dimensions)) throw new Error('embeddings endpoint returned unexpected vectors');
  return out;
}

const literal = (v: number[]) => `[${v.map((x) => (Number.isFinite(x) ? x : 0)).join(',')}]`;

export async function storeEmbeddings(db: Db, kbId: string, rows: { id: string | number; embedding: number[] }[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 200) {
    await insertEmbeddings(db, rows.slice(i, i + 200).map((r) => ({ chunk_id: String(r.id), kb_id: kbId, embedding: literal(r.embedding) })));
  }
}

/** The chunks nearest to `vector` in the given bases (cosine distance), best first. */
export async function nearestChunks(db: Db, kbIds: string[], vector: number[], limit: number): Promise<(SearchHit & { id: string })[]> {
  return nearestRows(db, kbIds, literal(vector), limit);
}

/**
 * Reciprocal rank fusion: each list gives 1 / (k + rank) to its items; items are told apart by `key`. The
 * fused score replaces the lists' own scores (they are not comparable).
 */
export function rrf<T>(lists: T[][], key: (t: T) => string, k = 60): (T & { score: number })[] {
  const acc = new Map<string, { item: T; score: number }>();
  for (const list of lists) {
    list.forEach((item, i) => {
      const id = key(item);
      const cur = acc.get(id) ?? { item, score: 0 };
      cur.score += 1 / (k + i + 1);
      acc.set(id, cur);
    });
  }
  return [...acc.values()].sort((a, b) => b.score - a.score).map((e) => ({ ...e.item, score: e.score }));
}
