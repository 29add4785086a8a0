import { defineRoute, reply } from '../../http/route.ts';
import { conflict, notFound } from '../../http/errors.ts';
import { checkReferences, type Reference } from '../../http/references.ts';
import { Agent, AgentList, AgentListQuery, AgentParams, CreateAgent, UpdateAgent } from '../../../../schemas/agents.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { effectiveSystemPrompt } from '../../../../shared/prompt.ts';
import {
  getAgent,
  getAgentWithPrompt,
  insertAgent,
  listAgents,
  modelPrompt,
  numbersRoutingTo,
  softDeleteAgent,
  updateAgent,
  type AgentRow,
  type AgentWrite,
} from './queries.ts';
import { squadsWithAgent } from '../squads/queries.ts';
import { AGENT_DEFAULTS, resolveTranscriber, resolveTts, resolveTurnTaking, throwIfAny, variableProblems } from './service.ts';

const withPrompt = (row: AgentRow, systemPrompt: string | null) => ({ ...row, effective_system_prompt: effectiveSystemPrompt(row.job_description, systemPrompt) });

const refs = (llmId: string | undefined, webhookId: string | null | undefined): Reference[] => [
  ...(llmId ? [{ loc: ['body', 'llm_id'], table: 'llm_models' as const, what: 'LLM model', ids: llmId }] : []),
  ...(webhookId ? [{ loc: ['body', 'webhook_id'], table: 'webhooks' as const, what: 'webhook', ids: webhookId }] : []),
];

