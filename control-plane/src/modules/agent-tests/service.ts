// Agent-test rules that JSON Schema alone can't express (the fields each expectation type takes, one matcher
// per argument, persona or script), the defaults, and the public views of runs and results.
import { ValidationFailure } from '../../http/errors.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import {
  SCENARIO_DEFAULTS,
  type CreateScenario,
  type Expectation,
  type ExpectationType,
  type Run,
  type ScenarioResult,
  type ScenarioSnapshot,
  type UpdateScenario,
} from '../../../../schemas/agent-tests.ts';
import type { Services } from '../../services.ts';
import type { Db } from '../../db/types.ts';
import { recordingUrl } from '../calls/storage/index.ts';
import { compilePattern } from './patterns.ts';
import { recordingKeysOf, type ResultRow, type RunRow, type ScenarioRow, type ScenarioWrite } from './queries.ts';

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The fields each expectation type takes besides `type` and `name`, and which of them it requires. */
const EXPECTATION_FIELDS: Record<ExpectationType, { required: string[]; optional: string[] }> = {
  llm_judge: { required: ['question'], optional: [] },
  tool_called: { required: ['tool'], optional: ['arguments'] },
  transcript_contains: { required: ['text'], optional: ['role'] },
  transcript_not_contains: { required: ['text'], optional: ['role'] },
  ended_by: { required: ['by'], optional: ['end_reason'] },
  max_latency_ms: { required: ['max_ms'], optional: [] },
  outcome_equals: { required: ['outcome'], optional: [] },
};

export function expectationProblems(list: Expectation[] | undefined, at: (string | number)[]): ValidationErrorItem[] {
  const problems: ValidationErrorItem[] = [];
  (list ?? []).forEach((e, i) => {
    const loc = [...at, i];
    const rule = EXPECTATION_FIELDS[e.type];
    for (const [field, value] of Object.entries(e)) {
      if (field === 'type' || field === 'name') continue;
      if (!rule.required.includes(field) && !rule.optional.includes(field)) {
        problems.push({
          loc: [...loc, field],
          msg: `Extra inputs are not permitted for expectations of type '${e.type}'`,
          type: 'extra_forbidden',
          input: value,
        });
      }
    }
    for (const field of rule.required) {
      if ((e as Record<string, unknown>)[field] === undefined) problems.push({ loc: [...loc, field], msg: 'Field required', type: 'missing', input: e });
    }
    for (const [arg, m] of Object.entries(e.arguments ?? {})) {
      const given = Object.keys(m);
      if (given.length !== 1) {
        problems.push({
          loc: [...loc, 'arguments', arg],
          msg: 'A matcher has exactly one of equals, contains, matches, exists',
          type: 'value_error',
          input: m,
        });
        continue;
      }
      if (m.matches !== undefined) {
        const compiled = compilePattern(m.matches);
        if ('problem' in compiled) problems.push({ loc: [...loc, 'arguments', arg, 'matches'], msg: compiled.problem, type: 'value_error', input: m.matches });
      }
    }
  });
  return problems;
}

function scenarioProblems(s: ScenarioWrite, body: CreateScenario | UpdateScenario): ValidationErrorItem[] {
  const problems: ValidationErrorItem[] = [];
  if (body.persona !== undefined && body.script !== undefined) {
    problems.push({ loc: ['body', 'script'], msg: 'Give either persona or script, not both', type: 'value_error', input: body.script });
  } else if (s.persona === null && s.script === null) {
    problems.push({ loc: ['body', 'persona'], msg: 'Field required: a persona or a script', type: 'missing', input: body });
  }
  for (const name of Object.keys(body.variables ?? {})) {
    if (!VARIABLE_NAME.test(name)) {
      problems.push({
        loc: ['body', 'variables', name],
        msg: 'Variable names are letters, digits and _, not starting with a digit (as in {{name}} placeholders)',
        type: 'value_error',
        input: name,
      });
    }
  }
  const mocked = new Set<string>();
  (body.tool_mocks ?? []).forEach((m, i) => {
    if (m.result !== undefined && m.error !== undefined)
      problems.push({ loc: ['body', 'tool_mocks', i, 'error'], msg: 'Give either result or error, not both', type: 'value_error', input: m.error });
    if (mocked.has(m.tool)) problems.push({ loc: ['body', 'tool_mocks', i, 'tool'], msg: 'This tool is already mocked', type: 'value_error', input: m.tool });
    mocked.add(m.tool);
  });
  problems.push(...expectationProblems(body.expectations, ['body', 'expectations']));
  return problems;
}

