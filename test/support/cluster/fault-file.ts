// What each test/faults/*.test.ts file starts with: the cluster and its surroundings, started in beforeAll
// and stopped in afterAll (registered at import), skipped where setup has not provided LiveKit or HAProxy, and
// the checks every fault must pass whatever it struck.
import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';
import { disposeRtc } from '../rtc-client.ts';
import { clusterPrerequisites } from './cluster.ts';
import { startFaultEnv, type FaultSetup } from './setup.ts';
import type { FaultResult } from './fault-run.ts';

export function faultFile(opts: { sip?: boolean } = {}) {
  const missing = clusterPrerequisites(opts);
  let env: FaultSetup | null = null;
  const log = (line: string) => process.stderr.write(`[faults ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
  beforeAll(async () => {
    if (missing.length === 0) env = await startFaultEnv({ ...opts, log });
  }, 300_000);
  afterAll(async () => {
    await env?.stop();
    await disposeRtc();
  }, 300_000);
  return {
    /** Non-empty when the file's tests are skipped: what setup has not provided. */
    missing,
    env(): FaultSetup {
      if (!env) throw new Error('the cluster did not start');
      return env;
    },
    log,
    /**
     * Logs a fault's result and, under `npm run bench:faults` (VAP_FAULTS_RESULTS names its file), appends it there
     * before the test's checks run: a fault the platform does not survive is a figure too.
     */
    record(r: FaultResult): void {
      log(JSON.stringify(r));
      if (process.env.VAP_FAULTS_RESULTS) appendFileSync(process.env.VAP_FAULTS_RESULTS, JSON.stringify(r) + '\n');
    },
  };
}

/** What every fault must leave true: every call ended, no event lost or duplicated, new calls served again. */
export function expectRecovered(r: FaultResult): void {
  const detail = JSON.stringify(r, null, 1);
  expect(r.stuck, detail).toEqual([]);
  expect(r.events.missing, detail).toEqual([]);
  expect(r.events.duplicated_distinct_ids, detail).toEqual([]);
  expect(r.new_calls.new_calls_served_again_after_s, detail).not.toBeNull();
  expect(r.greeting_ms_after_restore, detail).not.toBeNull();
}
