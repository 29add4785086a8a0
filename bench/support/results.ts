// Every benchmark's results file records what produced it: the commit and whether the tree had changes, both
// taken when the run STARTS (the code that ran is the code of the start; a commit made while a run goes on is not
// it), the date, the machine (cores, CPU model, memory, load average at the start and at the end), Node's version
// and the exact command. A run whose tree changed while it ran (a new commit, edits to tracked files) says so:
// `tree_changed_during_run`, with the commit and state at its end. Files go to bench/results/<name>.json, which
// the repository keeps.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

function git(args: string[], cwd = REPO_ROOT): string {
  try {
    return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 256 * 2 ** 20 }).trim();
  } catch {
    return 'unknown';
  }
}

export interface TreeState {
  commit: string;
  dirty: boolean;
  /** HEAD and the content of every change to tracked files: equal fingerprints, the same code. */
  fingerprint: string;
}

/** The checkout as it is now: HEAD, whether tracked files differ from it, and a fingerprint of both. */
export function treeState(cwd = REPO_ROOT): TreeState {
  const commit = git(['rev-parse', 'HEAD'], cwd);
  const status = git(['status', '--porcelain', '--untracked-files=no'], cwd);
  const diff = status === '' ? '' : git(['diff', 'HEAD', '--no-color', '--binary'], cwd);
  return { commit, dirty: status !== '', fingerprint: createHash('sha256').update(`${commit}\n${diff}`).digest('hex') };
}

// Taken when the benchmark's process loads this module, before it measures anything.
const startedAt = new Date();
const loadAtStart = os.loadavg();
const atStart = treeState();

/** What a results file says about the code that ran: the start's commit and state, and any change since. */
export function provenance(start: TreeState, end: TreeState) {
  const changed = start.fingerprint !== end.fingerprint;
  return {
    commit: start.commit,
    tree_dirty: start.dirty,
    tree_changed_during_run: changed,
    ...(changed ? { commit_at_end: end.commit, tree_dirty_at_end: end.dirty } : {}),
  };
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
    ...provenance(atStart, treeState()),
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
