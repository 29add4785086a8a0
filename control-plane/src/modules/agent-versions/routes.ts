// /v1/agents/{id}/versions, the draft, publish, rollback and the rollout (traffic split and test gate).
import { defineRoute, reply } from '../../http/route.ts';
import { conflict, invalidField, notFound } from '../../http/errors.ts';
import { checkReferences } from '../../http/references.ts';
import { Agent, AgentParams, UpdateAgent } from '../../../../schemas/agents.ts';
import {
  AgentVersion,
  AgentVersionList,
  GateConflict,
  PublishBody,
  RollbackBody,
  Rollout,
  UpdateRollout,
  VersionListQuery,
  VersionParams,
  VersionQuery,
} from '../../../../schemas/agent-versions.ts';
import { getAgentWithPrompt } from '../agents/queries.ts';
import { actorOf, checkRealtimeFields, mergeUpdate } from '../agents/service.ts';
import { refs } from '../agents/routes.ts';
import { effectiveSystemPrompt } from '../../../../shared/prompt.ts';
import { getSuite } from '../agent-tests/queries.ts';
import type { Db } from '../../db/types.ts';
import { getRollout, getVersion, listVersions, setDraft, setRollout, type RolloutRow } from './queries.ts';
import { agentOfSnapshot, resolveSnapshot } from './snapshot.ts';
import { currentVersions, publish, recordVersion, requireVersion, versionAt, versionView } from './service.ts';
import { checkGate } from './gate.ts';

async function rolloutOr404(db: Db, orgId: string, agentId: string, forUpdate = false): Promise<RolloutRow> {
  const r = await getRollout(db, orgId, agentId, { forUpdate });
  if (!r) throw notFound('Agent');
  return r;
}

const rolloutView = (r: RolloutRow) => ({
  agent_id: r.id,
  published_version: r.published_version,
  draft_version: r.draft_version,
  split: r.split_version !== null && r.split_percent !== null ? { version: r.split_version, percent: r.split_percent } : null,
  test_suite_id: r.test_suite_id,
});

/** The agent as GET /v1/agents/{id} answers it, after a publish or rollback. */
async function agentView(db: Db, orgId: string, agentId: string) {
  const row = (await getAgentWithPrompt(db, orgId, agentId))!;
  const { system_prompt, published_version, draft_version, ...agent } = row;
  return { ...agent, version: published_version, draft_version, effective_system_prompt: effectiveSystemPrompt(agent.job_description, system_prompt) };
}

