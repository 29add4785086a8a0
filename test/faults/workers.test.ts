// Faults of media workers on the one-machine cluster (test/support/cluster: 2 LiveKit nodes on one Redis, 2
// control-plane replicas behind HAProxy, 3 workers, one PostgreSQL), with web callers in flight and new calls
// arriving: kill -9 of the worker holding the most calls, and SIGTERM (a drain). docs/operations.md, "What
// happens when …", has the figures of `npm run bench:faults`.
import { describe, expect, it } from 'vitest';
import { runFault } from '../support/cluster/fault-run.ts';
import { workerDrain, workerKill } from '../support/cluster/faults.ts';
import { expectRecovered, faultFile } from '../support/cluster/fault-file.ts';

const file = faultFile();

describe.skipIf(file.missing.length > 0)('a worker fails with calls in flight', () => {
  it('kill -9: its calls end worker_lost (never stuck), the others go on, new calls go to the survivors', async () => {
    const r = await runFault(file.env(), workerKill);
    file.record(r);
    const detail = JSON.stringify(r, null, 1);
    expect(r.target.calls_on_it, detail).toBeGreaterThan(0);
    expectRecovered(r);
    // The killed worker's callers hear silence: their agent is gone, and the platform ends their calls. A call whose
    // worker died before its start report landed ends `failed` / `worker_lost` (it had its config); one dispatched
    // to the killed worker that never got that far, `failed` / `dispatch_timeout`. Ended either way, never stuck.
    // (On a loaded machine a job can also die before the kill: its call ends too, and is not counted here.)
    const lost = r.in_flight.filter((o) => o.agent_left_after_s !== null && o.agent_left_after_s >= 0);
    expect(lost.length, detail).toBeGreaterThan(0);
    for (const o of lost) {
      expect(o.answered_after_fault_ms, detail).toBeNull();
      expect(['worker_lost', 'dispatch_timeout'], detail).toContain(o.end_reason);
      expect(o.ended_by_platform_after_s, detail).not.toBeNull();
    }
    // The other callers keep their agents, and their calls end when they hang up. (Whether an agent answered within
    // 30 s is recorded, not asserted: on a loaded machine an answer can take longer.)
    for (const o of r.in_flight.filter((x) => x.agent_left_after_s === null)) {
      expect(o.end_reason, detail).not.toBe('worker_lost');
      expect(o.status, detail).toBe('completed');
    }
  }, 900_000);

  it('SIGTERM: the worker drains (its calls still answer, then end as callers hang up) and exits by itself', async () => {
    const r = await runFault(file.env(), workerDrain());
    file.record(r);
    const detail = JSON.stringify(r, null, 1);
    expect(r.target.calls_on_it, detail).toBeGreaterThan(0);
    expectRecovered(r);
    // Its callers keep their agents until they hang up (answers are recorded, not asserted: see above).
    for (const o of r.in_flight) {
      expect(o.agent_left_after_s, detail).toBeNull();
      expect(o.end_reason, detail).not.toBe('worker_lost');
      expect(o.status, detail).toBe('completed');
    }
    expect(r.target.exited_after_s, detail).toBeDefined();
    expect(r.target.exit_code, detail).not.toBe('still running');
  }, 900_000);
});
