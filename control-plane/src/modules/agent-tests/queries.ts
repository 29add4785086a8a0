// SQL of agent tests: scenarios, suites, runs and their per-scenario results, and the claim that bounds how
// many conversations of one organisation run at once.
import type { Db } from '../../db/types.ts';
import type { AgentRow } from '../agents/queries.ts';
import type { ExpectationResult, ResultStatus, Scenario, ScenarioSnapshot, Suite, TestMessage, ToolCallRecord } from '../../../../schemas/agent-tests.ts';
import { pageOf, totalColumn, type Counted } from '../../db/list-page.ts';

// ---- Scenarios -------------------------------------------------------------------------------------------------

export type ScenarioRow = Scenario;
export type ScenarioWrite = Omit<Scenario, 'id' | 'created_at' | 'updated_at'>;

const SCENARIO_COLUMNS = [
  'id',
  'name',
  'persona',
  'script',
  'variables',
  'max_turns',
  'max_duration_seconds',
  'tool_mocks',
  'expectations',
  'metadata',
  'created_at',
  'updated_at',
];
const SCENARIO_WRITABLE = ['name', 'persona', 'script', 'variables', 'max_turns', 'max_duration_seconds', 'tool_mocks', 'expectations', 'metadata'];

function scenarioValues(db: Db, s: ScenarioWrite) {
  return {
    ...s,
    script: s.script === null ? null : db.json(s.script),
    variables: db.json(s.variables),
    tool_mocks: db.json(s.tool_mocks as never),
    expectations: db.json(s.expectations as never),
    metadata: db.json(s.metadata as never),
  };
}

export async function insertScenario(db: Db, orgId: string, s: ScenarioWrite): Promise<ScenarioRow> {
  const [row] = await db<ScenarioRow[]>`
    insert into agent_test_scenarios ${db({ org_id: orgId, ...scenarioValues(db, s) } as never, ['org_id', ...SCENARIO_WRITABLE])}
    returning ${db(SCENARIO_COLUMNS)}`;
  return row!;
}

export async function updateScenario(db: Db, orgId: string, id: string, s: ScenarioWrite): Promise<ScenarioRow> {
  const [row] = await db<ScenarioRow[]>`
    update agent_test_scenarios set ${db(scenarioValues(db, s) as never, SCENARIO_WRITABLE)}, updated_at = now()
    where id = ${id} and org_id = ${orgId} and deleted_at is null
    returning ${db(SCENARIO_COLUMNS)}`;
  return row!;
}

