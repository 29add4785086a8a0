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
  numbersRoutingTo,
  softDeleteAgent,
  updateAgent,
  type AgentRow,
  type AgentVersions,
  type AgentWrite,
} from './queries.ts';
import { squadsWithAgent } from '../squads/queries.ts';
import { AGENT_DEFAULTS, actorOf, checkRealtimeFields, detectionProblems, mergeUpdate, resolveTranscriber, resolveTts, resolveTurnTaking, throwIfAny, variableProblems, writeOf } from './service.ts';
import { agentWarnings } from './warnings.ts';
import type { Db } from '../../db/types.ts';
import type { Config } from '../../config.ts';
import { resolveSnapshot } from '../agent-versions/snapshot.ts';
import { currentVersions, recordVersion } from '../agent-versions/service.ts';
import { getRollout, markPublished } from '../agent-versions/queries.ts';

const withPrompt = (row: AgentRow, systemPrompt: string | null, v: AgentVersions) => ({
  ...row,
  version: v.published_version,
  draft_version: v.draft_version,
  effective_system_prompt: effectiveSystemPrompt(row.job_description, systemPrompt),
});

/** A single agent's answer: with its versions, its effective prompt, and why its calls would fail now (warnings.ts). */
async function single(db: Db, config: Config, orgId: string, row: AgentRow, systemPrompt: string | null, v: AgentVersions) {
  return { ...withPrompt(row, systemPrompt, v), warnings: await agentWarnings(db, config, orgId, row) };
}

export const refs = (llmId: string | undefined, webhookId: string | null | undefined): Reference[] => [
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
      '`alloy`. An agent whose model is a realtime (speech-to-speech) model (`realtime` set on the model) takes neither: the model hears and ' +
      'speaks itself, and a `transcriber` or `tts` in the request is a 422 naming the field. Providers, models and voices are checked against the catalogue (GET /v1/voices); for offline use pick ' +
      '`{"provider": "local"}` for both (pocketsphinx and espeak-ng).',
    body: CreateAgent,
    status: 201,
    responses: { 201: { description: 'The agent, with `effective_system_prompt`', schema: Agent } },
    handler: async ({ body, auth, db, audit, services }) => {
      const problems: ValidationErrorItem[] = [];
      const language = body.language ?? AGENT_DEFAULTS.language;
      const transcriber = resolveTranscriber(body.transcriber, language, problems);
      const tts = resolveTts(body.tts, problems);
      const responsiveness = body.responsiveness ?? AGENT_DEFAULTS.responsiveness;
      const turn_taking = resolveTurnTaking(body.turn_taking, { value: responsiveness, given: body.responsiveness !== undefined }, undefined, problems);
      detectionProblems(turn_taking, transcriber, { detection: body.turn_taking?.detection !== undefined }, problems);
      variableProblems(body.dynamic_variables, problems);
      throwIfAny(problems);
      await checkReferences(db, auth.orgId, refs(body.llm_id, body.webhook_id));
      await checkRealtimeFields(db, auth.orgId, body.llm_id, body);
      const a: AgentWrite = {
        ...AGENT_DEFAULTS,
        ...body,
        transcriber,
        tts,
        language,
        turn_taking,
      };
      const row = await insertAgent(db, auth.orgId, a);
      // Version 1, published: the agent as created, with its model and tools as they are now.
      const snapshot = await resolveSnapshot(db, auth.orgId, writeOf(row));
      const v = (await recordVersion(db, { orgId: auth.orgId, agentId: row.id, snapshot, kind: 'create', base: null, actor: actorOf(auth) }))!;
      await markPublished(db, row.id, v.version);
      await audit({ action: 'agent.create', resourceType: 'agent', resourceId: row.id, details: { name: row.name, llm_id: row.llm_id, version: v.version } });
      return single(db, services.config, auth.orgId, row, snapshot.model.system_prompt, { published_version: v.version, draft_version: null });
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
      return {
        items: items.map(({ published_version, draft_version, ...r }) => ({ ...r, version: published_version, draft_version, effective_system_prompt: null })),
        total,
        limit: query.limit,
        offset: query.offset,
      };
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
    handler: async ({ params, auth, db, services }) => {
      const row = await getAgentWithPrompt(db, auth.orgId, params.agent_id);
      if (!row) throw notFound('Agent');
      const { system_prompt, published_version, draft_version, ...agent } = row;
      return single(db, services.config, auth.orgId, agent, system_prompt, { published_version, draft_version });
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
      'in progress keep the settings they started with. A change records a new version (GET /v1/agents/{id}/versions) and publishes it at once; ' +
      'a request that changes nothing records none. An agent with a test gate (PATCH /v1/agents/{id}/rollout `test_suite_id`) publishes only ' +
      'tested versions: there this is a 409, and changes go to the draft (PATCH /v1/agents/{id}/draft, then POST /v1/agents/{id}/publish).',
    params: AgentParams,
    body: UpdateAgent,
    responses: { 200: { description: 'The updated agent, with `effective_system_prompt`', schema: Agent } },
    handler: async ({ params, body, auth, db, audit, services }) => {
      const cur = await getAgent(db, auth.orgId, params.agent_id, { forUpdate: true });
      if (!cur) throw notFound('Agent');
      const rollout = (await getRollout(db, auth.orgId, cur.id))!;
      if (rollout.test_suite_id) {
        throw conflict('This agent publishes only versions that pass its test suite: write to PATCH /v1/agents/{id}/draft, then POST /v1/agents/{id}/publish', {
          test_suite_id: rollout.test_suite_id,
        });
      }
      const a = mergeUpdate(writeOf(cur), body);
      await checkReferences(db, auth.orgId, refs(body.llm_id, body.webhook_id));
      await checkRealtimeFields(db, auth.orgId, a.llm_id, body);
      const row = await updateAgent(db, auth.orgId, cur.id, a);
      const { published } = await currentVersions(db, auth.orgId, rollout);
      const snapshot = await resolveSnapshot(db, auth.orgId, a);
      const v = await recordVersion(db, { orgId: auth.orgId, agentId: cur.id, snapshot, kind: 'update', base: published, actor: actorOf(auth) });
      if (v) await markPublished(db, cur.id, v.version);
      const version = v?.version ?? rollout.published_version;
      await audit({ action: 'agent.update', resourceType: 'agent', resourceId: cur.id, details: { fields: Object.keys(body), version } });
      return single(db, services.config, auth.orgId, row, snapshot.model.system_prompt, {
        published_version: version,
        draft_version: v && rollout.draft_version === v.version ? null : rollout.draft_version,
      });
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
