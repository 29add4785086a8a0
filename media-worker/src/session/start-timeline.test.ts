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
