// A restart of the SIP bridge on the one-machine cluster (test/support/cluster, with the bridge), with phone callers
// (SIPp through the bridge) and a web caller in flight, and new phone and web calls arriving.
// docs/operations.md, "What happens when …", has the figures of `npm run bench:faults`.
import { describe, expect, it } from 'vitest';
import { runFault } from '../support/cluster/fault-run.ts';
import { sipRestart } from '../support/cluster/faults.ts';
import { expectRecovered, faultFile } from '../support/cluster/fault-file.ts';
import { phoneRun } from '../support/cluster/sip-run.ts';

const file = faultFile({ sip: true });

describe.skipIf(file.missing.length > 0)('the SIP bridge restarts with phone calls in flight', () => {
  it('phone calls in flight end (never stuck), web calls go on, new phone calls are answered once it is back', async () => {
    const env = file.env();
    const r = await runFault(env, sipRestart(), await phoneRun(env));
    file.record(r);
    const detail = JSON.stringify(r, null, 1);
    expectRecovered(r);
    for (const o of r.in_flight) expect(o.status, detail).toBe('completed');
    // The web call does not go through the bridge.
    for (const o of r.in_flight.filter((x) => x.kind === 'web')) expect(o.answered_after_fault_ms, detail).not.toBeNull();
    // Phone calls are served again after the restart.
    expect(
      r.new_calls.calls.some((c) => c.kind === 'sip' && c.served && c.at_s > 0),
      detail,
    ).toBe(true);
  }, 900_000);
});
