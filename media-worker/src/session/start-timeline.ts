// The first seconds of a call in its job process: when each start-up step ended, and every stall of the event
// loop over a threshold, so a slow greeting can be traced to its step (the connect, the config, the session's
// start, the first audio) or to a blocked loop. One log line per call once the window closes; the bench
// (bench:firstaudio) and an SRE read the same line.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

export interface LoopBlock {
  /** ms from the timeline's start to the start of the stall. */
  at_ms: number;
  ms: number;
  /**
   * ms in which the event loop was active (its utilization: not waiting in the poll) over the stall's interval,
   * from the tick before it (the stall plus one tick of 20 ms). A stall that is mostly idle was the process held
   * off a core while it waited; a busy one was work in this process (which a busy machine also stretches).
   */
  busy_ms: number;
  /**
   * Of the same interval, ms the loop's thread ran on a core (`cpu_ms`) and ms it was ready to run but waited for
   * one (`runq_ms`), from the kernel's scheduler statistics (Linux; absent elsewhere). The utilization above
   * counts a loop held off a core in the middle of its work as active; these tell the job's own work from the
   * machine's other work taking the cores.
   */
  cpu_ms?: number;
  runq_ms?: number;
}

/** The calling thread's time on a core and waiting in a run queue (ns), or null where the kernel does not say. */
export function threadSchedNs(): { runNs: number; waitNs: number } | null {
  try {
    const [run, wait] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
    const runNs = Number(run);
    const waitNs = Number(wait);
    return Number.isFinite(runNs) && Number.isFinite(waitNs) ? { runNs, waitNs } : null;
  } catch {
    return null;
  }
}

export interface StartTimelineSummary {
  /** Wall-clock ms (epoch, sub-ms) of the timeline's start: comparable with other processes' clocks on the host. */
  started_at_ms: number;
  /** ms from the job's start to the end of each step. */
  steps: Record<string, number>;
  loop_blocks: LoopBlock[];
  window_ms: number;
}

/** The loop is checked this often; a tick that comes this much later than due is a stall. */
const TICK_MS = 20;

export class StartTimeline {
  readonly #t0 = performance.now();
  readonly #steps: Record<string, number> = {};
  readonly #blocks: LoopBlock[] = [];
  readonly #thresholdMs: number;
  readonly #windowMs: number;
  #timer: NodeJS.Timeout | null = null;
  #closed: Promise<StartTimelineSummary>;
  #resolve!: (s: StartTimelineSummary) => void;

  constructor(opts: { thresholdMs?: number; windowMs?: number } = {}) {
    this.#thresholdMs = opts.thresholdMs ?? 50;
    this.#windowMs = opts.windowMs ?? 3000;
    this.#closed = new Promise((resolve) => {
      this.#resolve = resolve;
      let last = performance.now();
      let lastUse = performance.eventLoopUtilization();
      // The interval runs on the loop's thread, so the thread's own statistics are the loop's.
      let lastSched = threadSchedNs();
      this.#timer = setInterval(() => {
        const now = performance.now();
        const use = performance.eventLoopUtilization();
        const sched = lastSched && threadSchedNs();
        const late = now - last - TICK_MS;
        if (late >= this.#thresholdMs) {
          const busy = performance.eventLoopUtilization(use, lastUse).active;
          const block: LoopBlock = { at_ms: Math.round(last - this.#t0), ms: Math.round(late), busy_ms: Math.round(busy) };
          if (sched && lastSched) {
            block.cpu_ms = Math.round((sched.runNs - lastSched.runNs) / 1e6);
            block.runq_ms = Math.round((sched.waitNs - lastSched.waitNs) / 1e6);
          }
          this.#blocks.push(block);
        }
        last = now;
        lastUse = use;
        lastSched = sched;
        if (now - this.#t0 >= this.#windowMs) this.finish();
      }, TICK_MS);
      // A job that ends inside the window must not be kept alive by the check.
      this.#timer.unref();
    });
  }

  /** Marks the end of a step (the first mark of a name wins). */
  mark(step: string): void {
    this.#steps[step] ??= Math.round(performance.now() - this.#t0);
  }

  /** ms since the timeline's start. */
  elapsedMs(): number {
    return performance.now() - this.#t0;
  }

  summary(): StartTimelineSummary {
    return { started_at_ms: Math.round((performance.timeOrigin + this.#t0) * 10) / 10, steps: { ...this.#steps }, loop_blocks: [...this.#blocks], window_ms: this.#windowMs };
  }

  /** Resolves with the summary when the window has passed, or the call ended first (finish). */
  get closed(): Promise<StartTimelineSummary> {
    return this.#closed;
  }

  /** Closes the window now (the call ended inside it); `closed` resolves with what was seen. */
  finish(): void {
    if (!this.#timer) return;
    clearInterval(this.#timer);
    this.#timer = null;
    this.#resolve(this.summary());
  }
}
