// bench:firstaudio's census of a job process by thread (bench/first-audio/cpu-census.ts), on this test's own
// process: CPU spent on the event loop is counted to the loop, and CPU spent on a named helper thread to that
// thread's group.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { snapshot, threadCpuBetween } from '../bench/first-audio/cpu-census.ts';

/** Keeps the calling thread on a core until it has used `ms` of its own CPU time (not wall time). */
function spin(ms: number): void {
  const start = process.threadCpuUsage();
  for (;;) {
    const u = process.threadCpuUsage(start);
    if (u.user + u.system >= ms * 1000) return;
  }
}

describe.runIf(process.platform === 'linux')('threadCpuBetween', () => {
  const own = (pid: number) => (pid === process.pid ? 'job:self' : null);
  const byThread = (kind: string) => kind.startsWith('job:');

  it("counts the event loop's CPU to the loop", () => {
    const before = snapshot(own, byThread)!;
    spin(300);
    const after = snapshot(own, byThread)!;
    // Ticks are 10 ms: 300 ms of the loop's own CPU reads as 290 at the least.
    expect(threadCpuBetween(before, after, process.pid)['main (event loop)']).toBeGreaterThanOrEqual(290);
  });

  it("counts a helper thread's CPU to its group, not to the loop", async () => {
    const before = snapshot(own, byThread)!;
    // The helper spins, says so, and stays alive (blocked) until the census has read it.
    const helper = new Worker(
      `(${spin.toString()})(300);
      require('node:worker_threads').parentPort.postMessage('spun');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);`,
      { eval: true, name: 'census-probe-7' },
    );
    try {
      await new Promise((resolve, reject) => {
        helper.once('message', resolve);
        helper.once('error', reject);
      });
      const threads = threadCpuBetween(before, snapshot(own, byThread)!, process.pid);
      // The pool's number is dropped from the group's name.
      expect(threads['census-probe']).toBeGreaterThanOrEqual(290);
      expect(threads['main (event loop)'] ?? 0).toBeLessThan(threads['census-probe']!);
    } finally {
      await helper.terminate();
    }
  });

  it('reads no threads of a process it was not asked to', () => {
    const before = snapshot(own)!;
    const after = snapshot(own)!;
    expect(before.threads.size).toBe(0);
    expect(threadCpuBetween(before, after, process.pid)).toEqual({});
  });
});