/** The scenario a create or update stores, with defaults filled in; throws the 422. */
export function resolveScenario(body: CreateScenario | UpdateScenario, current: ScenarioRow | null): ScenarioWrite {
  const base: ScenarioWrite = current
    ? (({ id: _i, created_at: _c, updated_at: _u, ...rest }) => rest)(current)
    : {
        name: '',
        persona: null,
        script: null,
        variables: {},
        max_turns: SCENARIO_DEFAULTS.max_turns,
        max_duration_seconds: SCENARIO_DEFAULTS.max_duration_seconds,
        tool_mocks: [],
        expectations: [],
        metadata: {},
      };
  const s: ScenarioWrite = { ...base, ...body };
  // One of the two: setting one drops the other.
  if (body.persona !== undefined) s.script = null;
  if (body.script !== undefined) s.persona = null;
  const problems = scenarioProblems(s, body);
  if (problems.length) throw new ValidationFailure(problems);
  return s;
}

export const snapshotOf = (s: ScenarioRow): ScenarioSnapshot => (({ created_at: _c, updated_at: _u, ...rest }) => rest)(s);

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const NO_SAMPLES = Object.freeze({ p50_ms: 0, avg_ms: 0, min_ms: 0, max_ms: 0, samples: 0 });

export function resultView(r: ResultRow, recordings: Map<string, string> = new Map()): ScenarioResult {
  return {
    scenario_id: r.scenario_id,
    scenario_name: r.scenario.name,
    status: r.status,
    expectations: r.expectations,
    messages: r.messages,
    tool_calls: r.tool_calls,
    ended_by: r.ended_by,
    end_reason: r.end_reason,
    outcome: r.outcome,
    turns: r.turns,
    duration_seconds: r.duration_ms === null ? null : r.duration_ms / 1000,
    latency: { e2e: r.latency?.e2e ?? { ...NO_SAMPLES } },
    call_id: r.call_id ?? null,
    recording_url: r.call_id ? (recordings.get(r.call_id) ?? null) : null,
    error: r.error,
    started_at: iso(r.started_at),
    ended_at: iso(r.ended_at),
  };
}

/** Signed recording URLs of a run's voice calls, by call id. */
export async function recordingUrls(services: Services, db: Db, results: ResultRow[]): Promise<Map<string, string>> {
  const keys = await recordingKeysOf(
    db,
    results.flatMap((r) => (r.call_id ? [r.call_id] : [])),
  );
  const out = new Map<string, string>();
  for (const [callId, key] of keys) {
    const url = await recordingUrl(services, callId, key);
    if (url) out.set(callId, url);
  }
  return out;
}

export function runView(run: RunRow, results: ResultRow[] | null, recordings: Map<string, string> = new Map()): Run {
  return {
    id: run.id,
    agent_id: run.agent_id,
    suite_id: run.suite_id,
    mode: run.mode,
    status: run.status,
    total: run.total,
    passed: run.passed,
    failed: run.failed,
    errored: run.errored,
    agent_version: run.agent_version ?? null,
    started_at: iso(run.started_at),
    ended_at: iso(run.ended_at),
    created_at: run.created_at.toISOString(),
    results: results ? results.map((r) => resultView(r, recordings)) : null,
  };
}
