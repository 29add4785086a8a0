// Retrieval at call time. Full-text search in PostgreSQL: the question's words are OR-ed into a tsquery under
// each base's configuration (a spoken question rarely has every word of the answer, so AND would miss), the
// GIN index finds the candidates and ts_rank_cd (cover density, normalised to 0-1) orders them. Bases that
// share a configuration are searched in one statement, so the index serves each query with a constant
// tsquery. The best chunks are then kept within the turn's token budget.
import type { Db } from '../../db/types.ts';
import type { KnowledgeConfig } from '../../../../schemas/internal.ts';
import { Histogram } from 'prom-client';
import type { Services } from '../../services.ts';
import { tsConfigOf } from './queries.ts';

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

/** Distinct words of a question (letters and digits of any script), at most 32. */
export function queryWords(query: string): string[] {
  return [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].slice(0, 32);
}

export async function searchChunks(db: Db, orgId: string, kbIds: string[], query: string, opts: { topK: number; maxTokens: number }): Promise<SearchHit[]> {
  const words = queryWords(query);
  if (!words.length || !kbIds.length) return [];
  const bases = await db<{ id: string; multilingual: boolean; language: string }[]>`
    select id, multilingual, language from knowledge_bases where org_id = ${orgId} and id = any(${kbIds}::uuid[])`;
  const byConfig = new Map<string, string[]>();
  for (const b of bases) byConfig.set(tsConfigOf(b), [...(byConfig.get(tsConfigOf(b)) ?? []), b.id]);
  const expr = words.join(' | ');
  const hits: SearchHit[] = [];
  for (const [config, ids] of byConfig) {
    const rows = await db<SearchHit[]>`
      select c.content, c.heading, ts_rank_cd(c.tsv, q, 32)::float8 as score, c.source_id, c.kb_id, c.url, c.title, c.token_count
      from knowledge_chunks c, to_tsquery(${config}::regconfig, ${expr}) q
      where c.kb_id = any(${ids}::uuid[]) and c.tsv @@ q
      order by score desc, c.id
      limit ${opts.topK * 2}`;
    hits.push(...rows);
  }
  hits.sort((a, b) => b.score - a.score);
  const out: SearchHit[] = [];
  let tokens = 0;
  for (const h of hits) {
    if (out.length >= opts.topK) break;
    if (tokens + h.token_count > opts.maxTokens) continue;
    out.push(h);
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
  const kbs = await db<{ id: string; mode: string; total_tokens: number }[]>`
    select id, mode, total_tokens from knowledge_bases where org_id = ${orgId} and id = any(${kbIds}::uuid[]) order by array_position(${kbIds}::uuid[], id)`;
  const ids = kbs.map((k) => k.id);
  const total = kbs.reduce((n, k) => n + k.total_tokens, 0);
  if (!kbs.length || kbs.some((k) => k.mode !== 'stuff') || total > stuffMaxTokens) return { knowledge_base_ids: ids, mode: 'retrieve' };
  const chunks = await db<{ heading: string; content: string; title: string }[]>`
    select c.heading, c.content, c.title from knowledge_chunks c join knowledge_sources s on s.id = c.source_id
    where c.kb_id = any(${ids}::uuid[]) and s.status = 'ready'
    order by array_position(${ids}::uuid[], c.kb_id), s.created_at, s.id, c.ordinal`;
  return { knowledge_base_ids: ids, mode: 'stuff', stuffed_context: chunks.map(formatChunk).join('\n\n') };
}

export const formatChunk = (c: { heading: string; content: string; title?: string }) => {
  const where = [c.title, c.heading].filter(Boolean).join(' › ');
  return where ? `[${where}]\n${c.content}` : c.content;
};

/**
 * The worker's search for one call: the bases linked to the call's agent's model, of the call's own
 * organisation only (a base id of another organisation in a model can never be searched).
 */
export async function searchForCall(
  services: Services,
  db: Db,
  call: { id: string; org_id: string; agent_id: string },
  req: { query: string; top_k: number; max_tokens?: number | undefined },
): Promise<{ chunks: SearchHit[] }> {
  const started = performance.now();
  const [m] = await db<{ knowledge_base_ids: string[] }[]>`
    select m.knowledge_base_ids from agents a join llm_models m on m.id = a.llm_id and m.org_id = a.org_id
    where a.id = ${call.agent_id} and a.org_id = ${call.org_id}`;
  const chunks = await searchChunks(db, call.org_id, m?.knowledge_base_ids ?? [], req.query, {
    topK: req.top_k,
    maxTokens: req.max_tokens ?? services.config.KB_RETRIEVAL_MAX_TOKENS,
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
