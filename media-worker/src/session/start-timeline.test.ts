import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { StartTimeline, type StartTimelineSummary } from './start-timeline.ts';

/** Holds the loop for `ms` of wall time, as synchronous work at a call's start would. */
function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

const tick = () => new Promise((r) => setTimeout(r, 30));

describe('StartTimeline', () => {
  it('records a stall of the event loop over the threshold, with when it began', async () => {
    const t = new StartTimeline({ thresholdMs: 50, windowMs: 60_000 });
    await tick();
    block(200);
    await tick();
    t.finish();
    const s = await t.closed;
    // The stall is at least as long as the block (a loaded machine can only make it longer).
    expect(s.loop_blocks.some((b) => b.ms >= 150)).toBe(true);
    expect(s.loop_blocks.every((b) => b.at_ms >= 0)).toBe(true);
    // The loop itself was running: the stall is the process's own work.
    const stall = s.loop_blocks.find((b) => b.ms >= 150)!;
    expect(stall.busy_ms).toBeGreaterThanOrEqual(150);
    if (process.platform === 'linux') {
      // Never asleep through it: on a core or waiting for one the whole time.
      expect(stall.cpu_ms! + stall.runq_ms!).toBeGreaterThanOrEqual(150);
      expect(stall.cpu_ms).toBeGreaterThan(0);
    }
  });

  it.runIf(process.platform === 'linux')('tells the loop held off its core by other work (a busy core shared) from its own work', async () => {
    // The timeline's process and a spinning one pinned to the same core: the loop's own block of 400 ms takes
    // longer, and the kernel says how much of it the loop waited for the core.
    const script = `
      import { StartTimeline } from ${JSON.stringify(new URL('./start-timeline.ts', import.meta.url).href)};
      const t = new StartTimeline({ thresholdMs: 50, windowMs: 60000 });
      setTimeout(() => {
        const end = performance.now() + 400;
        while (performance.now() < end) {}
        setTimeout(async () => { t.finish(); process.stdout.write(JSON.stringify(await t.closed) + '\\n'); }, 60);
      }, 100);
    `;
    const hog = spawn('taskset', ['-c', '0', process.execPath, '-e', 'for(;;){}'], { stdio: 'ignore' });
    try {
      await sleep(200);
      const child = spawn('taskset', ['-c', '0', process.execPath, '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      await once(child, 'exit');
      const s = JSON.parse(out.slice(out.indexOf('{'))) as StartTimelineSummary;
      const stall = s.loop_blocks.find((b) => b.ms >= 300)!;
      expect(stall).toBeDefined();
      // The loop's utilization calls all of it busy; the scheduler's figures say the core was shared (about half).
      expect(stall.busy_ms).toBeGreaterThanOrEqual(300);
      expect(stall.runq_ms).toBeGreaterThan(stall.ms / 4);
      expect(stall.cpu_ms! + stall.runq_ms!).toBeGreaterThanOrEqual(stall.ms * 0.8);
    } finally {
      hog.kill('SIGKILL');
    }
  });

  it('tells a process that waited for the CPU (stopped) from a busy loop: the stall is idle', async () => {
    // A process held off the CPU, as on a machine with more work than cores: SIGSTOP, then SIGCONT.
    const script = `
      import { StartTimeline } from ${JSON.stringify(new URL('./start-timeline.ts', import.meta.url).href)};
      const t = new StartTimeline({ thresholdMs: 50, windowMs: 60000 });
      setTimeout(() => process.stdout.write('ready\\n'), 100);
      process.stdin.once('data', async () => { t.finish(); process.stdout.write(JSON.stringify(await t.closed) + '\\n'); });
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    for (let i = 0; i < 600 && !out.includes('ready'); i++) await sleep(50);
    child.kill('SIGSTOP');
    await sleep(400);
    child.kill('SIGCONT');
    // A few ticks after the stop, then the summary.
    await sleep(200);
    child.stdin.write('done');
    for (let i = 0; i < 600 && !out.includes('"steps"'); i++) await sleep(50);
    child.stdin.end();
    await once(child, 'exit');
    const s = JSON.parse(out.slice(out.indexOf('{'))) as StartTimelineSummary;
    const stall = s.loop_blocks.find((b) => b.ms >= 300);
    expect(stall).toBeDefined();
    // Stopped, the loop was waiting, not working: at most a sliver of the stall is busy.
    expect(stall!.busy_ms).toBeLessThan(stall!.ms / 2);
    // Nor was it on a core, or waiting for one: a stopped thread is neither.
    if (process.platform === 'linux') expect(stall!.cpu_ms! + stall!.runq_ms!).toBeLessThan(stall!.ms / 2);
  });

  it('keeps the first mark of each step, in ms from its start', async () => {
    const t = new StartTimeline({ windowMs: 60_000 });
    t.mark('connected');
    await tick();
    t.mark('first_audio');
    t.mark('connected');
    t.finish();
    const s = await t.closed;
    expect(Object.keys(s.steps)).toEqual(['connected', 'first_audio']);
    expect(s.steps.first_audio).toBeGreaterThanOrEqual(s.steps.connected!);
    expect(s.started_at_ms).toBeGreaterThan(1.7e12);
  });

  it('closes by itself when the window has passed', async () => {
    const t = new StartTimeline({ windowMs: 40 });
    const s = await t.closed;
    expect(s.window_ms).toBe(40);
    // Finishing after the window changes nothing.
    t.finish();
  });
});
