// A job the worker accepted just before its SIGTERM must still run. agents-js 1.9.0's AgentServer.drain closes
// every job process that runs no job at once, and forks no more; a job accepted a moment earlier may still be
// waiting for its assignment or for a process (its prewarmed one taken by another call, the next still starting),
// so it never starts, LiveKit offers it to nobody else, and its caller waits out the dispatch timeout
// (docs/operations.md, "What happens when …", the drain).
//
// So the drain first waits, bounded, for the jobs already accepted to be launched, and meanwhile the worker's
// requestFunc rejects every new offer (LiveKit gives it to another worker): only then does agents-js's own drain
// close the idle processes and wait for the calls in progress.
//
// AgentServer.drain is public, but what the patch works around (idle processes closed at once) is 1.9.0's
// behaviour: like the other patches it is pinned to that release and fails loudly on any other.
import type { AgentServer } from '@livekit/agents';
import { PinnedReleaseError, installedAgentsVersion } from './session/agents-release.ts';

/** The @livekit/agents release whose drain this patch was checked against. */
export const DRAIN_AFTER_LAUNCHES_AGENTS_VERSION = '1.9.0';

export class DrainAfterLaunchesVersionError extends PinnedReleaseError {
  constructor(installed: string) {
    const check = 'AgentServer.drain still closes the job processes that run no job before the jobs already accepted are launched';
    super('drain-after-launches.ts', DRAIN_AFTER_LAUNCHES_AGENTS_VERSION, installed, check, 'DRAIN_AFTER_LAUNCHES_AGENTS_VERSION');
  }
}

export function assertDrainAfterLaunchesTarget(version = installedAgentsVersion()): void {
  if (version !== DRAIN_AFTER_LAUNCHES_AGENTS_VERSION) throw new DrainAfterLaunchesVersionError(version);
}

/**
 * The jobs this worker accepted whose launch has not finished, and whether it drains. agents-js's
 * `JobRequest.accept()` only sends the answer; the job's launch (its assignment, then a process) follows, and ends
 * in ProcPool.launchJob, which the tracking wraps (installLaunchTracking).
 */
export class AcceptedJobs {
  readonly #pending = new Map<string, { done: Promise<void>; settle: () => void; timer: NodeJS.Timeout }>();
  readonly #forgetAfterMs: number;
  #draining = false;

  /** `forgetAfterMs`: a job whose launch never comes (its assignment went elsewhere) is forgotten after this. */
  constructor(opts: { forgetAfterMs?: number } = {}) {
    this.#forgetAfterMs = opts.forgetAfterMs ?? 120_000;
  }

  /** Once true, the worker takes no new job (its requestFunc rejects every offer). */
  get draining(): boolean {
    return this.#draining;
  }

  get pending(): number {
    return this.#pending.size;
  }

  /** Marks the drain's start: no new job from now on. */
  startDrain(): void {
    this.#draining = true;
  }

  /** The job was accepted: its launch is awaited by a drain until `launchSettled(jobId)`. */
  accepted(jobId: string): void {
    if (this.#pending.has(jobId)) return;
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    const timer = setTimeout(() => this.launchSettled(jobId), this.#forgetAfterMs).unref();
    this.#pending.set(jobId, { done, settle, timer });
  }

  /** The job's launch ended: it runs in its process, or its launch failed. */
  launchSettled(jobId: string): void {
    const p = this.#pending.get(jobId);
    if (!p) return;
    this.#pending.delete(jobId);
    clearTimeout(p.timer);
    p.settle();
  }

  /** Resolves when every launch awaited now has settled, or after `maxWaitMs`; true when they all settled. */
  async launched(maxWaitMs: number): Promise<boolean> {
    if (!this.#pending.size) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), maxWaitMs).unref()));
    try {
      return await Promise.race([Promise.all([...this.#pending.values()].map((p) => p.done)).then(() => true as const), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

interface JobInfo {
  job: { id: string };
}
// Any `this`: the pool's (agents-js's ProcPool, or fork-after-greeting's view of it).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type LaunchJob = (this: any, info: JobInfo) => Promise<void>;

/** Wraps ProcPool.prototype.launchJob (as installed now: fork-after-greeting's) to settle each job's launch. */
export function installLaunchTracking(ProcPool: { prototype: { launchJob: LaunchJob } }, jobs: AcceptedJobs): () => void {
  const previous = ProcPool.prototype.launchJob;
  ProcPool.prototype.launchJob = async function launchJob(this: unknown, info: JobInfo): Promise<void> {
    try {
      await previous.call(this, info);
    } finally {
      jobs.launchSettled(info.job.id);
    }
  };
  return () => {
    ProcPool.prototype.launchJob = previous;
  };
}

type Drain = AgentServer['drain'];

/**
 * Wraps AgentServer.prototype.drain: new offers are refused at once, the accepted ones are launched (at most
 * `maxWaitMs`), then agents-js drains. Returns the uninstall.
 */
export function installDrainAfterLaunches(
  Server: { prototype: { drain: Drain } },
  jobs: AcceptedJobs,
  opts: { maxWaitMs: number; onWait?: (pending: number) => void; onTimeout?: (pending: number) => void },
): () => void {
  const original = Server.prototype.drain;
  Server.prototype.drain = async function drain(this: AgentServer, timeout?: number) {
    jobs.startDrain();
    if (jobs.pending) {
      opts.onWait?.(jobs.pending);
      if (!(await jobs.launched(opts.maxWaitMs))) opts.onTimeout?.(jobs.pending);
    }
    return original.call(this, timeout);
  };
  return () => {
    Server.prototype.drain = original;
  };
}
