import type { Db } from '../../db/types.ts';
import type { LlmModel, LlmProvider, RealtimeSettings } from '../../../../schemas/models.ts';
import { pageOf, totalColumn, type Counted } from '../../db/list-page.ts';

const columns = (db: Db) => db`
  id, name, provider, model, base_url, system_prompt, temperature, max_tokens, tool_ids, knowledge_base_ids, realtime, created_at, updated_at`;

export interface ModelWrite {
  name: string;
  provider: LlmProvider;
  model: string;
  base_url: string | null;
  system_prompt: string | null;
  temperature: number;
  max_tokens: number | null;
  tool_ids: string[];
  knowledge_base_ids: string[];
  realtime: RealtimeSettings | null;
}

export async function insertModel(db: Db, orgId: string, m: ModelWrite): Promise<LlmModel> {
  const [row] = await db<LlmModel[]>`
    insert into llm_models (org_id, name, provider, model, base_url, system_prompt, temperature, max_tokens, tool_ids, knowledge_base_ids, realtime)
    values (${orgId}, ${m.name}, ${m.provider}, ${m.model}, ${m.base_url}, ${m.system_prompt}, ${m.temperature}, ${m.max_tokens},
            ${m.tool_ids}::uuid[], ${m.knowledge_base_ids}::uuid[], ${m.realtime ? db.json(m.realtime) : null})
    returning ${columns(db)}`;
  return row!;
}

export async function getModel(db: Db, orgId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<LlmModel | null> {
  const [row] = await db<LlmModel[]>`
    select ${columns(db)} from llm_models where id = ${id} and org_id = ${orgId} and deleted_at is null
    ${opts.forUpdate ? db`for update` : db``}`;
  return row ?? null;
}

export async function listModels(db: Db, orgId: string, q: { limit: number; offset: number; provider?: string | undefined }) {
  const where = db`org_id = ${orgId} and deleted_at is null ${q.provider ? db`and provider = ${q.provider}` : db``}`;
  const from = db`llm_models where ${where}`;
  const rows = await db<Counted<LlmModel>[]>`select ${columns(db)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`;
  return pageOf(db, rows, q.offset, from);
}

export async function updateModel(db: Db, orgId: string, id: string, m: ModelWrite): Promise<LlmModel> {
  const [row] = await db<LlmModel[]>`
    update llm_models set
      name = ${m.name}, provider = ${m.provider}, model = ${m.model}, base_url = ${m.base_url}, system_prompt = ${m.system_prompt},
      temperature = ${m.temperature}, max_tokens = ${m.max_tokens}, tool_ids = ${m.tool_ids}::uuid[],
      knowledge_base_ids = ${m.knowledge_base_ids}::uuid[], realtime = ${m.realtime ? db.json(m.realtime) : null}, updated_at = now()
    where id = ${id} and org_id = ${orgId} and deleted_at is null
    returning ${columns(db)}`;
  return row!;
}

export async function softDeleteModel(db: Db, orgId: string, id: string): Promise<void> {
  await db`update llm_models set deleted_at = now(), updated_at = now() where id = ${id} and org_id = ${orgId} and deleted_at is null`;
}

/** Live agents that use a model (they would lose their LLM). */
export async function agentsUsingModel(db: Db, orgId: string, modelId: string): Promise<{ id: string; name: string }[]> {
  return db<{ id: string; name: string }[]>`
    select id, name from agents where org_id = ${orgId} and llm_id = ${modelId} and deleted_at is null order by created_at, id`;
}

/** Live models that link a tool. */
export async function modelsUsingTool(db: Db, orgId: string, toolId: string): Promise<{ id: string; name: string }[]> {
  return db<{ id: string; name: string }[]>`
    select id, name from llm_models where org_id = ${orgId} and tool_ids @> array[${toolId}::uuid] and deleted_at is null
    order by created_at, id`;
}

/** Names of the given tools (live, of the org), in the order of `ids`. */
export async function toolNames(db: Db, orgId: string, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = await db<{ id: string; name: string }[]>`
    select id, name from tools where org_id = ${orgId} and id = any(${ids}::uuid[]) and deleted_at is null`;
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** Live models that link `toolId` and another live tool named `name` (renaming the tool would clash there). */
export async function modelsWithToolNameClash(db: Db, orgId: string, toolId: string, name: string): Promise<{ id: string; name: string }[]> {
  return db<{ id: string; name: string }[]>`
    select distinct m.id, m.name from llm_models m
    join tools t on t.id = any(m.tool_ids) and t.deleted_at is null and t.id <> ${toolId} and t.name = ${name}
    where m.org_id = ${orgId} and m.deleted_at is null and m.tool_ids @> array[${toolId}::uuid]
    order by m.name, m.id`;
}
