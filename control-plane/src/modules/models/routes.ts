import { defineRoute, reply } from '../../http/route.ts';
import { propagateChange } from '../agent-versions/service.ts';
import { actorOf } from '../agents/service.ts';
import type { Db } from '../../db/types.ts';
import { conflict, invalidField, notFound } from '../../http/errors.ts';
import { checkReferences } from '../../http/references.ts';
import { CreateLlmModel, LlmModel, type LlmModel as LlmModelRecord, LlmModelList, LlmModelListQuery, LlmModelParams, UpdateLlmModel } from '../../../../schemas/models.ts';
import { agentsUsingModel, getModel, insertModel, listModels, softDeleteModel, toolNames, updateModel, type ModelWrite } from './queries.ts';
import { resolveProvider, resolveRealtime } from './service.ts';
import { modelWarnings } from '../agents/warnings.ts';
import type { Config } from '../../config.ts';

/** A single model's answer: the record and why its calls would fail now (modules/agents/warnings.ts). */
async function withWarnings(db: Db, config: Config, orgId: string, row: LlmModelRecord): Promise<LlmModelRecord> {
  return { ...row, warnings: await modelWarnings(db, config, orgId, row) };
}

/** Linked tools and knowledge bases belong to the org, and the linked tools' names are distinct (the LLM calls them by name). */
async function checkLinks(db: Db, orgId: string, m: ModelWrite, changed: { tools: boolean; kbs: boolean }): Promise<void> {
  await checkReferences(db, orgId, [
    ...(changed.tools ? [{ loc: ['body', 'tool_ids'], table: 'tools' as const, what: 'tool', ids: m.tool_ids }] : []),
    ...(changed.kbs ? [{ loc: ['body', 'knowledge_base_ids'], table: 'knowledge_bases' as const, what: 'knowledge base', ids: m.knowledge_base_ids }] : []),
  ]);
  if (!changed.tools) return;
  const names = await toolNames(db, orgId, m.tool_ids);
  const seen = new Map<string, number>();
  for (const [i, id] of m.tool_ids.entries()) {
    const name = names.get(id)!;
    if (seen.has(name)) {
      throw invalidField(['body', 'tool_ids', i], `Tool name '${name}' is already used by tool_ids[${seen.get(name)}]; tools of one model need distinct names`, 'value_error', id);
    }
    seen.set(name, i);
  }
}