export const agentRoutes = [
  defineRoute({
    method: 'post',
    path: '/agents',
    operationId: 'createAgent',
    tag: 'agents',
    summary: 'Create an agent',
    description:
      'Required: `name` and `llm_id` (an LLM model of your organisation). Every other field has a documented default; ' +
      '`transcriber` defaults to Deepgram nova-3 in the agent\'s language and `tts` to OpenAI gpt-4o-mini-tts with voice ' +
      '`alloy`. Providers, models and voices are checked against the catalogue (GET /v1/voices); for offline use pick ' +
      '`{"provider": "local"}` for both (pocketsphinx and espeak-ng).',
    body: CreateAgent,
    status: 201,
    responses: { 201: { description: 'The agent, with `effective_system_prompt`', schema: Agent } },
    handler: async ({ body, auth, db, audit }) => {
      const problems: ValidationErrorItem[] = [];
      const language = body.language ?? AGENT_DEFAULTS.language;
      const transcriber = resolveTranscriber(body.transcriber, language, problems);
      const tts = resolveTts(body.tts, problems);
      const responsiveness = body.responsiveness ?? AGENT_DEFAULTS.responsiveness;
      const turn_taking = resolveTurnTaking(body.turn_taking, { value: responsiveness, given: body.responsiveness !== undefined }, undefined, problems);
      variableProblems(body.dynamic_variables, problems);
      throwIfAny(problems);
      await checkReferences(db, auth.orgId, refs(body.llm_id, body.webhook_id));
      const a: AgentWrite = {
        ...AGENT_DEFAULTS,
        ...body,
        transcriber,
        tts,
        language,
        turn_taking,
      };
      const row = await insertAgent(db, auth.orgId, a);
      await audit({ action: 'agent.create', resourceType: 'agent', resourceId: row.id, details: { name: row.name, llm_id: row.llm_id } });
      return withPrompt(row, await modelPrompt(db, row.llm_id));
    },
  }),
  defineRoute({
    method: 'get',
    path: '/agents',
    operationId: 'listAgents',
    tag: 'agents',
    summary: 'List agents',
    description: 'Newest first. Filter with `llm_id`. `effective_system_prompt` is null in lists; get one agent to see it.',
    query: AgentListQuery,
    responses: { 200: { description: 'Agents of the organisation', schema: AgentList } },
    handler: async ({ query, auth, db }) => {
      const { items, total } = await listAgents(db, auth.orgId, query);
      return { items: items.map((r) => ({ ...r, effective_system_prompt: null })), total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:agent_id',
    operationId: 'getAgent',
    tag: 'agents',
    summary: 'Get an agent',
    description:
      '`effective_system_prompt` is populated: the job description as a `# Role` block followed by the linked model\'s ' +
      'system prompt, before per-call variables are filled in and without knowledge-base chunks.',
    params: AgentParams,
    responses: { 200: { description: 'The agent', schema: Agent } },
    handler: async ({ params, auth, db }) => {
      const row = await getAgentWithPrompt(db, auth.orgId, params.agent_id);
      if (!row) throw notFound('Agent');
      const { system_prompt, ...agent } = row;
      return withPrompt(agent, system_prompt);
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/agents/:agent_id',
    operationId: 'updateAgent',
    tag: 'agents',
    summary: 'Update an agent',
    description:
      'Partial update: absent fields keep their value; `transcriber`, `tts`, lists and objects are replaced whole (with ' +
      'the provider defaults filled in; `turn_taking` is merged over its defaults). Setting `responsiveness` without ' +
      '`turn_taking` re-derives turn_taking.min_delay_ms and max_delay_ms. Changing `language` does not change a stored transcriber\'s language. Calls ' +
      'in progress keep the settings they started with.',
    params: AgentParams,
    body: UpdateAgent,
    responses: { 200: { description: 'The updated agent, with `effective_system_prompt`', schema: Agent } },
    handler: async ({ params, body, auth, db, audit }) => {
      const cur = await getAgent(db, auth.orgId, params.agent_id, { forUpdate: true });
      if (!cur) throw notFound('Agent');
      const problems: ValidationErrorItem[] = [];
      const language = body.language ?? cur.language;
      const transcriber = body.transcriber ? resolveTranscriber(body.transcriber, language, problems) : cur.transcriber;
      const tts = body.tts ? resolveTts(body.tts, problems) : cur.tts;
      const responsiveness = { value: body.responsiveness ?? cur.responsiveness, given: body.responsiveness !== undefined };
      const turn_taking = resolveTurnTaking(body.turn_taking, responsiveness, cur.turn_taking, problems);
      variableProblems(body.dynamic_variables, problems);
      throwIfAny(problems);
      await checkReferences(db, auth.orgId, refs(body.llm_id, body.webhook_id));
      const { id: _id, created_at: _c, updated_at: _u, ...stored } = cur;
      const a: AgentWrite = { ...stored, ...body, transcriber, tts, language, turn_taking };
      const row = await updateAgent(db, auth.orgId, cur.id, a);
      await audit({ action: 'agent.update', resourceType: 'agent', resourceId: cur.id, details: { fields: Object.keys(body) } });
      return withPrompt(row, await modelPrompt(db, row.llm_id));
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/agents/:agent_id',
    operationId: 'deleteAgent',
    tag: 'agents',
    summary: 'Delete an agent',
    description:
      'An agent that phone numbers route to (as their agent, or in their inbound routing or its fallback) cannot be ' +
      'deleted: the answer is a 409 whose `phone_numbers` field lists them (`[{id, phone_number}]`); route them ' +
      'elsewhere first. A member of a squad cannot be deleted either (409 with `squads`: `[{id, name}]`). A deleted agent disappears from the API, but its past calls stay readable.',
    params: AgentParams,
    status: 204,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ params, auth, db, audit }) => {
      const cur = await getAgent(db, auth.orgId, params.agent_id, { forUpdate: true });
      if (!cur) throw notFound('Agent');
      const numbers = await numbersRoutingTo(db, auth.orgId, cur.id);
      if (numbers.length) {
        throw conflict(
          `Agent receives calls from ${numbers.length} phone number${numbers.length === 1 ? '' : 's'} (${numbers.map((n) => n.phone_number).join(', ')}); route them to another agent first`,
          { phone_numbers: numbers },
        );
      }
      const squads = await squadsWithAgent(db, auth.orgId, cur.id);
      if (squads.length) {
        throw conflict(`Agent is a member of ${squads.length} squad${squads.length === 1 ? '' : 's'} (${squads.map((q) => q.name).join(', ')}); remove it from them first`, { squads });
      }
      await softDeleteAgent(db, auth.orgId, cur.id);
      await audit({ action: 'agent.delete', resourceType: 'agent', resourceId: cur.id, details: { name: cur.name } });
      return reply(204);
    },
  }),
];
