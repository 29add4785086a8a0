// Runs one test file N times, each in a fresh `vitest run`, and reports every failing run's failed tests: a
// flaky test shows up here before it fails a CI run. `--load` keeps one core busy for the duration (a busy
// loop in a child process), as the parallel files of a full run do on a two-core machine.
//
//   npm run test:repeat -- FILE [N] [--load] [-t NAME]     (N defaults to 10; -t runs only matching tests)
//
// Exits 1 if any run failed. Each run's output is kept in a log file, named in the report.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const VITEST = path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');

export interface RepeatArgs {
  file: string;
  runs: number;
  load: boolean;
  testName: string | undefined;
}

export function parseArgs(argv: string[]): RepeatArgs {
  const usage = 'usage: npm run test:repeat -- FILE [N] [--load] [-t NAME]';
  let file: string | undefined;
  let runs = 10;
  let load = false;
  let testName: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--load') load = true;
    else if (a === '-t' || a === '--testNamePattern') {
      testName = argv[++i];
      if (testName === undefined) throw new Error(usage);
    } else if (a.startsWith('-')) throw new Error(`unknown option ${a}\n${usage}`);
    else if (file === undefined) file = a;
    else if (/^\d+$/.test(a) && Number(a) > 0) runs = Number(a);
    else throw new Error(`N must be a positive whole number, not ${a}\n${usage}`);
  }
  if (!file) throw new Error(usage);
  return { file, runs, load, testName };
}

interface JsonReport {
  testResults?: { name: string; assertionResults?: { fullName: string; status: string; failureMessages?: string[] }[]; message?: string; status?: string }[];
}

/** The failed tests of a run, from vitest's JSON report (a file that failed to load counts as one failure). */
export function failedTests(report: JsonReport): { name: string; message: string }[] {
  const out: { name: string; message: string }[] = [];
  for (const file of report.testResults ?? []) {
    const failed = (file.assertionResults ?? []).filter((t) => t.status === 'failed');
    for (const t of failed) out.push({ name: t.fullName, message: firstLine(t.failureMessages?.[0] ?? '') });
    if (!failed.length && file.status === 'failed') out.push({ name: `${path.relative(ROOT, file.name)} (the file itself)`, message: firstLine(file.message ?? '') });
  }
  return out;
}

const firstLine = (s: string) => s.split('\n').find((l) => l.trim())?.trim().slice(0, 300) ?? '';

/** A busy loop on one core, until stopped. */
function startLoad(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

/** The vitest run under way, stopped with this process. */
let current: ChildProcess | null = null;

function runOnce(args: RepeatArgs, jsonFile: string, logFile: string): Promise<{ code: number | null; ms: number }> {
  const vitestArgs = [VITEST, 'run', args.file, '--reporter=default', '--reporter=json', `--outputFile.json=${jsonFile}`];
  if (args.testName) vitestArgs.push('-t', args.testName);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    // In its own process group, so that an interrupted run stops vitest's workers (and the stacks they started) too.
    const child = spawn(process.execPath, vitestArgs, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FORCE_COLOR: '0' }, detached: true });
    current = child;
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      current = null;
      writeFileSync(logFile, Buffer.concat(chunks));
      resolve({ code, ms: performance.now() - started });
    });
  });
}

async function main(): Promise<number> {
  let args: RepeatArgs;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  if (!existsSync(path.resolve(ROOT, args.file))) {
    console.error(`no such file: ${args.file}`);
    return 2;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'vap-test-repeat-'));
  const load = args.load ? startLoad() : null;
  const stopLoad = () => load?.kill('SIGKILL');
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      stopLoad();
      try {
        if (current?.pid) process.kill(-current.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      process.exit(130);
    });
  }
  console.log(`${args.file}: ${args.runs} runs${args.load ? ', one core busy' : ''}${args.testName ? `, tests matching "${args.testName}"` : ''}; logs in ${dir}`);
  let passed = 0;
  let failed = 0;
  try {
    for (let i = 1; i <= args.runs; i++) {
      const jsonFile = path.join(dir, `run-${i}.json`);
      const logFile = path.join(dir, `run-${i}.log`);
      const { code, ms } = await runOnce(args, jsonFile, logFile);
      let failures: { name: string; message: string }[] = [];
      if (existsSync(jsonFile)) failures = failedTests(JSON.parse(readFileSync(jsonFile, 'utf8')) as JsonReport);
      const secs = `${(ms / 1000).toFixed(1)} s`;
      if (code === 0 && failures.length === 0) {
        passed++;
        console.log(`run ${i}: passed (${secs})`);
        continue;
      }
      failed++;
      console.log(`run ${i}: FAILED (${secs}, exit ${code}; log ${logFile})`);
      if (!failures.length) console.log('  no test failed: the run itself failed (see the log)');
      for (const f of failures) console.log(`  ✗ ${f.name}${f.message ? `\n    ${f.message}` : ''}`);
    }
  } finally {
    stopLoad();
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

if (import.meta.main) process.exitCode = await main();
