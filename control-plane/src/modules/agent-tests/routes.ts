import { defineRoute, reply } from '../../http/route.ts';
import { conflict, invalidField, notFound } from '../../http/errors.ts';
import { checkReferences } from '../../http/references.ts';
import {
  AgentRunParams,
  CreateRun,
  CreateScenario,
  CreateSuite,
  Run,
  RunList,
  RunListQuery,
  RunParams,
  Scenario,
  ScenarioList,
  ScenarioListQuery,
  ScenarioParams,
  Suite,
  SuiteList,
  SuiteListQuery,
  SuiteParams,
  UpdateScenario,
  UpdateSuite,
} from '../../../../schemas/agent-tests.ts';
import { getAgent } from '../agents/queries.ts';
import {
  cancelResults,
  getRun,
  getScenario,
  getSuite,
  insertRun,
  insertScenario,
  insertSuite,
  listRuns,
  listScenarios,
  listSuites,
  markRunCanceled,
  resultsOf,
  scenariosByIds,
  softDeleteScenario,
  softDeleteSuite,
  suitesUsingScenario,
  updateScenario,
  updateSuite,
} from './queries.ts';
import { recordingUrls, resolveScenario, runView, snapshotOf } from './service.ts';
import { enqueueRun } from './queue.ts';
import { abortRun } from './runner.ts';
import { getRollout } from '../agent-versions/queries.ts';
import { checkPin } from '../agent-versions/call-version.ts';

