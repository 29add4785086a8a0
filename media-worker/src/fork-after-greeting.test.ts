import { afterEach, describe, expect, it, vi } from 'vitest';
import { FORK_AFTER_GREETING_AGENTS_VERSION, ForkAfterGreetingVersionError, assertForkAfterGreetingTarget, installForkAfterGreeting, loadProcPool, type ForkDeferral } from './fork-after-greeting.ts';
import { installedAgentsVersion } from './session/agents-release.ts';

/**
 * A pool shaped as agents-js 1.9.0's ProcPool is where the patch reads it (procMutex, warmedProcQueue with
 * items and get(), each entry's proc and unlock): `unlocked` lists the slots released, which is what starts a
 * replacement fork in agents-js.
 */
function pool(spares: number) {
  const unlocked: string[] = [];
  const launched: string[] = [];
  const items = Array.from({ length: spares }, (_, i) => ({
    proc: { launchJob: async (info: { job: { id: string } }) => void launched.push(info.job.id) },
    unlock: () => void unlocked.push(`slot-${i}`),
  }));
  class Pool {
    procMutex = {};
    warmedProcQueue = { items, get: async () => items.shift()! };
    async launchJob(_info: { job: { id: string; metadata?: string } }): Promise<void> {
      throw new Error('the original launchJob runs only without prewarmed processes');
    }
  }
  return { Pool, unlocked, launched };
}

let installed: ForkDeferral | null = null;
afterEach(() => {
  installed?.uninstall();
  installed = null;
  vi.useRealTimers();
});

describe('fork after greeting', () => {
  it('holds the replacement of a taken process until its call reports first audio (no quiet window)', async () => {
    const { Pool, unlocked, launched } = pool(2);
    installed = installForkAfterGreeting(Pool, { maxDeferMs: 60_000, quietMs: 0 });
    await new Pool().launchJob({ job: { id: 'AJ_1' } });
    expect(launched).toEqual(['AJ_1']);
    expect(unlocked).toEqual([]);
    expect(installed.waiting).toBe(1);
    installed.release('AJ_1');
    expect(unlocked).toEqual(['slot-0']);
    // Once only.
    installed.release('AJ_1');
    expect(unlocked).toEqual(['slot-0']);
  });

  it('forks at once when the call took the last prewarmed process, or found none left', async () => {
    const { Pool, unlocked } = pool(2);
    installed = installForkAfterGreeting(Pool, { maxDeferMs: 60_000 });
    const p = new Pool();
    await p.launchJob({ job: { id: 'AJ_1' } });
    expect(unlocked).toEqual([]);
    await p.launchJob({ job: { id: 'AJ_2' } });
    // The second call took the last spare: its replacement starts now; the first's still waits.
    expect(unlocked).toEqual(['slot-1']);
    expect(installed.waiting).toBe(1);
    // A third call finds no spare: the held fork starts before it waits for one.
    p.warmedProcQueue.get = async () => ({ proc: { launchJob: async () => {} }, unlock: () => void unlocked.push('slot-new') });
    await p.launchJob({ job: { id: 'AJ_3' } });
    expect(unlocked).toEqual(['slot-1', 'slot-0', 'slot-new']);
    expect(installed.waiting).toBe(0);
  });

  it('holds every replacement while a call is in its first quietMs: a standby agent waiting forks only after the call that made it', async () => {
    vi.useFakeTimers();
    const { Pool, unlocked } = pool(3);
    installed = installForkAfterGreeting(Pool, { maxDeferMs: 60_000, quietMs: 3000 });
    const p = new Pool();
    // A standby agent was given a call; the control plane starts the next standby agent at once, which takes a
    // prewarmed process and is soon waiting.
    installed.callStarting('AJ_standby_1');
    await p.launchJob({ job: { id: 'AJ_standby_2', metadata: JSON.stringify({ standby: 'standby-7c3d2a6e-2f0b-4b1e-9a53-0d6f8c1e2b44' }) } });
    installed.release('AJ_standby_2');
    expect(unlocked).toEqual([]);
    await vi.advanceTimersByTimeAsync(2999);
    expect(unlocked).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(unlocked).toEqual(['slot-0']);

    // A dispatched job is a call starting: its own fork waits out its first seconds even after its greeting.
    await p.launchJob({ job: { id: 'AJ_call' } });
    installed.release('AJ_call');
    await vi.advanceTimersByTimeAsync(2999);
    expect(unlocked).toEqual(['slot-0']);
    await vi.advanceTimersByTimeAsync(1);
    expect(unlocked).toEqual(['slot-0', 'slot-1']);
  });

  it('forks after maxDeferMs whatever is starting', async () => {
    vi.useFakeTimers();
    const { Pool, unlocked } = pool(3);
    installed = installForkAfterGreeting(Pool, { maxDeferMs: 5000, quietMs: 3000 });
    const p = new Pool();
    await p.launchJob({ job: { id: 'AJ_1' } });
    installed.release('AJ_1');
    // Calls keep starting.
    for (let t = 0; t < 5000; t += 1000) {
      installed.callStarting(`AJ_other_${t}`);
      await vi.advanceTimersByTimeAsync(1000);
      // Held while calls start, until the cap.
      if (t + 1000 < 5000) expect(unlocked).toEqual([]);
    }
    expect(unlocked).toEqual(['slot-0']);
  });

  it('forks after maxDeferMs when no first audio comes (a call with no greeting)', async () => {
    const { Pool, unlocked } = pool(2);
    installed = installForkAfterGreeting(Pool, { maxDeferMs: 20 });
    await new Pool().launchJob({ job: { id: 'AJ_1' } });
    await new Promise((r) => setTimeout(r, 60));
    expect(unlocked).toEqual(['slot-0']);
  });

  it("patches the ProcPool the worker's agents-js uses, and only the release it was checked against", async () => {
    const ProcPool = await loadProcPool();
    expect(typeof ProcPool.prototype.launchJob).toBe('function');
    expect(installedAgentsVersion()).toBe(FORK_AFTER_GREETING_AGENTS_VERSION);
    expect(() => assertForkAfterGreetingTarget('9.9.9')).toThrow(ForkAfterGreetingVersionError);
  });
});
