// The benchmark's workers (the media worker or the floor's bare job, first-audio/floor-worker.ts): started as
// the supervisor starts the worker, stopped, and read for the calls they hold.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, type RunningStack } from '../../scripts/stack/supervisor.ts';
import type { PortPicker } from '../../scripts/stack/ports.ts';

/** BENCH_PIN=1: the worker and its job processes on the last core, the stack and the clients on the others. */
export const PIN = process.env.BENCH_PIN === '1' && os.cpus().length >= 2;
export const WORKER_CPU = String(os.cpus().length - 1);
export const STACK_CPUS = os.cpus().length > 2 ? `0-${os.cpus().length - 2}` : '0';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type WorkerKind = 'agent' | 'floor';

export interface Worker {
  kind: WorkerKind;
  proc: ChildProcess;
  log: string;
  metricsPort: number;
}

export async function httpOk(url: string): Promise<boolean> {
  try {
    return (await fetch(url)).ok;
  } catch {
    return false;
  }
}

/**
 * Starts the media worker or the floor worker against the stack, as the supervisor starts the worker. `script` (from
 * the repository's root) runs another floor worker (bench:realtime's, bench/realtime/floor-worker.ts).
 */
export async function startWorker(stack: RunningStack, kind: WorkerKind, env: Record<string, string>, pick: PortPicker, n: number, script?: string): Promise<Worker> {
  const health = await pick.tcp();
  const metricsPort = await pick.tcp();
  const log = path.join(stack.logDir, `${kind}-worker-${n}.log`);
  const main = script ?? (kind === 'agent' ? 'media-worker/src/main.ts' : 'bench/first-audio/floor-worker.ts');
  // BENCH_WORKER_NODE_ARGS: Node flags for the worker, which its job processes inherit (--cpu-prof ...).
  const nodeArgs = (process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const argv = [...nodeArgs, path.join(REPO_ROOT, main), 'start'];
  // Pinned, the worker's job processes and their speech engines inherit its core.
  const proc = spawn(PIN ? 'taskset' : process.execPath, PIN ? ['-c', WORKER_CPU, process.execPath, ...argv] : argv, {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      LIVEKIT_URL: stack.livekitUrl,
      LIVEKIT_API_KEY: stack.apiKey,
      LIVEKIT_API_SECRET: stack.apiSecret,
      WORKER_TOKEN: stack.workerToken,
      CONTROL_PLANE_URL: stack.controlPlaneUrl!,
      LOG_LEVEL: 'info',
      // Pinned, agents-js would size its pool from the one core it may use (one spare, so every call forks its
      // replacement at once); the pool stays as the machine's cores make it.
      ...(PIN && !process.env.JOB_IDLE_PROCESSES ? { JOB_IDLE_PROCESSES: String(Math.min(os.cpus().length, 4)) } : {}),
      DRAIN_TIMEOUT_MS: '5000',
      LOAD_INCLUDES_CPU: 'false',
      // The LLM stand-in is on loopback: a private model host the operator allows (shared/model-egress.ts).
      LLM_PRIVATE_HOSTS: '127.0.0.1',
      WORKER_HEALTH_PORT: String(health),
      WORKER_METRICS_PORT: String(metricsPort),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = createWriteStream(log);
  proc.stdout!.pipe(out);
  proc.stderr!.pipe(out);
  const end = Date.now() + 60_000;
  while (!(await httpOk(`http://127.0.0.1:${health}/`))) {
    if (proc.exitCode !== null || Date.now() > end) throw new Error(`the ${kind} worker did not start (log: ${log})`);
    await sleep(100);
  }
  return { kind, proc, log, metricsPort };
}

export async function stopWorker(w: Worker): Promise<void> {
  if (w.proc.exitCode !== null) return;
  w.proc.kill('SIGTERM');
  const killer = setTimeout(() => w.proc.kill('SIGKILL'), 20_000);
  await once(w.proc, 'exit');
  clearTimeout(killer);
}

/**
 * ms from `from` until the call's job process exited: its own `job process exit` line in the worker's log (the
 * agent's worker.ts and the floor's agent log it as the process exits), polled every 20 ms, up to 30 s; null
 * when it never came. Not the voice_active_calls gauge: a figure read from it would be only as good as the gauge.
 */
export async function freedAfter(w: Worker, from: number, callId: string): Promise<number | null> {
  const end = Date.now() + 30_000;
  for (;;) {
    const exit = readFileSync(w.log, 'utf8')
      .split('\n')
      .find((l) => l.includes('"job process exit"') && l.includes(callId));
    if (exit) return Date.parse((JSON.parse(exit) as { time: string }).time) - from;
    if (Date.now() > end) return null;
    await sleep(20);
  }
}
