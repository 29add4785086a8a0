// A call's first second belongs to its greeting. agents-js keeps prewarmed job processes ready (ProcPool), and
// the moment a call takes one it forks the replacement: a new Node process that loads every module and runs the
// prewarm (about a second of CPU), on the same cores, while the call connects, starts its session and speaks
// its first words. On a 2-core worker that contention alone moved a bare agent's first audio from ~560 to
// ~700 ms (bench:firstaudio, floor).
//
// The patch wraps ProcPool.prototype.launchJob: the slot of the process a job took is released (which is what
// starts the replacement's fork) when that job's call has played its first audio (or the job stands by for a call)
// and no call of this worker is in its first `quietMs`, or after `maxDeferMs` whatever happens; not at once.
// The quiet window matters with standby agents: a call taken by a standby agent makes the control plane start
// the next standby agent at once, whose process is taken and whose replacement used to be forked as soon as it
// was waiting, 0.3 s into the call, so that replacement's module loading (over a second of CPU) shared the cores
// with every call's first seconds (bench:firstaudio's census of the CPU in a call's first 3 s).
// Capacity comes first: when a job takes the last prewarmed process, or finds none left, the forks start at
// once, as agents-js would have started them.
//
// ProcPool is not exported: like race-fix.ts and prompt-pause.ts, the patch is pinned to the agents-js release it
// was checked against (ipc/proc_pool.js's launchJob and run loop), and any other version fails loudly.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { PinnedReleaseError, installedAgentsVersion } from './session/agents-release.ts';
import { standbyRoomOf } from './call/standby.ts';

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
  job: { id: string; metadata?: string };
}
type LaunchJob = (this: PoolInternals, info: JobInfo) => Promise<void>;

export interface ForkDeferral {
  /** The call of this job has played its first audio, or the job stands by: its replacement may start once no call is starting. */
  release(jobId: string): void;
  /** A call starts in this job (a standby agent was given one): forks wait out its first `quietMs`. */
  callStarting(jobId: string): void;
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

export function installForkAfterGreeting(ProcPool: { prototype: { launchJob: LaunchJob } }, opts: { maxDeferMs: number; quietMs?: number }): ForkDeferral {
  const original = ProcPool.prototype.launchJob;
  const quietMs = opts.quietMs ?? 3000;
  /** Held forks; `ready`: its own job no longer needs the cores (first audio played, or standing by). */
  const waiting = new Map<string, { unlock: () => void; timer: NodeJS.Timeout; ready: boolean }>();
  /** Calls in their first quietMs, by job. */
  const starting = new Map<string, NodeJS.Timeout>();

  const start = (jobId: string) => {
    const w = waiting.get(jobId);
    if (!w) return;
    waiting.delete(jobId);
    clearTimeout(w.timer);
    w.unlock();
  };
  const releaseAll = () => {
    for (const id of [...waiting.keys()]) start(id);
  };
  /** The forks whose jobs are done with their start, once no call is starting. */
  const flush = () => {
    if (starting.size) return;
    for (const [id, w] of [...waiting]) if (w.ready) start(id);
  };
  const release = (jobId: string) => {
    const w = waiting.get(jobId);
    if (!w) return;
    w.ready = true;
    flush();
  };
  const callStarting = (jobId: string) => {
    if (opts.maxDeferMs <= 0 || quietMs <= 0) return;
    clearTimeout(starting.get(jobId));
    starting.set(
      jobId,
      setTimeout(() => {
        starting.delete(jobId);
        flush();
      }, quietMs).unref(),
    );
  };

  ProcPool.prototype.launchJob = async function launchJob(this: PoolInternals, info: JobInfo): Promise<void> {
    // Without prewarmed processes agents-js starts one per call; nothing to defer.
    if (!this.procMutex || opts.maxDeferMs <= 0) return original.call(this, info);
    // This call needs a process: if none is ready, the forks held back must start now.
    if (this.warmedProcQueue.items.length === 0) releaseAll();
    const entry = await this.warmedProcQueue.get();
    const jobId = info.job.id;
    // A dispatched job is a call starting; a standby agent's call starts when it is given one (callStarting).
    if (!standbyRoomOf(info.job.metadata)) callStarting(jobId);
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
      waiting.set(jobId, { unlock, timer: setTimeout(() => start(jobId), opts.maxDeferMs).unref(), ready: false });
    }
    await entry.proc.launchJob(info);
  };

  return {
    release,
    callStarting,
    get waiting() {
      return waiting.size;
    },
    uninstall() {
      for (const t of starting.values()) clearTimeout(t);
      starting.clear();
      releaseAll();
      ProcPool.prototype.launchJob = original;
    },
  };
}
