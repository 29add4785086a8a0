// Retrieval at call time. Full-text search in PostgreSQL, in two statements per text-search configuration:
//  1. the question's words become lexemes under the base's configuration, each with its document frequency
//     in the bases (knowledge_terms);
//  2. candidates are the chunks holding the most selective lexemes (rarest first, while their frequencies add
//     up to CANDIDATE_BUDGET chunks, always at least the rarest one), found by the GIN index, and ranked by
//     ts_rank_cd (cover density, normalised to 0-1) against all the question's lexemes OR-ed together (a
//     spoken question rarely holds every word of its answer, so AND would miss).
// Without step 1 a word present in most chunks makes the ranking read most of the base (hundreds of ms at
// 100k chunks); a word that common says little about which chunk answers anyway (the idea of IDF).
// The best chunks are then kept within the turn's token budget.
import type { Db } from '../../db/types.ts';
import type { KnowledgeConfig } from '../../../../schemas/internal.ts';
import { Histogram } from 'prom-client';
import type { Services } from '../../services.ts';
import { basesForSearch, chunksInOrder, kbIdsForCall, rankedChunks, termFrequencies, tsConfigOf, type SearchHit } from './queries.ts';
import { formatChunk } from './format.ts';
import { embed, embeddingsConfig, nearestChunks, rrf, vectorReady, type EmbeddingsConfig } from './vector.ts';

export type { SearchHit };

/** Distinct words of a question (letters and digits of any script), at most 32. */
export function queryWords(query: string): string[] {
  return [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].slice(0, 32);
}

/** Chunks the ranking should read at most (estimated from the chosen lexemes' document frequencies). */
export const CANDIDATE_BUDGET = 1000;

/** tsquery text of lexemes; they come from words of letters and digits, so quoting is enough. */
const tsq = (lexemes: string[], op: '|' | '&') => lexemes.map((l) => `'${l.replace(/'/g, "''")}'`).join(` ${op} `);

/**
 * The candidate condition: the rarest lexemes OR-ed while their frequencies add up to the budget; when even
 * the rarest one is over it, the rarest ones AND-ed until the estimated intersection (independent words)
 * fits. Returns tsquery text.
 */
export function candidateQuery(terms: { lexeme: string; ndoc: number }[], total: number, budget = CANDIDATE_BUDGET): string {
  const sorted = terms.filter((t) => t.ndoc > 0).sort((a, b) => a.ndoc - b.ndoc);
  if (!sorted.length) return '';
  const chosen = [sorted[0]!];
  if (sorted[0]!.ndoc <= budget) {
    let sum = sorted[0]!.ndoc;
    for (const t of sorted.slice(1)) {
      if (sum + t.ndoc > budget) break;
      chosen.push(t);
      sum += t.ndoc;
    }
    return tsq(chosen.map((t) => t.lexeme), '|');
  }
  let estimate = sorted[0]!.ndoc;
  for (const t of sorted.slice(1)) {
    if (estimate <= budget) break;
    chosen.push(t);
    estimate *= t.ndoc / Math.max(total, t.ndoc);
  }
  return tsq(chosen.map((t) => t.lexeme), '&');
}

