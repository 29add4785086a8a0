// When a test fails while stacks run, prints what their services said, so a failure on CI (where the logs'
// folders are removed with the stacks) can be read without running it again: each service's warnings and
// errors, then its last lines. Bounded, so a chatty service cannot bury the failure.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { liveLogDirs } from '../../scripts/stack/supervisor.ts';

const WARNINGS = 40;
const TAIL = 25;
const LINE_CHARS = 600;

/** pino's warn is 40; other services' text logs are matched by word. */
function isWarning(line: string): boolean {
  const level = /"level":\s*(\d+)/.exec(line);
  if (level) return Number(level[1]) >= 40;
  return /\b(WARN|WARNING|ERROR|FATAL|panic)\b/i.test(line);
}

const clip = (line: string) => (line.length > LINE_CHARS ? `${line.slice(0, LINE_CHARS)}…` : line);

export function serviceLogReport(logDir: string): string {
  if (!existsSync(logDir)) return '';
  const out: string[] = [];
  for (const file of readdirSync(logDir).filter((f) => f.endsWith('.log')).sort()) {
    const lines = readFileSync(path.join(logDir, file), 'utf8').split('\n').filter(Boolean);
    const warnings = lines.filter(isWarning).slice(-WARNINGS);
    out.push(`--- ${file}: ${lines.length} lines, ${warnings.length} of the last warnings and errors`);
    out.push(...warnings.map(clip));
    out.push(`--- ${file}: last ${Math.min(TAIL, lines.length)} lines`);
    out.push(...lines.slice(-TAIL).map(clip));
  }
  return out.join('\n');
}

afterEach((ctx) => {
  if (ctx.task.result?.state !== 'fail' || liveLogDirs.size === 0) return;
  for (const dir of liveLogDirs) process.stderr.write(`\n=== services of the failed test "${ctx.task.name}" (${dir})\n${serviceLogReport(dir)}\n`);
});
