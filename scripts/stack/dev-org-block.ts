// The control plane's block about the development organisation, as `npm start` shows it
// (docs/guides/getting-started.md, "Local stack").
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The control plane's word about the development organisation, from the part of its log this run wrote (`from`: the log's size in bytes before) (the log is
 * appended to across runs: an earlier run's "created" must not be shown again). It is written just after the control
 * plane is ready, so it is waited for, briefly.
 */
export async function devOrgBlock(cpLog: string, from: number, waitMs = 10_000): Promise<string | null> {
  for (let waited = 0; ; waited += 100) {
    if (existsSync(cpLog)) {
      const m = /\n(\s*Development organisation[\s\S]*?Docs: \S+)/.exec(readFileSync(cpLog).subarray(from).toString('utf8'));
      if (m) return m[1]!;
    }
    if (waited >= waitMs) return null;
    await sleep(100);
  }
}
