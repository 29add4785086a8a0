// Faults with calls in flight on a cluster on one machine (issue 49, section 2; docs/operations.md, "What happens
// when …"). Runs the fault files test/faults/*.test.ts (not part of `npm test`: each starts a cluster of its own), one at a time, and gathers the result each of their tests
// records before its checks (test/support/cluster/fault-file.ts), with the tests' verdicts, into
// bench/results/faults.json. Each file starts its own cluster (test/support/cluster): 2 LiveKit nodes on one
// Redis, 2 control-plane replicas and the LiveKit nodes behind HAProxy, 3 media workers, one PostgreSQL (and the SIP
// bridge for the SIP file). Each fault runs as test/support/cluster/fault-run.ts says: callers in flight, new calls
// dialled one after another and API requests every 500 ms through HAProxy; then the fault; then every call must end
// by itself and its events arrive. Times are on a shared 2-core machine: read them as orders of magnitude.
// Usage: npm run bench:faults [-- file ...]   (default: the four files, in the order below)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeResults } from './support/results.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const FILES = ['workers', 'control-plane', 'media', 'sip'];
const wanted = process.argv.slice(2);
const files = wanted.length ? FILES.filter((f) => wanted.includes(f)) : FILES;
const dir = mkdtempSync(path.join(tmpdir(), 'vap-bench-faults-'));
const resultsFile = path.join(dir, 'faults.jsonl');
const verdictsFile = path.join(dir, 'vitest.json');

const settings = {
  layout: {
    livekit_nodes: 2,
    redis: 1,
    control_planes: 2,
    load_balancer: 'HAProxy (Debian)',
    workers: 3,
    job_processes_per_worker: 1,
    postgresql: 1,
    sip_bridges: 'SIP file only',
  },
  calls_in_flight: '3 web callers; for the SIP bridge restart, 2 phone callers (SIPp) and 1 web caller',
  question_after_fault: 'each caller in flight asks a question 2 s after the fault; an answer within 30 s counts',
  new_calls: 'one after another, 1 s apart, each must be greeted within 25 s; web calls, alternating with phone calls for the SIP bridge restart',
  api_probe: 'GET /v1/agents every 500 ms through HAProxy',
  speech: 'Deepgram stand-in (STT), espeak-ng (TTS), OpenAI-compatible LLM stand-in',
  env: { REAP_DELAY_SECONDS: 1, WORKER_SILENCE_SECONDS: 15, JOBS_SUPERVISE_INTERVAL_SECONDS: 5, ANALYSIS_MODE: 'off', DRAIN_TIMEOUT_MS: 120000 },
};

const run = spawnSync(
  'npx',
  [
    'vitest',
    'run',
    ...files.map((f) => `test/faults/${f}.test.ts`),
    '--maxWorkers=1',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${verdictsFile}`,
  ],
  { cwd: ROOT, stdio: 'inherit', env: { ...process.env, VAP_FAULTS_RESULTS: resultsFile } },
);

const faults: Record<string, unknown> = {};
if (existsSync(resultsFile)) {
  for (const line of readFileSync(resultsFile, 'utf8').split('\n').filter(Boolean)) {
    const r = JSON.parse(line) as { fault: string };
    faults[r.fault] = r;
  }
}
const tests: { file: string; test: string; status: string; seconds: number }[] = [];
if (existsSync(verdictsFile)) {
  const report = JSON.parse(readFileSync(verdictsFile, 'utf8')) as {
    testResults: { name: string; assertionResults: { title: string; status: string; duration?: number }[] }[];
  };
  for (const f of report.testResults) {
    for (const t of f.assertionResults)
      tests.push({ file: path.relative(ROOT, f.name), test: t.title, status: t.status, seconds: Math.round((t.duration ?? 0) / 100) / 10 });
  }
}
writeResults('faults', { settings, vitest_exit_code: run.status, tests, faults });
rmSync(dir, { recursive: true, force: true });
process.exitCode = run.status ?? 1;
