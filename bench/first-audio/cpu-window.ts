// The machine's CPU over a call's first seconds, by process of the stack and by thread of its job process
// (bench/first-audio.ts), and the pinning of the stack away from the worker's core.
import { spawnSync } from 'node:child_process';
import { nowMs } from '../../test/support/rtc-client.ts';
import { type Classifier, type Snapshot, cpuBetween, snapshot, threadCpuBetween } from './cpu-census.ts';
import { STACK_CPUS, type Worker } from './workers.ts';
import type { CallResult } from './analysis.ts';

/** The job's window (start-timeline.ts), over which the machine's CPU is also counted by process (cpu-census.ts). */
const WINDOW_MS = 3000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The stack's processes by kind, for the census of a call's first seconds behind the worker `workerPid`. */
export function classifier(workerPid: number | undefined): Classifier {
  return (pid, ppid, cmd) => {
    if (pid === process.pid) return 'bench (its clients)';
    if (pid === workerPid) return 'worker';
    // agents-js forks the job processes from the worker.
    if (ppid === workerPid) return `job:${pid}`;
    if (/espeak|pocketsphinx/.test(cmd)) return 'speech engines';
    if (cmd.includes('livekit-sip')) return 'sip bridge';
    // The setup installs LiveKit's server as `server` (scripts/stack/supervisor.ts).
    if (/(?:^|\/)(?:livekit-)?server(?:\s|$)/.test(cmd.split(' ')[0] ?? '')) return 'livekit server';
    if (cmd.includes('redis-server')) return 'redis';
    if (cmd.startsWith('postgres') || cmd.includes('/postgres ')) return 'postgres';
    if (cmd.includes('control-plane')) return 'control plane';
    if (/\bsipp\b/.test(cmd)) return 'sipp';
    return cmd ? 'other processes' : null;
  };
}

/**
 * BENCH_PIN: every process of the stack (and this one, whose clients and SIPp inherit it) onto the cores the
 * worker does not use, all their threads: a worker with a core of its own, as on a node of its own.
 */
export function pinStack(): void {
  const stack = snapshot(classifier(undefined));
  for (const [pid, [kind]] of stack?.procs ?? []) {
    if (kind === 'other processes' && pid !== process.pid) continue;
    spawnSync('taskset', ['-a', '-p', '-c', STACK_CPUS, String(pid)], { stdio: 'ignore' });
  }
}

/** Job processes are also read thread by thread (which of a job's own threads took the cores from its loop). */
export const jobThreads = (kind: string) => kind.startsWith('job:');

/** The census at a call's start (taken just before it). */
export const censusAt = (w: Worker) => snapshot(classifier(w.proc.pid), jobThreads);

/**
 * From the census taken at the call's start, the CPU by process up to its window's end, and each job process's by
 * thread (waits for that end).
 */
export async function windowCpu(w: Worker, t0: number, before: Snapshot | null): Promise<Pick<CallResult, 'cpu' | 'job_threads'>> {
  await sleep(Math.max(0, WINDOW_MS - (nowMs() - t0)));
  const after = before && censusAt(w);
  if (!before || !after) return {};
  const jobs = [...after.procs].filter(([, [kind]]) => jobThreads(kind));
  return { cpu: cpuBetween(before, after), job_threads: Object.fromEntries(jobs.map(([pid, [kind]]) => [kind, threadCpuBetween(before, after, pid)])) };
}