export const modelRoutes = [
  defineRoute({
    method: 'post',
    path: '/models',
    operationId: 'createModel',
    tag: 'llm-models',
    summary: 'Create an LLM model',
    description:
      'Creates a model record: the model id, its prompt and sampling settings, and the tools and knowledge bases it ' +
      'may use. `name` and `model` are required. The provider is inferred from the model id when omitted ' +
      '(gpt-\\*, o1/o3/o4\\*, chatgpt-\\* → `openai`; gemini-\\* → `gemini`; claude-\\* → `anthropic`). For a ' +
      'self-hosted OpenAI-compatible server (Ollama, vLLM, llama.cpp server) give its `base_url`; the record is ' +
      'kept with provider `openai`. A realtime (speech-to-speech) model, OpenAI Realtime (e.g. `gpt-realtime`), carries `realtime`: its ' +
      'voice and turn detection (the provider\'s `semantic_vad` or `server_vad`, or the platform\'s own); a model id containing `realtime` gets ' +
      'it with its defaults. An agent on such a model hears and speaks through it: it takes no `transcriber` or `tts` (422).',
    body: CreateLlmModel,
    status: 201,
    responses: { 201: { description: 'The model record', schema: LlmModel } },
    handler: async ({ body, auth, db, audit, services }) => {
      const temperature = body.temperature ?? 0.7;
      const provider = resolveProvider({ model: body.model, provider: body.provider, base_url: body.base_url, temperature });
      const m: ModelWrite = {
        name: body.name,
        provider,
        model: body.model,
        base_url: body.base_url ?? null,
        system_prompt: body.system_prompt ?? null,
        temperature,
        max_tokens: body.max_tokens ?? null,
        tool_ids: body.tool_ids ?? [],
        knowledge_base_ids: body.knowledge_base_ids ?? [],
        realtime: resolveRealtime({ model: body.model, provider, realtime: body.realtime, temperature: body.temperature, max_tokens: body.max_tokens }),
      };
      await checkLinks(db, auth.orgId, m, { tools: true, kbs: true });
      const row = await insertModel(db, auth.orgId, m);
      await audit({ action: 'llm_model.create', resourceType: 'llm_model', resourceId: row.id, details: { name: m.name, provider, model: m.model } });
      return withWarnings(db, services.config, auth.orgId, row);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/models',
    operationId: 'listModels',
    tag: 'llm-models',
    summary: 'List LLM models',
    description: 'Newest first. Filter with `provider`.',
    query: LlmModelListQuery,
    responses: { 200: { description: 'Models of the organisation', schema: LlmModelList } },
    handler: async ({ query, auth, db }) => {
      const { items, total } = await listModels(db, auth.orgId, query);
      return { items, total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/models/:model_id',
    operationId: 'getModel',
    tag: 'llm-models',
    summary: 'Get an LLM model',
    params: LlmModelParams,
    responses: { 200: { description: 'The model record', schema: LlmModel } },
    handler: async ({ params, auth, db, services }) => {
      const row = await getModel(db, auth.orgId, params.model_id);
      if (!row) throw notFound('LLM model');
      return withWarnings(db, services.config, auth.orgId, row);
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/models/:model_id',
    operationId: 'updateModel',
    tag: 'llm-models',
    summary: 'Update an LLM model',
    description:
      'Partial update: absent fields keep their value, `tool_ids` and `knowledge_base_ids` replace the whole list. ' +
      'The provider is derived again from the result as on create; when the model id has no known family the ' +
      'stored provider stays. Agents using the model pick up the change on their next call: each gets a new version (kind `dependency`), ' +
      'published at once, or held as its draft when the agent has a test gate. Calls pinned to an earlier version keep the model as it was.',
    params: LlmModelParams,
    body: UpdateLlmModel,
    responses: { 200: { description: 'The updated model record', schema: LlmModel } },
    handler: async ({ params, body, auth, db, audit, services }) => {
      const cur = await getModel(db, auth.orgId, params.model_id, { forUpdate: true });
      if (!cur) throw notFound('LLM model');
      const merged = {
        name: body.name ?? cur.name,
        model: body.model ?? cur.model,
        base_url: body.base_url !== undefined ? body.base_url : cur.base_url,
        system_prompt: body.system_prompt !== undefined ? body.system_prompt : cur.system_prompt,
        temperature: body.temperature ?? cur.temperature,
        max_tokens: body.max_tokens !== undefined ? body.max_tokens : cur.max_tokens,
        tool_ids: body.tool_ids ?? cur.tool_ids,
        knowledge_base_ids: body.knowledge_base_ids ?? cur.knowledge_base_ids,
      };
      const provider = resolveProvider({ ...merged, provider: body.provider }, cur.provider);
      const realtime = resolveRealtime({ model: merged.model, provider, realtime: body.realtime, current: cur.realtime, temperature: body.temperature, max_tokens: body.max_tokens });
      const m: ModelWrite = { ...merged, provider, realtime, ...(realtime ? { max_tokens: null } : {}) };
      await checkLinks(db, auth.orgId, m, { tools: body.tool_ids !== undefined, kbs: body.knowledge_base_ids !== undefined });
      const row = await updateModel(db, auth.orgId, params.model_id, m);
      // Agents using the model get a version with it resolved again (agent-versions/service.ts, propagateChange).
      await propagateChange(db, actorOf(auth), auth.orgId, { modelIds: [row.id] }, { resource_type: 'llm_model', resource_id: row.id, action: 'llm_model.update' });
      await audit({ action: 'llm_model.update', resourceType: 'llm_model', resourceId: row.id, details: { fields: Object.keys(body) } });
      return withWarnings(db, services.config, auth.orgId, row);
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/models/:model_id',
    operationId: 'deleteModel',
    tag: 'llm-models',
    summary: 'Delete an LLM model',
    description:
      'A model that live agents use cannot be deleted: the answer is a 409 whose `agents` field lists them ' +
      '(`[{id, name}]`); point them at another model first. Deleted models disappear from the API; call ' +
      'records made with them stay readable.',
    params: LlmModelParams,
    status: 204,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ params, auth, db, audit }) => {
      const cur = await getModel(db, auth.orgId, params.model_id, { forUpdate: true });
      if (!cur) throw notFound('LLM model');
      const agents = await agentsUsingModel(db, auth.orgId, cur.id);
      if (agents.length) throw conflict(`LLM model is used by ${agents.length} agent${agents.length === 1 ? '' : 's'}; point them at another model first`, { agents });
      await softDeleteModel(db, auth.orgId, cur.id);
      await audit({ action: 'llm_model.delete', resourceType: 'llm_model', resourceId: cur.id, details: { name: cur.name } });
      return reply(204);
    },
  }),
];
