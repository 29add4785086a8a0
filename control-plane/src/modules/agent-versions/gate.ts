// The test gate (docs/decisions/038-agent-versions.md, "Test gate"): an agent that names a test suite publishes a version only once
// a run of that suite against that version has passed. The newest run of the suite against the version, made
// after the suite's last edit, decides: passed publishes; failed refuses with 409 naming the failed expectations;
// none yet (or canceled) starts one and refuses with 409 `pending`; one in flight refuses with 409 `pending`.
import type { Services } from '../../services.ts';
import type { Db } from '../../db/types.ts';
import type { FailedExpectation } from '../../../../schemas/agent-versions.ts';
import { getSuite, insertRun, resultsOf, scenariosByIds, type RunRow } from '../agent-tests/queries.ts';
import { snapshotOf } from '../agent-tests/service.ts';
import { enqueueRun } from '../agent-tests/queue.ts';
import { newestGateRun } from './queries.ts';

export type GateVerdict =
  | { state: 'open' }
  | { state: 'passed'; run_id: string }
  | { state: 'pending'; run_id: string; started: boolean; suite_id: string }
  | { state: 'failed'; run_id: string | null; suite_id: string | null; failed: FailedExpectation[]; reason: string };

/** The expectations that failed in a run, and the scenarios that could not run at all. */
export async function failedExpectations(db: Db, runId: string): Promise<FailedExpectation[]> {
  const out: FailedExpectation[] = [];
  for (const r of await resultsOf(db, runId)) {
    if (r.status === 'failed') {
      for (const e of r.expectations) {
        if (!e.passed) out.push({ scenario_id: r.scenario_id, scenario_name: r.scenario.name, expectation: e.name || e.type, type: e.type, reason: e.reason });
      }
    } else if (r.status === 'error' || r.status === 'canceled') {
      out.push({ scenario_id: r.scenario_id, scenario_name: r.scenario.name, expectation: r.status, type: r.status, reason: r.error });
    }
  }
  return out;
}

/** Starts a text-mode run of the suite against the version (in the caller's transaction). */
export async function startGateRun(services: Services, db: Db, orgId: string, agentId: string, suiteId: string, scenarioIds: string[], version: number): Promise<RunRow | null> {
  const scenarios = (await scenariosByIds(db, orgId, scenarioIds)).map(snapshotOf);
  if (!scenarios.length) return null;
  const run = await insertRun(db, { orgId, agentId, suiteId, mode: 'text', scenarios, agentVersion: version });
  await enqueueRun(services, db, run);
  return run;
}

export async function checkGate(services: Services, db: Db, orgId: string, agentId: string, suiteId: string | null, version: number): Promise<GateVerdict> {
  if (!suiteId) return { state: 'open' };
  const suite = await getSuite(db, orgId, suiteId);
  if (!suite) return { state: 'failed', run_id: null, suite_id: suiteId, failed: [], reason: "The agent's gate suite was deleted; set another gate or remove it" };
  const run = await newestGateRun(db, orgId, agentId, suite.id, version, new Date(suite.updated_at));
  if (run?.status === 'completed') {
    if (run.failed === 0 && run.errored === 0 && run.passed > 0) return { state: 'passed', run_id: run.id };
    return { state: 'failed', run_id: run.id, suite_id: suite.id, failed: await failedExpectations(db, run.id), reason: `Version ${version} failed test suite '${suite.name}'` };
  }
  if (run && run.status !== 'canceled') return { state: 'pending', run_id: run.id, started: false, suite_id: suite.id };
  const started = await startGateRun(services, db, orgId, agentId, suite.id, suite.scenario_ids, version);
  if (!started) return { state: 'failed', run_id: null, suite_id: suite.id, failed: [], reason: `Test suite '${suite.name}' has no live scenarios` };
  return { state: 'pending', run_id: started.id, started: true, suite_id: suite.id };
}