export const agentTestRoutes = [
  // ---- Scenarios -----------------------------------------------------------------------------------------------
  defineRoute({
    method: 'post',
    path: '/test-scenarios',
    operationId: 'createTestScenario',
    tag: 'agent-tests',
    summary: 'Create a test scenario',
    description:
      'A simulated caller: a `persona` (instructions for a caller model) or a `script` (fixed lines), call `variables` for the agent, limits, ' +
      '`tool_mocks` and the `expectations` checked once the conversation ends. Each expectation type takes its own fields (see Expectation); ' +
      'any other field is a 422 `extra_forbidden` at its loc.',
    body: CreateScenario,
    status: 201,
    responses: { 201: { description: 'The scenario', schema: Scenario } },
    handler: async ({ body, auth, db, audit }) => {
      const row = await insertScenario(db, auth.orgId, resolveScenario(body, null));
      await audit({ action: 'test_scenario.create', resourceType: 'test_scenario', resourceId: row.id, details: { name: row.name } });
      return row;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/test-scenarios',
    operationId: 'listTestScenarios',
    tag: 'agent-tests',
    summary: 'List test scenarios',
    description: 'Newest first.',
    query: ScenarioListQuery,
    responses: { 200: { description: 'Scenarios of the organisation', schema: ScenarioList } },
    handler: async ({ query, auth, db }) => ({ ...(await listScenarios(db, auth.orgId, query)), limit: query.limit, offset: query.offset }),
  }),
  defineRoute({
    method: 'get',
    path: '/test-scenarios/:scenario_id',
    operationId: 'getTestScenario',
    tag: 'agent-tests',
    summary: 'Get a test scenario',
    params: ScenarioParams,
    responses: { 200: { description: 'The scenario', schema: Scenario } },
    handler: async ({ params, auth, db }) => {
      const row = await getScenario(db, auth.orgId, params.scenario_id);
      if (!row) throw notFound('Test scenario');
      return row;
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/test-scenarios/:scenario_id',
    operationId: 'updateTestScenario',
    tag: 'agent-tests',
    summary: 'Update a test scenario',
    description: 'Partial update. Runs already created keep the scenario as it was when they were created.',
    params: ScenarioParams,
    body: UpdateScenario,
    responses: { 200: { description: 'The updated scenario', schema: Scenario } },
    handler: async ({ params, body, auth, db, audit }) => {
      const cur = await getScenario(db, auth.orgId, params.scenario_id, { forUpdate: true });
      if (!cur) throw notFound('Test scenario');
      const row = await updateScenario(db, auth.orgId, cur.id, resolveScenario(body, cur));
      await audit({ action: 'test_scenario.update', resourceType: 'test_scenario', resourceId: cur.id, details: { fields: Object.keys(body) } });
      return row;
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/test-scenarios/:scenario_id',
    operationId: 'deleteTestScenario',
    tag: 'agent-tests',
    summary: 'Delete a test scenario',
    description:
      'A scenario that suites list cannot be deleted: the answer is a 409 whose `suites` field lists them (`[{id, name}]`). Past runs keep their copy.',
    params: ScenarioParams,
    status: 204,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ params, auth, db, audit }) => {
      const cur = await getScenario(db, auth.orgId, params.scenario_id, { forUpdate: true });
      if (!cur) throw notFound('Test scenario');
      const suites = await suitesUsingScenario(db, auth.orgId, cur.id);
      if (suites.length) throw conflict(`The scenario is in ${suites.length} suite${suites.length === 1 ? '' : 's'}; remove it from them first`, { suites });
      await softDeleteScenario(db, auth.orgId, cur.id);
      await audit({ action: 'test_scenario.delete', resourceType: 'test_scenario', resourceId: cur.id, details: { name: cur.name } });
      return reply(204);
    },
  }),

  // ---- Suites --------------------------------------------------------------------------------------------------
  defineRoute({
    method: 'post',
    path: '/test-suites',
    operationId: 'createTestSuite',
    tag: 'agent-tests',
    summary: 'Create a test suite',
    description: 'A named list of scenarios for an agent. Ids that are not live resources of your organisation are a 422 `reference_not_found` at their loc.',
    body: CreateSuite,
    status: 201,
    responses: { 201: { description: 'The suite', schema: Suite } },
    handler: async ({ body, auth, db, audit }) => {
      await checkReferences(db, auth.orgId, [
        { loc: ['body', 'agent_id'], table: 'agents', what: 'agent', ids: body.agent_id },
        { loc: ['body', 'scenario_ids'], table: 'agent_test_scenarios', what: 'test scenario', ids: body.scenario_ids },
      ]);
      const row = await insertSuite(db, auth.orgId, {
        name: body.name,
        agent_id: body.agent_id,
        scenario_ids: body.scenario_ids,
        metadata: body.metadata ?? {},
      });
      await audit({
        action: 'test_suite.create',
        resourceType: 'test_suite',
        resourceId: row.id,
        details: { name: row.name, agent_id: row.agent_id, scenarios: row.scenario_ids.length },
      });
      return row;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/test-suites',
    operationId: 'listTestSuites',
    tag: 'agent-tests',
    summary: 'List test suites',
    description: 'Newest first. Filter with `agent_id`.',
    query: SuiteListQuery,
    responses: { 200: { description: 'Suites of the organisation', schema: SuiteList } },
    handler: async ({ query, auth, db }) => ({ ...(await listSuites(db, auth.orgId, query)), limit: query.limit, offset: query.offset }),
  }),
  defineRoute({
    method: 'get',
    path: '/test-suites/:suite_id',
    operationId: 'getTestSuite',
    tag: 'agent-tests',
    summary: 'Get a test suite',
    params: SuiteParams,
    responses: { 200: { description: 'The suite', schema: Suite } },
    handler: async ({ params, auth, db }) => {
      const row = await getSuite(db, auth.orgId, params.suite_id);
      if (!row) throw notFound('Test suite');
      return row;
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/test-suites/:suite_id',
    operationId: 'updateTestSuite',
    tag: 'agent-tests',
    summary: 'Update a test suite',
    params: SuiteParams,
    body: UpdateSuite,
    responses: { 200: { description: 'The updated suite', schema: Suite } },
    handler: async ({ params, body, auth, db, audit }) => {
      const cur = await getSuite(db, auth.orgId, params.suite_id, { forUpdate: true });
      if (!cur) throw notFound('Test suite');
      await checkReferences(db, auth.orgId, [
        ...(body.agent_id ? [{ loc: ['body', 'agent_id'], table: 'agents' as const, what: 'agent', ids: body.agent_id }] : []),
        ...(body.scenario_ids
          ? [{ loc: ['body', 'scenario_ids'], table: 'agent_test_scenarios' as const, what: 'test scenario', ids: body.scenario_ids }]
          : []),
      ]);
      const row = await updateSuite(db, auth.orgId, cur.id, {
        name: body.name ?? cur.name,
        agent_id: body.agent_id ?? cur.agent_id,
        scenario_ids: body.scenario_ids ?? cur.scenario_ids,
        metadata: body.metadata ?? cur.metadata,
      });
      await audit({ action: 'test_suite.update', resourceType: 'test_suite', resourceId: cur.id, details: { fields: Object.keys(body) } });
      return row;
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/test-suites/:suite_id',
    operationId: 'deleteTestSuite',
    tag: 'agent-tests',
    summary: 'Delete a test suite',
    description: 'Its scenarios stay; past runs stay readable.',
    params: SuiteParams,
    status: 204,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ params, auth, db, audit }) => {
      const cur = await getSuite(db, auth.orgId, params.suite_id, { forUpdate: true });
      if (!cur) throw notFound('Test suite');
      await softDeleteSuite(db, auth.orgId, cur.id);
      await audit({ action: 'test_suite.delete', resourceType: 'test_suite', resourceId: cur.id, details: { name: cur.name } });
      return reply(204);
    },
  }),

  // ---- Runs ----------------------------------------------------------------------------------------------------
  defineRoute({
    method: 'post',
    path: '/agents/:agent_id/test-runs',
    operationId: 'createTestRun',
    tag: 'agent-tests',
    summary: 'Run tests against an agent',
    description:
      'Runs a suite (`suite_id`) or a list of scenarios (`scenario_ids`) against the agent, asynchronously: the answer is the run, `queued`; ' +
      'poll GET /v1/test-runs/{id} or subscribe a webhook to `test_run.completed`. The agent, suite and scenarios are those of your organisation: ' +
      'any other id is a 404, as its GET would be. Scenarios are copied into the run, so later edits do not change it. Runs are not calls: they ' +
      "take no daily call slot, and their conversation time counts in usage as test minutes. An organisation's runs hold at most " +
      'min(AGENT_TEST_CONCURRENCY, max_concurrent_calls) conversations at once. `mode: "voice"` holds each scenario as a real web call through ' +
      'the worker, with a simulated caller in the room (local speech: festival speaks, pocketsphinx listens); its calls are not billable, ' +
      'take no daily slot, send no call event and yield to real calls: they start only while the organisation has fewer live calls than ' +
      '`max_concurrent_calls`, and never count against it.',
    params: AgentRunParams,
    body: CreateRun,
    status: 201,
    responses: { 201: { description: 'The run, queued', schema: Run } },
    handler: async ({ params, body, auth, db, audit, services }) => {
      const agent = await getAgent(db, auth.orgId, params.agent_id);
      if (!agent) throw notFound('Agent');
      const mode = body.mode ?? 'text';
      if ((body.suite_id === undefined) === (body.scenario_ids === undefined)) {
        throw invalidField(['body', 'suite_id'], 'Give exactly one of suite_id and scenario_ids', 'value_error', body);
      }
      let ids: string[];
      let suiteId: string | null = null;
      if (body.suite_id) {
        const suite = await getSuite(db, auth.orgId, body.suite_id);
        if (!suite) throw notFound('Test suite');
        ids = suite.scenario_ids;
        suiteId = suite.id;
      } else ids = body.scenario_ids!;
      const found = new Map((await scenariosByIds(db, auth.orgId, ids)).map((s) => [s.id, s]));
      const missing = ids.filter((id) => !found.has(id));
      // A suite may name a scenario deleted since; a list given here names only live ones.
      if (missing.length && !suiteId) throw notFound('Test scenario');
      const scenarios = ids.flatMap((id) => (found.has(id) ? [snapshotOf(found.get(id)!)] : []));
      if (!scenarios.length) throw invalidField(['body', 'suite_id'], 'The suite has no live scenarios', 'value_error', body.suite_id);
      // The version under test: the one given (a draft, say), else the published one.
      const rollout = (await getRollout(db, auth.orgId, agent.id))!;
      if (body.agent_version !== undefined) await checkPin(db, auth.orgId, agent.id, body.agent_version, ['body', 'agent_version']);
      const agentVersion = body.agent_version ?? rollout.published_version;
      const run = await insertRun(db, { orgId: auth.orgId, agentId: agent.id, suiteId, mode, scenarios, agentVersion });
      await enqueueRun(services, db, run);
      await audit({
        action: 'test_run.create',
        resourceType: 'test_run',
        resourceId: run.id,
        details: { agent_id: agent.id, suite_id: suiteId, mode, scenarios: scenarios.length, agent_version: agentVersion },
      });
      return runView(run, await resultsOf(db, run.id));
    },
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:agent_id/test-runs',
    operationId: 'listTestRuns',
    tag: 'agent-tests',
    summary: "List an agent's test runs",
    description: 'Newest first; `results` is null in lists (get one run to see them).',
    params: AgentRunParams,
    query: RunListQuery,
    responses: { 200: { description: 'Runs of the agent', schema: RunList } },
    handler: async ({ params, query, auth, db }) => {
      if (!(await getAgent(db, auth.orgId, params.agent_id))) throw notFound('Agent');
      const { items, total } = await listRuns(db, auth.orgId, params.agent_id, query);
      return { items: items.map((r) => runView(r, null)), total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/test-runs/:test_run_id',
    operationId: 'getTestRun',
    tag: 'agent-tests',
    summary: 'Get a test run',
    description:
      'The status, the counts and, per scenario in order, its status, each expectation with pass or fail and the reason, the transcript ' +
      "(`messages`), the tool calls, how the conversation ended and the agent's per-turn latency.",
    params: RunParams,
    responses: { 200: { description: 'The run', schema: Run } },
    handler: async ({ params, auth, db, services }) => {
      const run = await getRun(db, auth.orgId, params.test_run_id);
      if (!run) throw notFound('Test run');
      const results = await resultsOf(db, run.id);
      return runView(run, results, await recordingUrls(services, db, results));
    },
  }),
  defineRoute({
    method: 'post',
    path: '/test-runs/:test_run_id/cancel',
    operationId: 'cancelTestRun',
    tag: 'agent-tests',
    summary: 'Cancel a test run',
    description:
      'Scenarios not started never start; conversations in progress stop and keep what was said so far (status `canceled`). Finished ' +
      'scenarios keep their results. `test_run.completed` follows with status `canceled`. A run that has already ended is answered as it is.',
    params: RunParams,
    responses: { 200: { description: 'The run', schema: Run } },
    handler: async ({ params, auth, db, audit, onCommit }) => {
      const cur = await getRun(db, auth.orgId, params.test_run_id, { forUpdate: true });
      if (!cur) throw notFound('Test run');
      const row = await markRunCanceled(db, cur.id);
      if (row) {
        // Pending scenarios end here; running ones are ended by their runner (with what they said so far).
        await cancelResults(db, cur.id, undefined, { pendingOnly: true });
        await audit({ action: 'test_run.cancel', resourceType: 'test_run', resourceId: cur.id, details: { status: cur.status } });
        onCommit(() => abortRun(cur.id));
      }
      return runView(row ?? cur, await resultsOf(db, cur.id));
    },
  }),
];