export async function searchChunks(
  db: Db,
  orgId: string,
  kbIds: string[],
  query: string,
  opts: { topK: number; maxTokens: number; embeddings?: EmbeddingsConfig | null; onVectorError?: (err: unknown) => void },
): Promise<SearchHit[]> {
  const words = queryWords(query);
  if (!words.length || !kbIds.length) return [];
  const bases = await basesForSearch(db, orgId, kbIds);
  const byConfig = new Map<string, string[]>();
  for (const b of bases) byConfig.set(tsConfigOf(b), [...(byConfig.get(tsConfigOf(b)) ?? []), b.id]);
  let hits: (SearchHit & { id: string })[] = [];
  for (const [config, ids] of byConfig) {
    const terms = await termFrequencies(db, config, ids, words.join(' '));
    const present = terms.filter((t) => t.ndoc > 0);
    if (!present.length) continue;
    const selective = candidateQuery(present, terms[0]!.total);
    const all = tsq(present.map((t) => t.lexeme), '|');
    const rows = await rankedChunks(db, ids, all, selective, opts.topK * 2);
    hits.push(...rows);
  }
  hits.sort((a, b) => b.score - a.score);
  if (opts.embeddings && bases.length) {
    // Hybrid: the question's nearest chunks merged with the full-text ranking by reciprocal rank. A failing
    // embeddings call leaves the full-text results.
    try {
      const [vector] = await embed(opts.embeddings, [query], 1000);
      const near = await nearestChunks(db, bases.map((b) => b.id), vector!, opts.topK * 2);
      hits = rrf([hits, near], (h) => h.id);
    } catch (err) {
      opts.onVectorError?.(err);
    }
  }
  const out: SearchHit[] = [];
  let tokens = 0;
  for (const h of hits) {
    if (out.length >= opts.topK) break;
    if (tokens + h.token_count > opts.maxTokens) continue;
    const { id: _id, ...hit } = h;
    out.push(hit);
    tokens += h.token_count;
  }
  return out;
}

/**
 * The knowledge part of a call's config. Stuffing applies when every linked base is in `stuff` mode and they
 * fit in `stuffMaxTokens` together; otherwise the call searches per turn, so nothing is silently cut off.
 */
export async function knowledgeConfigFor(db: Db, orgId: string, kbIds: string[], stuffMaxTokens: number): Promise<KnowledgeConfig> {
  if (!kbIds.length) return { knowledge_base_ids: [], mode: 'retrieve' };
  const kbs = await basesForSearch(db, orgId, kbIds);
  const ids = kbs.map((k) => k.id);
  const total = kbs.reduce((n, k) => n + k.total_tokens, 0);
  if (!kbs.length || kbs.some((k) => k.mode !== 'stuff') || total > stuffMaxTokens) return { knowledge_base_ids: ids, mode: 'retrieve' };
  const chunks = await chunksInOrder(db, ids);
  return { knowledge_base_ids: ids, mode: 'stuff', stuffed_context: chunks.map(formatChunk).join('\n\n') };
}

export { formatChunk };

/**
 * The worker's search for one call: the bases linked to the call's agent's model, of the call's own
 * organisation only (a base id of another organisation in a model can never be searched).
 */
export async function searchForCall(
  services: Services,
  db: Db,
  call: { id: string; org_id: string; agent_id: string },
  req: { query: string; top_k: number; max_tokens?: number | undefined },
  /** The bases of the call's agent version (agent-versions); without it, those of the agent's model now. */
  versionKbIds?: string[] | null,
): Promise<{ chunks: SearchHit[] }> {
  const started = performance.now();
  const kbIds = versionKbIds ?? (await kbIdsForCall(db, call));
  const emb = embeddingsConfig(services.config);
  const chunks = await searchChunks(db, call.org_id, kbIds, req.query, {
    topK: req.top_k,
    maxTokens: req.max_tokens ?? services.config.KB_RETRIEVAL_MAX_TOKENS,
    embeddings: emb && (await vectorReady(services.sql, emb)) ? emb : null,
    onVectorError: (err) => services.log.warn({ err, call_id: call.id }, 'knowledge vector search failed; full-text results only'),
  });
  searchHistogram(services).observe({ result: chunks.length ? 'hit' : 'empty' }, (performance.now() - started) / 1000);
  return { chunks };
}

const histograms = new WeakMap<object, Histogram<'result'>>();
/** Server-side search time (the worker records the whole round trip per turn). */
function searchHistogram(services: Services): Histogram<'result'> {
  let h = histograms.get(services.metrics.registry);
  if (!h) {
    h = new Histogram({
      name: 'vap_kb_search_duration_seconds',
      help: 'Knowledge search time in the control plane, per worker request',
      labelNames: ['result'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [services.metrics.registry],
    });
    histograms.set(services.metrics.registry, h);
  }
  return h;
}