export async function getScenario(db: Db, orgId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<ScenarioRow | null> {
  const [row] = await db<ScenarioRow[]>`
    select ${db(SCENARIO_COLUMNS)} from agent_test_scenarios
    where id = ${id} and org_id = ${orgId} and deleted_at is null ${opts.forUpdate ? db`for update` : db``}`;
  return row ?? null;
}

/** Live scenarios of the org among `ids`, in no particular order. */
export async function scenariosByIds(db: Db, orgId: string, ids: string[]): Promise<ScenarioRow[]> {
  return db<ScenarioRow[]>`
    select ${db(SCENARIO_COLUMNS)} from agent_test_scenarios
    where org_id = ${orgId} and id = any(${ids}::uuid[]) and deleted_at is null`;
}

export async function listScenarios(db: Db, orgId: string, q: { limit: number; offset: number }) {
  const where = db`org_id = ${orgId} and deleted_at is null`;
  const from = db`agent_test_scenarios where ${where}`;
  const rows = await db<Counted<ScenarioRow>[]>`select ${db(SCENARIO_COLUMNS)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`;
  return pageOf(db, rows, q.offset, from);
}

export async function softDeleteScenario(db: Db, orgId: string, id: string): Promise<void> {
  await db`update agent_test_scenarios set deleted_at = now(), updated_at = now() where id = ${id} and org_id = ${orgId} and deleted_at is null`;
}

/** Live suites of the org that list a scenario. */
export async function suitesUsingScenario(db: Db, orgId: string, scenarioId: string): Promise<{ id: string; name: string }[]> {
  return db<{ id: string; name: string }[]>`
    select id, name from agent_test_suites where org_id = ${orgId} and deleted_at is null and ${scenarioId}::uuid = any(scenario_ids) order by name`;
}

// ---- Suites ----------------------------------------------------------------------------------------------------

export type SuiteRow = Suite;
export type SuiteWrite = Omit<Suite, 'id' | 'created_at' | 'updated_at'>;
const SUITE_COLUMNS = ['id', 'name', 'agent_id', 'scenario_ids', 'metadata', 'created_at', 'updated_at'];

export async function insertSuite(db: Db, orgId: string, s: SuiteWrite): Promise<SuiteRow> {
  const [row] = await db<SuiteRow[]>`
    insert into agent_test_suites (org_id, name, agent_id, scenario_ids, metadata)
    values (${orgId}, ${s.name}, ${s.agent_id}, ${s.scenario_ids}::uuid[], ${db.json(s.metadata as never)})
    returning ${db(SUITE_COLUMNS)}`;
  return row!;
}

export async function updateSuite(db: Db, orgId: string, id: string, s: SuiteWrite): Promise<SuiteRow> {
  const [row] = await db<SuiteRow[]>`
    update agent_test_suites
    set name = ${s.name}, agent_id = ${s.agent_id}, scenario_ids = ${s.scenario_ids}::uuid[], metadata = ${db.json(s.metadata as never)}, updated_at = now()
    where id = ${id} and org_id = ${orgId} and deleted_at is null
    returning ${db(SUITE_COLUMNS)}`;
  return row!;
}

export async function getSuite(db: Db, orgId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<SuiteRow | null> {
  const [row] = await db<SuiteRow[]>`
    select ${db(SUITE_COLUMNS)} from agent_test_suites
    where id = ${id} and org_id = ${orgId} and deleted_at is null ${opts.forUpdate ? db`for update` : db``}`;
  return row ?? null;
}

export async function listSuites(db: Db, orgId: string, q: { limit: number; offset: number; agent_id?: string | undefined }) {
  const where = db`org_id = ${orgId} and deleted_at is null ${q.agent_id ? db`and agent_id = ${q.agent_id}` : db``}`;
  const from = db`agent_test_suites where ${where}`;
  const rows = await db<Counted<SuiteRow>[]>`select ${db(SUITE_COLUMNS)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`;
  return pageOf(db, rows, q.offset, from);
}

export async function softDeleteSuite(db: Db, orgId: string, id: string): Promise<void> {
  await db`update agent_test_suites set deleted_at = now(), updated_at = now() where id = ${id} and org_id = ${orgId} and deleted_at is null`;
}

// ---- Runs and results ------------------------------------------------------------------------------------------

export interface RunRow {
  id: string;
  org_id: string;
  agent_id: string;
  suite_id: string | null;
  mode: 'text' | 'voice';
  status: 'queued' | 'running' | 'completed' | 'canceled';
  total: number;
  passed: number;
  failed: number;
  errored: number;
  started_at: Date | null;
  ended_at: Date | null;
  created_at: Date;
  /** The agent version the run tests (migration 150); null for runs older than versions. */
  agent_version: number | null;
}

export interface ResultRow {
  id: string;
  run_id: string;
  org_id: string;
  position: number;
  scenario_id: string;
  scenario: ScenarioSnapshot;
  status: ResultStatus;
  expectations: ExpectationResult[];
  messages: TestMessage[];
  tool_calls: ToolCallRecord[];
  ended_by: 'agent' | 'caller' | 'limit' | null;
  end_reason: string | null;
  outcome: string | null;
  turns: number;
  duration_ms: number | null;
  latency: { e2e: { p50_ms: number; avg_ms: number; min_ms: number; max_ms: number; samples: number } } | null;
  error: string | null;
  started_at: Date | null;
  ended_at: Date | null;
  /** Voice mode: the scenario's call (migration 111). */
  call_id: string | null;
}

const RUN_COLUMNS = ['id', 'org_id', 'agent_id', 'suite_id', 'mode', 'status', 'total', 'passed', 'failed', 'errored', 'started_at', 'ended_at', 'created_at', 'agent_version'];

/** The run and one pending result per scenario, in order. */
export async function insertRun(
  db: Db,
  r: { orgId: string; agentId: string; suiteId: string | null; mode: 'text' | 'voice'; scenarios: ScenarioSnapshot[]; agentVersion: number | null },
): Promise<RunRow> {
  const [run] = await db<RunRow[]>`
    insert into agent_test_runs (org_id, agent_id, suite_id, mode, total, agent_version)
    values (${r.orgId}, ${r.agentId}, ${r.suiteId}, ${r.mode}, ${r.scenarios.length}, ${r.agentVersion})
    returning ${db(RUN_COLUMNS)}`;
  const rows = r.scenarios.map((s, i) => ({ run_id: run!.id, org_id: r.orgId, position: i, scenario_id: s.id, scenario: db.json(s as never) }));
  await db`insert into agent_test_results ${db(rows as never, ['run_id', 'org_id', 'position', 'scenario_id', 'scenario'])}`;
  return run!;
}

export async function getRun(db: Db, orgId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<RunRow | null> {
  const [row] = await db<RunRow[]>`
    select ${db(RUN_COLUMNS)} from agent_test_runs where id = ${id} and org_id = ${orgId} ${opts.forUpdate ? db`for update` : db``}`;
  return row ?? null;
}

export async function getRunById(db: Db, id: string): Promise<RunRow | null> {
  const [row] = await db<RunRow[]>`select ${db(RUN_COLUMNS)} from agent_test_runs where id = ${id}`;
  return row ?? null;
}

export async function runStatus(db: Db, id: string): Promise<RunRow['status'] | null> {
  const [row] = await db<{ status: RunRow['status'] }[]>`select status from agent_test_runs where id = ${id}`;
  return row?.status ?? null;
}

export async function listRuns(db: Db, orgId: string, agentId: string, q: { limit: number; offset: number; status?: string | undefined }) {
  const where = db`org_id = ${orgId} and agent_id = ${agentId} ${q.status ? db`and status = ${q.status}` : db``}`;
  const from = db`agent_test_runs where ${where}`;
  const rows = await db<Counted<RunRow>[]>`select ${db(RUN_COLUMNS)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`;
  return pageOf(db, rows, q.offset, from);
}

export async function resultsOf(db: Db, runId: string): Promise<ResultRow[]> {
  return db<ResultRow[]>`select * from agent_test_results where run_id = ${runId} order by position`;
}

/** queued → running, once. */
export async function markRunStarted(db: Db, runId: string): Promise<void> {
  await db`update agent_test_runs set status = 'running', started_at = coalesce(started_at, now()), updated_at = now() where id = ${runId} and status = 'queued'`;
}

/**
 * Results a dead process left `running` go back to `pending`. Only the run's own job runs its results, and
 * pg-boss starts a job again only once the previous attempt is over (failed or expired), so none is in flight.
 */
export async function requeueRunning(db: Db, runId: string): Promise<void> {
  await db`update agent_test_results set status = 'pending', started_at = null where run_id = ${runId} and status = 'running'`;
}

/**
 * Claims the run's next pending result if the organisation has fewer than `limit` conversations running
 * (across all its runs). The advisory lock serialises claims of one organisation, so two runs never both
 * take the last slot. `charge` (a run on the platform's keys: platform-spend.ts) counts the conversation against
 * the organisation's daily cap; 'capped' when it is reached.
 */
export async function claimNext(
  db: Db,
  run: { id: string; org_id: string },
  limit: number,
  charge: ((db: Db) => Promise<boolean>) | null = null,
): Promise<ResultRow | 'busy' | 'capped' | null> {
  await db`select pg_advisory_xact_lock(hashtextextended(${`agent-tests:${run.org_id}`}, 0))`;
  const [c] = await db<{ running: number }[]>`
    select count(*)::int as running from agent_test_results where org_id = ${run.org_id} and status = 'running'`;
  const running = c!.running;
  const [next] = await db<{ id: string }[]>`
    select id from agent_test_results where run_id = ${run.id} and status = 'pending' order by position limit 1`;
  if (!next) return null;
  if (running >= limit) return 'busy';
  if (charge && !(await charge(db))) return 'capped';
  const [row] = await db<ResultRow[]>`
    update agent_test_results set status = 'running', started_at = now() where id = ${next.id} returning *`;
  return row!;
}

/** The run's scenarios not yet started end in error (the daily cap on platform keys stopped them). */
export async function errorPending(db: Db, runId: string, error: string): Promise<void> {
  await db`
    update agent_test_results set status = 'error', error = ${error}, ended_at = now()
    where run_id = ${runId} and status = 'pending'`;
}

/** True while some of the run's scenarios have not started. */
export async function hasPending(db: Db, runId: string): Promise<boolean> {
  const [row] = await db<{ n: number }[]>`select count(*)::int as n from agent_test_results where run_id = ${runId} and status = 'pending'`;
  return row!.n > 0;
}

/** Voice mode: the call a scenario's conversation is held on. */
export async function setResultCall(db: Db, id: string, callId: string): Promise<void> {
  await db`update agent_test_results set call_id = ${callId} where id = ${id}`;
}

/** The recordings of a run's voice calls, by call id (the caller mints their URLs). */
export async function recordingKeysOf(db: Db, callIds: string[]): Promise<Map<string, string>> {
  if (!callIds.length) return new Map();
  const rows = await db<{ id: string; recording_key: string }[]>`
    select id, recording_key from calls where id = any(${callIds}::uuid[]) and recording_key is not null`;
  return new Map(rows.map((r) => [r.id, r.recording_key]));
}

export interface ResultWrite {
  status: ResultStatus;
  expectations: ExpectationResult[];
  messages: TestMessage[];
  tool_calls: ToolCallRecord[];
  ended_by: ResultRow['ended_by'];
  end_reason: string | null;
  outcome: string | null;
  turns: number;
  duration_ms: number | null;
  latency: ResultRow['latency'];
  error: string | null;
}

/** Records a finished conversation, unless the run was canceled meanwhile (then the row is already final). */
export async function saveResult(db: Db, id: string, r: ResultWrite): Promise<boolean> {
  const rows = await db`
    update agent_test_results set
      status = ${r.status}, expectations = ${db.json(r.expectations)}, messages = ${db.json(r.messages)},
      tool_calls = ${db.json(r.tool_calls as never)}, ended_by = ${r.ended_by}, end_reason = ${r.end_reason}, outcome = ${r.outcome},
      turns = ${r.turns}, duration_ms = ${r.duration_ms}, latency = ${r.latency ? db.json(r.latency) : null}, error = ${r.error}, ended_at = now()
    where id = ${id} and status = 'running'
    returning id`;
  return rows.length > 0;
}

/**
 * A canceled run's unfinished results. With `partial`, one conversation stopped mid-way keeps what was said;
 * `pendingOnly` ends only those not started (the cancel route: running ones are ended by their runner).
 */
export async function cancelResults(
  db: Db,
  runId: string,
  partial?: { id: string; messages: TestMessage[]; tool_calls: ToolCallRecord[]; turns: number; duration_ms: number },
  opts: { pendingOnly?: boolean } = {},
): Promise<void> {
  if (partial) {
    await db`
      update agent_test_results set status = 'canceled', messages = ${db.json(partial.messages)}, tool_calls = ${db.json(partial.tool_calls as never)},
        turns = ${partial.turns}, duration_ms = ${partial.duration_ms}, ended_at = now()
      where id = ${partial.id} and status in ('pending', 'running')`;
    return;
  }
  const open = opts.pendingOnly ? ['pending'] : ['pending', 'running'];
  await db`update agent_test_results set status = 'canceled', ended_at = coalesce(ended_at, now()) where run_id = ${runId} and status = any(${open}::text[])`;
}

export async function markRunCanceled(db: Db, runId: string): Promise<RunRow | null> {
  const [row] = await db<RunRow[]>`
    update agent_test_runs set status = 'canceled', ended_at = now(), updated_at = now()
    where id = ${runId} and status in ('queued', 'running')
    returning ${db(RUN_COLUMNS)}`;
  return row ?? null;
}

/** The counts of a run's results, and whether any is still to finish. */
export async function resultCounts(db: Db, runId: string): Promise<{ passed: number; failed: number; errored: number; open: number }> {
  const [row] = await db<{ passed: number; failed: number; errored: number; open: number }[]>`
    select count(*) filter (where status = 'passed')::int as passed,
           count(*) filter (where status = 'failed')::int as failed,
           count(*) filter (where status = 'error')::int as errored,
           count(*) filter (where status in ('pending', 'running'))::int as open
    from agent_test_results where run_id = ${runId}`;
  return row!;
}

/** running → completed with the counts; null if the run was canceled (or already completed). */
export async function completeRun(db: Db, runId: string, c: { passed: number; failed: number; errored: number }): Promise<RunRow | null> {
  const [row] = await db<RunRow[]>`
    update agent_test_runs set status = 'completed', passed = ${c.passed}, failed = ${c.failed}, errored = ${c.errored}, ended_at = now(), updated_at = now()
    where id = ${runId} and status in ('queued', 'running')
    returning ${db(RUN_COLUMNS)}`;
  return row ?? null;
}

/** Writes the counts of a canceled run (what finished before the cancel). */
export async function setRunCounts(db: Db, runId: string, c: { passed: number; failed: number; errored: number }): Promise<RunRow | null> {
  const [row] = await db<RunRow[]>`
    update agent_test_runs set passed = ${c.passed}, failed = ${c.failed}, errored = ${c.errored}, updated_at = now()
    where id = ${runId} returning ${db(RUN_COLUMNS)}`;
  return row ?? null;
}

/** The organisation's bound on concurrent calls (test conversations take at most as many). */
export async function orgConcurrencyLimit(db: Db, orgId: string): Promise<number> {
  const [row] = await db<{ max_concurrent_calls: number }[]>`select max_concurrent_calls from orgs where id = ${orgId}`;
  return row?.max_concurrent_calls ?? 0;
}

/** Claims the right to emit the run's test_run.completed (true once per run). */
export async function claimNotification(db: Db, runId: string): Promise<boolean> {
  const rows =
    await db`update agent_test_runs set notified_at = now() where id = ${runId} and notified_at is null and status in ('completed', 'canceled') returning id`;
  return rows.length > 0;
}

/** The agent and its model for a test run (the run names a live agent of its organisation). */
export async function agentAndModel(db: Db, orgId: string, agentId: string) {
  const [agent] = await db<AgentRow[]>`select * from agents where id = ${agentId} and org_id = ${orgId} and deleted_at is null`;
  if (!agent) return null;
  const [model] = await db<
    {
      provider: 'openai' | 'gemini' | 'anthropic' | 'local';
      model: string;
      base_url: string | null;
      temperature: number | null;
      max_tokens: number | null;
      system_prompt: string | null;
      tool_ids: string[];
      knowledge_base_ids: string[];
    }[]
  >`select provider, model, base_url, temperature, max_tokens, system_prompt, tool_ids, knowledge_base_ids from llm_models where id = ${agent.llm_id}`;
  return model ? { agent, model } : null;
}

/**
 * Counts one more platform-paid conversation for the organisation today, if it is under `cap` (in the claim's
 * transaction, under the organisation's claim lock); false when the cap is reached.
 */
export async function chargeConversation(db: Db, orgId: string, cap: number): Promise<boolean> {
  if (cap <= 0) return false;
  const rows = await db`
    insert into agent_test_platform_usage (org_id, day, conversations) values (${orgId}, (now() at time zone 'utc')::date, 1)
    on conflict (org_id, day) do update set conversations = agent_test_platform_usage.conversations + 1
    where agent_test_platform_usage.conversations < ${cap}
    returning conversations`;
  return rows.length > 0;
}
