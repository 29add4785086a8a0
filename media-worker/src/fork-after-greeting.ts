// A call's first second belongs to its greeting. agents-js keeps prewarmed job processes ready (ProcPool), and
// the moment a call takes one it forks the replacement: a new Node process that loads every module and runs the
// prewarm (about a second of CPU), on the same cores, while the call connects, starts its session and speaks
// its first words. On a 2-core worker that contention alone moved a bare agent's first audio from ~560 to
// ~700 ms (bench:firstaudio, floor).
//
// The patch wraps ProcPool.prototype.launchJob: the slot of the process a call took is released (which is what
// starts the replacement's fork) when that call's first audio has played, or after `maxDeferMs`, not at once.
// Capacity comes first: when a call takes the last prewarmed process, or finds none left, the forks start at
// once, as agents-js would have started them.
//
// ProcPool is not exported: like race-fix.ts and prompt-pause.ts, the patch is pinned to the agents-js release it
// was checked against (ipc/proc_pool.js's launchJob and run loop), and any other version fails loudly.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { PinnedReleaseError, installedAgentsVersion } from './session/agents-release.ts';

/** The @livekit/agents release whose ProcPool this patch was checked against. */
export const FORK_AFTER_GREETING_AGENTS_VERSION = '1.9.0';

export class ForkAfterGreetingVersionError extends PinnedReleaseError {
  constructor(installed: string) {
    const check = 'ProcPool.launchJob still takes a warmed process and releases its slot (starting the replacement fork) at once';
    super('fork-after-greeting.ts', FORK_AFTER_GREETING_AGENTS_VERSION, installed, check, 'FORK_AFTER_GREETING_AGENTS_VERSION');
  }
}

export function assertForkAfterGreetingTarget(version = installedAgentsVersion()): void {
  if (version !== FORK_AFTER_GREETING_AGENTS_VERSION) throw new ForkAfterGreetingVersionError(version);
}

/** The parts of agents-js 1.9.0's ProcPool the patch uses. */
interface PoolInternals {
  procMutex?: unknown;
  warmedProcQueue: { items: unknown[]; get(): Promise<{ proc: { launchJob(info: unknown): Promise<void> }; unlock: () => void }> };
}
interface JobInfo {
  job: { id: string };
}
type LaunchJob = (this: PoolInternals, info: JobInfo) => Promise<void>;

export interface ForkDeferral {
  /** The call of this job has played its first audio: its replacement may start. */
  release(jobId: string): void;
  /** Replacements waiting now (for tests and the log). */
  readonly waiting: number;
  /** Restores agents-js's own launchJob. */
  uninstall(): void;
}

/** ProcPool's class, from the same module instance the worker's AgentServer uses. */
export async function loadProcPool(): Promise<{ prototype: { launchJob: LaunchJob } }> {
  // The package's entry sits in dist/, beside the ESM build of ipc/ that its index imports.
  const dist = path.dirname(createRequire(import.meta.url).resolve('@livekit/agents'));
  const mod = (await import(pathToFileURL(path.join(dist, 'ipc', 'proc_pool.js')).href)) as { ProcPool: { prototype: { launchJob: LaunchJob } } };
  return mod.ProcPool;
}

export function installForkAfterGreeting(ProcPool: { prototype: { launchJob: LaunchJob } }, opts: { maxDeferMs: number }): ForkDeferral {
  const original = ProcPool.prototype.launchJob;
  const waiting = new Map<string, { unlock: () => void; timer: NodeJS.Timeout }>();

  const release = (jobId: string) => {
    const w = waiting.get(jobId);
    if (!w) return;
    waiting.delete(jobId);
    clearTimeout(w.timer);
    w.unlock();
  };
  const releaseAll = () => {
    for (const id of [...waiting.keys()]) release(id);
  };

  ProcPool.prototype.launchJob = async function launchJob(this: PoolInternals, info: JobInfo): Promise<void> {
    // Without prewarmed processes agents-js starts one per call; nothing to defer.
    if (!this.procMutex || opts.maxDeferMs <= 0) return original.call(this, info);
    // This call needs a process: if none is ready, the forks held back must start now.
    if (this.warmedProcQueue.items.length === 0) releaseAll();
    const entry = await this.warmedProcQueue.get();
    const jobId = info.job.id;
    if (this.warmedProcQueue.items.length === 0) {
      // The last spare was taken: the next call would wait for a fork, so it starts now.
      entry.unlock();
    } else {
      let unlocked = false;
      const unlock = () => {
        if (unlocked) return;
        unlocked = true;
        entry.unlock();
      };
      waiting.set(jobId, { unlock, timer: setTimeout(() => release(jobId), opts.maxDeferMs).unref() });
    }
    await entry.proc.launchJob(info);
  };

  return {
    release,
    get waiting() {
      return waiting.size;
    },
    uninstall() {
      releaseAll();
      ProcPool.prototype.launchJob = original;
    },
  };
}
