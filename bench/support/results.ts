// Every benchmark's results file records what produced it: the commit (and whether the tree had changes),
// the date, the machine (cores, CPU model, memory, load average at the start and at the end), Node's version
// and the exact command. Files go to bench/results/<name>.json, which the repository keeps.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const startedAt = new Date();
const loadAtStart = os.loadavg();

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

/** The command as typed: `npm run <script>` when npm started it, with the arguments after `--`. */
export function benchCommand(): string {
  const env = process.env;
  const args = process.argv.slice(2).join(' ');
  const vars = Object.keys(env)
    .filter((k) => k.startsWith('BENCH_'))
    .sort()
    .map((k) => `${k}=${env[k] ?? ''}`)
    .join(' ');
  const prefix = vars ? `${vars} ` : '';
  if (env.npm_lifecycle_event) return `${prefix}npm run ${env.npm_lifecycle_event}${args ? ` -- ${args}` : ''}  (runs: ${env.npm_lifecycle_script ?? ''})`;
  return `${prefix}node ${process.execArgv.join(' ')} ${path.relative(REPO_ROOT, process.argv[1] ?? '')} ${args}`.replace(/\s+/g, ' ').trim();
}

export function runInfo() {
  const cpus = os.cpus();
  return {
    commit: git(['rev-parse', 'HEAD']),
    tree_dirty: git(['status', '--porcelain', '--untracked-files=no']) !== '',
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    command: benchCommand(),
    node: process.version,
    machine: {
      cores: cpus.length,
      cpu: cpus[0]?.model ?? 'unknown',
      memory_gib: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      load_average_at_start: loadAtStart.map((l) => Math.round(l * 100) / 100),
      load_average_at_end: os.loadavg().map((l) => Math.round(l * 100) / 100),
    },
  };
}

/** Writes bench/results/<name>.json with the run's provenance first, then the benchmark's own data. */
export function writeResults(name: string, data: Record<string, unknown>): string {
  const dir = path.join(REPO_ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ benchmark: name, ...runInfo(), ...data }, null, 2) + '\n');
  process.stderr.write(`results: ${path.relative(REPO_ROOT, file)}\n`);
  return file;
}
