// The faults of issue 49 (section 2), each as a Fault for runFault (fault-run.ts): what strikes, and how the
// cluster is brought back to full strength afterwards. Order: the ones a deployment meets most first.
import { nowMs } from '../rtc-client.ts';
import type { Fault, FaultEnv } from './fault-run.ts';
import type { Member } from './member.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The calls a worker holds now (its own `voice_active_calls` gauge). */
export async function activeCalls(worker: Member): Promise<number> {
  try {
    const page = await (await fetch(`http://127.0.0.1:${worker.port('metrics')}/metrics`)).text();
    const m = /^voice_active_calls(?:\{[^}]*\})? ([0-9.eE+-]+)$/m.exec(page);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** The running worker holding the most calls (the first one when none reports any). */
async function busiestWorker(env: FaultEnv): Promise<{ worker: Member; calls: number; spread: Record<string, number> }> {
  const running = env.cluster.workers.filter((w) => w.running);
  const counts = await Promise.all(running.map(activeCalls));
  let best = 0;
  counts.forEach((n, i) => (n > counts[best]! ? (best = i) : null));
  return { worker: running[best]!, calls: counts[best]!, spread: Object.fromEntries(running.map((w, i) => [w.name, counts[i]!])) };
}

export const workerKill: Fault = {
  name: 'worker_kill9',
  holdS: 90,
  observeS: 30,
  async inject(env) {
    const { worker, calls, spread } = await busiestWorker(env);
    await worker.kill9();
    return { member: worker.name, calls_on_it: calls, calls_per_worker: spread };
  },
  async restore(env) {
    await Promise.all(env.cluster.workers.map((w) => w.start()));
  },
};

/** SIGTERM: the worker takes no new call, finishes the ones it holds, and exits once the last has ended. */
export function workerDrain(): Fault {
  let target: { worker: Member; at: number; info: Record<string, unknown> } | null = null;
  return {
    name: 'worker_sigterm_drain',
    holdS: 25,
    observeS: 20,
    async inject(env) {
      const { worker, calls, spread } = await busiestWorker(env);
      worker.term();
      const info: Record<string, unknown> = { member: worker.name, calls_on_it: calls, calls_per_worker: spread };
      target = { worker, at: nowMs(), info };
      return info;
    },
    async restore(env) {
      if (target) {
        // Its callers have hung up by now: it must exit on its own, well before its DRAIN_TIMEOUT_MS.
        const code = await Promise.race([target.worker.exited(), sleep(150_000).then(() => 'still running' as const)]);
        target.info.exit_code = code;
        target.info.exited_after_s = Math.round((nowMs() - target.at) / 100) / 10;
      }
      await Promise.all(env.cluster.workers.map((w) => w.start()));
    },
  };
}

export const controlPlaneKill: Fault = {
  name: 'control_plane_kill9',
  holdS: 20,
  observeS: 20,
  async inject(env) {
    const cp = env.cluster.controlPlanes[0]!;
    await cp.kill9();
    return { member: cp.name };
  },
  async restore(env) {
    await Promise.all(env.cluster.controlPlanes.map((m) => m.start()));
  },
};

/**
 * A restart: the member stops, and starts again `downMs` later. Calls in flight meet the outage itself: the restart
 * runs in the background and restore() waits for it.
 */
function restart(name: string, downMs: number, stop: (env: FaultEnv) => Promise<void>, start: (env: FaultEnv) => Promise<void>): Fault {
  let done: Promise<void> = Promise.resolve();
  return {
    name,
    holdS: 30,
    observeS: 30,
    async inject(env) {
      const t = nowMs();
      await stop(env);
      const info: Record<string, unknown> = { stopped_in_s: Math.round((nowMs() - t) / 100) / 10 };
      done = (async () => {
        await sleep(downMs);
        await start(env);
        info.down_s = Math.round((nowMs() - t) / 100) / 10;
      })();
      return info;
    },
    async restore() {
      await done;
    },
  };
}

/** PostgreSQL stops (a clean, fast shutdown, as a restart or a failover does) and starts again 5 s later. */
export const postgresRestart = (downMs = 5000) =>
  restart(
    'postgres_restart',
    downMs,
    (env) => env.cluster.postgres.stop(),
    (env) => env.cluster.postgres.start(),
  );

/**
 * Redis stops and starts again 3 s later, empty (no persistence, as the stack runs it). LiveKit keeps its nodes, rooms
 * and agent workers in Redis; restore() restarts the LiveKit nodes one after the other, as the runbook says
 * (docs/operations.md, "What happens when …").
 */
export function redisRestart(downMs = 3000): Fault {
  const f = restart(
    'redis_restart',
    downMs,
    (env) => env.cluster.redis.stop(),
    (env) => env.cluster.redis.start(),
  );
  return {
    ...f,
    async restore(env) {
      await f.restore(env);
      for (const node of env.cluster.livekit) {
        await node.stop();
        await node.start();
      }
    },
  };
}

/** The SIP bridge stops (SIGTERM) and starts again 2 s later. */
export const sipRestart = (downMs = 2000) =>
  restart(
    'sip_bridge_restart',
    downMs,
    (env) => env.cluster.sip!.stop(),
    (env) => env.cluster.sip!.start(),
  );

export const livekitKill: Fault = {
  name: 'livekit_node_kill9',
  holdS: 90,
  observeS: 45,
  async inject(env) {
    const node = env.cluster.livekit[0]!;
    await node.kill9();
    return { member: node.name };
  },
  async restore(env) {
    await Promise.all(env.cluster.livekit.map((m) => m.start()));
  },
};
