// Runs an agent's tests through the public API and exits non-zero on any failed expectation, so a CI job can
// gate a prompt change on it (docs/guides/testing-agents.md, "Testing agents in CI").
//
//   VAP_API_KEY=sk_... [VAP_API_URL=https://vap.example.com] \
//     npm run agent-test -- --agent AGENT_ID (--suite SUITE_ID | --scenario ID [--scenario ID ...]) [--mode text|voice] [--timeout SECONDS] [--json]
//
// Exit codes: 0 every scenario passed; 1 a scenario failed, errored or was canceled; 2 bad arguments, an API
// error or the timeout (the run is canceled then). Ctrl-C cancels the run too.

export interface CliArgs {
  agent: string;
  suite: string | undefined;
  scenarios: string[];
  mode: 'text' | 'voice';
  timeoutSeconds: number;
  json: boolean;
}

export const USAGE = 'usage: npm run agent-test -- --agent AGENT_ID (--suite SUITE_ID | --scenario ID ...) [--mode text|voice] [--timeout SECONDS] [--json]';

export function parseArgs(argv: string[]): CliArgs {
  let agent: string | undefined;
  let suite: string | undefined;
  const scenarios: string[] = [];
  let timeoutSeconds = 1800;
  let json = false;
  let mode: 'text' | 'voice' = 'text';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new Error(`${a} needs a value\n${USAGE}`);
      return v;
    };
    if (a === '--agent') agent = value();
    else if (a === '--suite') suite = value();
    else if (a === '--scenario') scenarios.push(value());
    else if (a === '--timeout') timeoutSeconds = Number(value());
    else if (a === '--json') json = true;
    else if (a === '--mode') {
      const m = value();
      if (m !== 'text' && m !== 'voice') throw new Error(`--mode is text or voice\n${USAGE}`);
      mode = m;
    }
    else throw new Error(`unknown argument ${a}\n${USAGE}`);
  }
  if (!agent) throw new Error(`--agent is required\n${USAGE}`);
  if (!suite === !scenarios.length) throw new Error(`give --suite or --scenario (not both)\n${USAGE}`);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) throw new Error(`--timeout must be a positive number of seconds\n${USAGE}`);
  return { agent, suite, scenarios, mode, timeoutSeconds, json };
}

interface ExpectationResult {
  name: string;
  passed: boolean;
  reason: string;
}
interface ScenarioResult {
  scenario_name: string;
  status: string;
  expectations: ExpectationResult[];
  error: string | null;
  end_reason: string | null;
  turns: number;
}
export interface RunBody {
  id: string;
  status: string;
  total: number;
  passed: number;
  failed: number;
  errored: number;
  results: ScenarioResult[] | null;
}

/** The report printed at the end, one line per scenario and one per failed expectation. */
export function report(run: RunBody): string {
  const lines = [`test run ${run.id}: ${run.status}, ${run.passed} passed, ${run.failed} failed, ${run.errored} errored of ${run.total}`];
  for (const r of run.results ?? []) {
    const mark = r.status === 'passed' ? 'PASS' : r.status === 'failed' ? 'FAIL' : r.status.toUpperCase();
    lines.push(`  ${mark}  ${r.scenario_name} (${r.turns} turn${r.turns === 1 ? '' : 's'}${r.end_reason ? `, ${r.end_reason}` : ''})`);
    if (r.error) lines.push(`        error: ${r.error}`);
    for (const e of r.expectations.filter((x) => !x.passed)) lines.push(`        ✗ ${e.name}: ${e.reason}`);
  }
  return lines.join('\n');
}

/** 0 when every scenario of a completed run passed, else 1. */
export const exitCodeOf = (run: RunBody) => (run.status === 'completed' && run.passed === run.total ? 0 : 1);

async function call<T = unknown>(base: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 1000)}`);
  return (text ? JSON.parse(text) : null) as T;
}

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let args: CliArgs;
  try {
    args = parseArgs(argv);
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  const key = env.VAP_API_KEY;
  if (!key) {
    console.error('VAP_API_KEY is not set: an API key of the organisation (Settings → API keys, or POST /v1/api-keys)');
    return 2;
  }
  const base = `${(env.VAP_API_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '')}/v1`;
  let run: RunBody;
  try {
    run = await call(
      base,
      key,
      'POST',
      `/agents/${encodeURIComponent(args.agent)}/test-runs`,
      args.suite ? { suite_id: args.suite, mode: args.mode } : { scenario_ids: args.scenarios, mode: args.mode },
    );
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  console.error(`test run ${run.id}: ${run.total} scenario${run.total === 1 ? '' : 's'} queued`);
  const cancel = () => call(base, key, 'POST', `/test-runs/${run.id}/cancel`).catch(() => null);
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
  };
  process.once('SIGINT', onSigint);
  const until = Date.now() + args.timeoutSeconds * 1000;
  let seen = -1;
  try {
    while (run.status === 'queued' || run.status === 'running') {
      if (interrupted || Date.now() > until) {
        await cancel();
        console.error(interrupted ? 'interrupted: the run was canceled' : `timed out after ${args.timeoutSeconds} s: the run was canceled`);
        return 2;
      }
      await new Promise((r) => setTimeout(r, 1000));
      run = await call<RunBody>(base, key, 'GET', `/test-runs/${run.id}`);
      const done = (run.results ?? []).filter((r) => !['pending', 'running'].includes(r.status)).length;
      if (done !== seen) console.error(`  ${done}/${run.total} done`);
      seen = done;
    }
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  } finally {
    process.off('SIGINT', onSigint);
  }
  console.log(args.json ? JSON.stringify(run, null, 2) : report(run));
  return exitCodeOf(run);
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