export const agentVersionRoutes = [
  defineRoute({
    method: 'get',
    path: '/agents/:agent_id/versions',
    operationId: 'listAgentVersions',
    tag: 'agents',
    summary: "List an agent's versions",
    description:
      'Newest first. Each version says who made it (`actor`, as audit events record actors), why (`kind`, and `cause` for a change to its model ' +
      'or a tool) and what changed (`changes`, the snapshot paths that differ from `base_version`). `snapshot`, `effective_system_prompt` and ' +
      '`diff` are null in lists: get one version to see them.',
    params: AgentParams,
    query: VersionListQuery,
    responses: { 200: { description: 'Versions of the agent', schema: AgentVersionList } },
    handler: async ({ params, query, auth, db }) => {
      const r = await rolloutOr404(db, auth.orgId, params.agent_id);
      const { items, total } = await listVersions(db, auth.orgId, r.id, query);
      return { items: items.map((v) => versionView(v, r)), total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:agent_id/versions/:version',
    operationId: 'getAgentVersion',
    tag: 'agents',
    summary: 'Get an agent version',
    description:
      'The version with its snapshot (the agent\'s fields; its LLM model, tools and knowledge bases as they resolved) and its `diff` against ' +
      '`base_version`, or against any other version of the agent with `?against=n`. Another organisation\'s agent, or a version it does not have, is a 404.',
    params: VersionParams,
    query: VersionQuery,
    responses: { 200: { description: 'The version', schema: AgentVersion } },
    handler: async ({ params, query, auth, db }) => {
      const r = await rolloutOr404(db, auth.orgId, params.agent_id);
      const v = requireVersion(await getVersion(db, auth.orgId, r.id, params.version));
      const againstNumber = query.against ?? v.base_version;
      const against = againstNumber !== null ? await getVersion(db, auth.orgId, r.id, againstNumber) : null;
      if (query.against !== undefined && !against) throw notFound('Agent version');
      return versionView(v, r, { against });
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/agents/:agent_id/draft',
    operationId: 'updateAgentDraft',
    tag: 'agents',
    summary: "Change an agent's draft",
    description:
      'The same partial update as PATCH /v1/agents/{id}, applied to the draft (or, when there is none, to the published version): it records a new ' +
      'version, kind `draft`, that calls do not run until it is published (POST /v1/agents/{id}/publish). Test it with a test run ' +
      '(`agent_version`) or a web call that pins it. A change that changes nothing records no version. Answers the draft version.',
    params: AgentParams,
    body: UpdateAgent,
    responses: { 200: { description: 'The draft version, with its diff', schema: AgentVersion } },
    handler: async ({ params, body, auth, db, audit }) => {
      const r = await rolloutOr404(db, auth.orgId, params.agent_id, true);
      const { published, draft } = await currentVersions(db, auth.orgId, r);
      const base = draft ?? published;
      if (!base) throw conflict('The agent has no version to start a draft from');
      const a = mergeUpdate(agentOfSnapshot(base.snapshot), body);
      await checkReferences(db, auth.orgId, refs(body.llm_id, body.webhook_id));
      await checkRealtimeFields(db, auth.orgId, a.llm_id, body);
      const snapshot = await resolveSnapshot(db, auth.orgId, a);
      const v = await recordVersion(db, { orgId: auth.orgId, agentId: r.id, snapshot, kind: 'draft', base, actor: actorOf(auth) });
      // Nothing changed: the draft stays (or, with none, the published version answers as the would-be draft).
      const current = v ?? base;
      if (v) {
        await setDraft(db, r.id, v.version);
        await audit({ action: 'agent.draft', resourceType: 'agent', resourceId: r.id, details: { version: v.version, base_version: base.version, fields: Object.keys(body) } });
      }
      const after = { ...r, draft_version: v ? v.version : r.draft_version };
      const against = current.base_version !== null ? await getVersion(db, auth.orgId, r.id, current.base_version) : null;
      return versionView(current, after, { against });
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/agents/:agent_id/draft',
    operationId: 'discardAgentDraft',
    tag: 'agents',
    summary: "Discard an agent's draft",
    description: 'The draft version stays in the history (status `archived`); the next PATCH .../draft starts from the published version.',
    params: AgentParams,
    status: 204,
    responses: { 204: { description: 'Discarded (or there was none)' } },
    handler: async ({ params, auth, db, audit }) => {
      const r = await rolloutOr404(db, auth.orgId, params.agent_id, true);
      if (r.draft_version !== null) {
        await setDraft(db, r.id, null);
        await audit({ action: 'agent.draft_discard', resourceType: 'agent', resourceId: r.id, details: { version: r.draft_version } });
      }
      return reply(204);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/agents/:agent_id/publish',
    operationId: 'publishAgentVersion',
    tag: 'agents',
    summary: 'Publish a version',
    description:
      'Publishes the draft (or `version`): calls that follow the published version run it from their next start; calls in progress keep theirs. ' +
      'With a test gate, the newest run of the gate suite against that version (made after the suite was last changed) must have passed: one that ' +
      'failed is a 409 whose `failed_expectations` names each failed expectation (`[{scenario_id, scenario_name, expectation, type, reason}]`); ' +
      'with none yet, the publish starts one and answers 409 with `gate: "pending"` and its `test_run_id` (publish again once it has passed; ' +
      'a run in flight is answered the same way). A traffic split to the version ends with its publication.',
    params: AgentParams,
    body: PublishBody,
    responses: {
      200: { description: 'The agent as now published', schema: Agent },
      409: { description: 'The test gate refuses (pending or failed), or there is nothing to publish', schema: GateConflict },
    },
    handler: async ({ params, body, auth, db, audit, services, ctx }) => {
      const r = await rolloutOr404(db, auth.orgId, params.agent_id, true);
      const number = body.version ?? r.draft_version;
      if (number === null) throw conflict('The agent has no draft to publish; give `version`, or change the draft first');
      const v = body.version !== undefined ? await versionAt(db, auth.orgId, r.id, body.version, ['body', 'version']) : requireVersion(await getVersion(db, auth.orgId, r.id, number));
      if (v.version === r.published_version) return agentView(db, auth.orgId, r.id);
      const gate = await checkGate(services, db, auth.orgId, r.id, r.test_suite_id, v.version);
      if (gate.state === 'pending') {
        if (gate.started) {
          await audit({
            action: 'test_run.create',
            resourceType: 'test_run',
            resourceId: gate.run_id,
            details: { agent_id: r.id, suite_id: gate.suite_id, mode: 'text', agent_version: v.version, gate: true },
          });
        }
        // Answered, not thrown: the run it started (and its audit event) must commit.
        return reply(409, {
          detail: `Version ${v.version} has not passed the agent's test suite yet: test run ${gate.run_id} is ${gate.started ? 'started' : 'in progress'}; publish again once it has passed`,
          type: 'conflict',
          request_id: ctx.state.requestId as string,
          gate: 'pending',
          test_run_id: gate.run_id,
          test_suite_id: gate.suite_id,
        });
      }
      if (gate.state === 'failed') {
        throw conflict(gate.failed.length ? `${gate.reason}: ${gate.failed.map((f) => `${f.scenario_name} / ${f.expectation}`).join('; ')}` : gate.reason, {
          gate: 'failed',
          test_run_id: gate.run_id,
          test_suite_id: gate.suite_id,
          failed_expectations: gate.failed,
        });
      }
      await publish(db, auth.orgId, r.id, v);
      await audit({
        action: 'agent.publish',
        resourceType: 'agent',
        resourceId: r.id,
        details: { version: v.version, previous_version: r.published_version, ...(gate.state === 'passed' ? { test_run_id: gate.run_id } : {}) },
      });
      return agentView(db, auth.orgId, r.id);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/agents/:agent_id/rollback',
    operationId: 'rollbackAgent',
    tag: 'agents',
    summary: 'Roll back to an earlier version',
    description:
      'Publishes again a version that was published before, without the test gate (it passed when it was first published, or predates the gate): ' +
      'the next call runs it, calls in progress keep theirs. A version never published is a 409 (publish it instead).',
    params: AgentParams,
    body: RollbackBody,
    responses: { 200: { description: 'The agent as now published', schema: Agent } },
    handler: async ({ params, body, auth, db, audit }) => {
      const r = await rolloutOr404(db, auth.orgId, params.agent_id, true);
      const v = await versionAt(db, auth.orgId, r.id, body.version, ['body', 'version']);
      if (v.version === r.published_version) return agentView(db, auth.orgId, r.id);
      if (!v.published_at) throw conflict(`Version ${v.version} was never published; publish it (POST /v1/agents/{id}/publish) instead`, { version: v.version });
      await publish(db, auth.orgId, r.id, v);
      await audit({ action: 'agent.rollback', resourceType: 'agent', resourceId: r.id, details: { version: v.version, previous_version: r.published_version } });
      return agentView(db, auth.orgId, r.id);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:agent_id/rollout',
    operationId: 'getAgentRollout',
    tag: 'agents',
    summary: "An agent's rollout",
    description: 'The published and draft versions, the traffic split and the test gate.',
    params: AgentParams,
    responses: { 200: { description: 'The rollout', schema: Rollout } },
    handler: async ({ params, auth, db }) => rolloutView(await rolloutOr404(db, auth.orgId, params.agent_id)),
  }),
  defineRoute({
    method: 'patch',
    path: '/agents/:agent_id/rollout',
    operationId: 'updateAgentRollout',
    tag: 'agents',
    summary: "Set an agent's traffic split and test gate",
    description:
      '`split` sends `percent` % of the calls that follow the published version to `version` instead (pinned calls are not split); the share is ' +
      'sticky per caller number (inbound: the caller; outbound: the callee) through a stable hash, random for web calls, and each call records ' +
      'the side it took (`agent_version_source` `split`). `null` ends the split. `test_suite_id` names a suite of this agent that a version must ' +
      'pass before POST .../publish publishes it; while it is set, PATCH /v1/agents/{id} is refused (409) and changes to the agent\'s model or tools ' +
      'land in the draft. Fields not given keep their value.',
    params: AgentParams,
    body: UpdateRollout,
    responses: { 200: { description: 'The rollout', schema: Rollout } },
    handler: async ({ params, body, auth, db, audit }) => {
      const r = await rolloutOr404(db, auth.orgId, params.agent_id, true);
      let split = r.split_version !== null && r.split_percent !== null ? { version: r.split_version, percent: r.split_percent } : null;
      if (body.split !== undefined) {
        if (body.split) {
          await versionAt(db, auth.orgId, r.id, body.split.version, ['body', 'split', 'version']);
          if (body.split.version === r.published_version) {
            throw invalidField(['body', 'split', 'version'], 'This is the published version; split to another version', 'value_error', body.split.version);
          }
        }
        split = body.split;
      }
      let suiteId = r.test_suite_id;
      if (body.test_suite_id !== undefined) {
        if (body.test_suite_id) {
          await checkReferences(db, auth.orgId, [{ loc: ['body', 'test_suite_id'], table: 'agent_test_suites', what: 'test suite', ids: body.test_suite_id }]);
          const suite = (await getSuite(db, auth.orgId, body.test_suite_id))!;
          if (suite.agent_id !== r.id) throw invalidField(['body', 'test_suite_id'], 'The suite tests another agent; a gate uses a suite of this agent', 'value_error', body.test_suite_id);
        }
        suiteId = body.test_suite_id;
      }
      await setRollout(db, r.id, { split, testSuiteId: suiteId });
      await audit({ action: 'agent.rollout', resourceType: 'agent', resourceId: r.id, details: { split, test_suite_id: suiteId, fields: Object.keys(body) } });
      return rolloutView({ ...r, split_version: split?.version ?? null, split_percent: split?.percent ?? null, test_suite_id: suiteId });
    },
  }),
];
