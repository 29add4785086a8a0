// Worker load reported to LiveKit: the larger of machine CPU use and the share of call slots in use, so a
// worker is full when either runs out (LiveKit stops dispatching at loadThreshold).
import os from 'node:os';

export function combineLoad(cpu: number, activeJobs: number, maxConcurrentCalls: number): number {
  const slots = maxConcurrentCalls > 0 ? activeJobs / maxConcurrentCalls : 0;
  const c = Number.isFinite(cpu) ? cpu : 0;
  return Math.min(1, Math.max(0, c, slots));
}

/** Machine CPU use (0-1) since the previous call, from the kernel's per-core counters. */
export class CpuSampler {
  #prev = CpuSampler.#read();
  static #read() {
    let idle = 0;
    let total = 0;
    for (const c of os.cpus()) {
      const t = c.times;
      idle += t.idle;
      total += t.user + t.nice + t.sys + t.idle + t.irq;
    }
    return { idle, total };
  }
  sample(): number {
    const now = CpuSampler.#read();
    const dTotal = now.total - this.#prev.total;
    const dIdle = now.idle - this.#prev.idle;
    this.#prev = now;
    return dTotal > 0 ? Math.min(1, Math.max(0, 1 - dIdle / dTotal)) : 0;
  }
}
