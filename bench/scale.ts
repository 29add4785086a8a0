// Scale test on real processes (docs/benchmarks.md, "Scale: two workers, dispatch and drain"):
//   one LiveKit server (+ Redis), one control plane (PostgreSQL: a fresh database on DATABASE_ADMIN_URL), two
//   media-worker processes; 2 x N web calls from real rtc-node clients.
//   1. Spread: the 2N calls start one after another; which worker took each is read from the workers' own
//      `voice_active_calls` gauges. Each call then has one spoken turn.
//   2. Drain: SIGTERM to worker B while its calls run. Its calls each have one more spoken turn (they must
//      still answer), then end; A's calls end; N new calls start and must all land on A. B must exit by itself
//      once its last call has ended (well before DRAIN_TIMEOUT_MS).
//   3. Nothing stuck or lost: every call `completed` with end_reason `api_stop` (none `worker_lost`/failed).
//   Control-plane load per call (HTTP requests, CPU seconds) and PostgreSQL load per call (transactions,
//   rows written) are measured over the run, for the extrapolation in docs/benchmarks.md.
// Usage: node bench/scale.ts [N]   (npm run bench:scale; N = 2 by default: 4 calls of local speech models at once
// is what a shared 2-core machine sustains in real time)
import { RtcClient, disposeRtc } from '../test/support/rtc-client.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync, createWriteStream, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startStack, type RunningStack } from '../scripts/stack/supervisor.ts';
import { createSql } from '../control-plane/src/db/connect.ts';
import { createOrgWithKey } from '../control-plane/src/modules/workspace/orgs.ts';
import { startFakeOpenAI } from '../test/support/fake-openai.ts';
import { synthesize, type Pcm } from '../test/support/speech.ts';

const N = Number(process.argv[2] ?? 2);
// Full (load >= LOAD_THRESHOLD 0.7) at 3 calls: one worker alone cannot take a phase's 2N = 4 calls.
const MAX_CALLS_PER_WORKER = Number(process.env.SCALE_MAX_CALLS_PER_WORKER ?? 3);
const DRAIN_TIMEOUT_MS = 180_000;
const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (m: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${m}\n`);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false> | T | null | undefined | false, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return res.text();
}
function gauge(page: string, name: string): number {
  let sum = 0;
  for (const m of page.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'gm'))) sum += Number(m[1]);
  return sum;
}

interface Worker {
  name: 'A' | 'B';
  metricsPort: number;
  proc?: ChildProcess;
}

class Call {
  readonly client: RtcClient;
  readonly id: string;
  worker: 'A' | 'B' | '?' = '?';
  #mic: Promise<void>;
  #running = true;
  #queue: { pcm: Pcm; done: () => void }[] = [];
  readonly rec;
  constructor(id: string, client: RtcClient) {
    this.id = id;
    this.client = client;
    this.rec = client.record({});
    const silence: Pcm = { samples: new Int16Array(4800), sampleRate: 48000 };
    // A microphone that never stops (silence between clips), as a browser's.
    this.#mic = (async () => {
      while (this.#running) {
        const next = this.#queue.shift();
        await client.speak(next?.pcm ?? silence);
        next?.done();
      }
    })();
  }
  say(pcm: Pcm): Promise<void> {
    return new Promise((done) => this.#queue.push({ pcm, done }));
  }
  /** One spoken question; resolves when the agent's answer has been heard. */
  async turn(pcm: Pcm): Promise<void> {
    await sleep(300);
    this.rec.reset();
    await this.say(pcm);
    await this.rec.utterance({ silenceMs: 700, timeoutMs: 90_000 });
  }
  async end(): Promise<void> {
    this.#running = false;
    await this.#mic;
    await this.client.leave();
  }
}

async function main() {
  const started = Date.now();
  const dbName = `vap_bench_scale_${randomBytes(4).toString('hex')}`;
  const admin = createSql(ADMIN_URL, { max: 1 });
  await admin.unsafe(`create database ${dbName}`);
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${dbName}`;
  const llm = await startFakeOpenAI({ ttftMs: 200 });
  llm.setResponder((req) => (req.stream ? { text: 'Sure, I can help with that.' } : { text: JSON.stringify({ summary: 'Scale test call.', outcome: 'benchmark' }), ttftMs: 0 }));
  const question = await synthesize('What time do you open tomorrow morning?');

  let stack: RunningStack | null = null;
  const workers: Record<'A' | 'B', Worker> = { A: { name: 'A', metricsPort: 0 }, B: { name: 'B', metricsPort: await freePort() } };
  const calls: Call[] = [];
  let result: Record<string, unknown> = {};
  // JOB_INIT_TIMEOUT_MS: this machine is shared; a job process loading its models can take longer than 10 s.
  const workerEnv = { MAX_CONCURRENT_CALLS: String(MAX_CALLS_PER_WORKER), DRAIN_TIMEOUT_MS: String(DRAIN_TIMEOUT_MS), LOAD_INCLUDES_CPU: 'false', JOB_INIT_TIMEOUT_MS: '120000', JOB_IDLE_PROCESSES: String(MAX_CALLS_PER_WORKER) };
  try {
    stack = await startStack({
      freePorts: true,
      redis: 'own',
      sip: false,
      controlPlane: true,
      worker: true,
      logLevel: 'warn',
      env: { NODE_ENV: 'development', DATABASE_URL: dbUrl.toString(), SSRF_ALLOWLIST: '127.0.0.1,localhost', ...workerEnv },
      onProgress: (m) => log(m),
    });
    // Logs are kept when the run fails (the supervisor removes the run folder otherwise).
    writeFileSync(path.join(stack.runDir, 'keep'), '');
    log(`logs: ${stack.logDir}`);
    workers.A.metricsPort = stack.ports.workerMetrics;
    // Worker B: the same program and settings as A, its own ports and log.
    const healthB = await freePort();
    const logB = path.join(stack.logDir, 'worker-b.log');
    const out = createWriteStream(logB);
    const procB = spawn(process.execPath, ['media-worker/src/main.ts', 'start'], {
      cwd: ROOT,
      env: {
        ...process.env,
        LOG_LEVEL: 'warn',
        LIVEKIT_URL: stack.livekitUrl,
        LIVEKIT_API_KEY: stack.apiKey,
        LIVEKIT_API_SECRET: stack.apiSecret,
        WORKER_TOKEN: stack.workerToken,
        CONTROL_PLANE_URL: stack.controlPlaneUrl!,
        WORKER_HEALTH_PORT: String(healthB),
        WORKER_METRICS_PORT: String(workers.B.metricsPort),
        SSRF_ALLOWLIST: '127.0.0.1,localhost',
        ...workerEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    procB.stdout!.pipe(out);
    procB.stderr!.pipe(out);
    workers.B.proc = procB;
    const exitB = new Promise<{ code: number | null; at: number }>((resolve) => procB.once('exit', (code) => resolve({ code, at: Date.now() })));
    await until('worker B to register', async () => (await fetch(`http://127.0.0.1:${healthB}/`).catch(() => null))?.ok, 120_000);
    log('worker B registered');

    const sql = createSql(dbUrl.toString(), { max: 2 });
    const { api_key: key } = await createOrgWithKey(sql, 'scale');
    const api = async (method: string, route: string, body?: unknown) => {
      const res = await fetch(stack!.controlPlaneUrl + route, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: (await res.json().catch(() => null)) as any };
    };
    await sql`update orgs set max_concurrent_calls = 100, max_calls_per_day = 100000`;
    const model = await api('POST', '/v1/models', { name: 'stand-in', model: 'fake-model', base_url: llm.url, system_prompt: 'Answer briefly.' });
    const agent = await api('POST', '/v1/agents', {
      name: 'Scale',
      llm_id: model.body.id,
      transcriber: { provider: 'local' },
      tts: { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' },
      first_message: 'Hello, how can I help?',
      silence_timeout_seconds: 600,
      max_duration_seconds: 1200,
    });
    if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.body)}`);

    const active = async () => ({ A: gauge(await scrape(workers.A.metricsPort), 'voice_active_calls'), B: workers.B.proc!.exitCode === null ? gauge(await scrape(workers.B.metricsPort).catch(() => ''), 'voice_active_calls') : 0 });
    const cpPid = stack.services.find((s) => s.name === 'control-plane')?.pid;
    const cpuSeconds = () => {
      if (!cpPid) return 0;
      const f = readFileSync(`/proc/${cpPid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks (100 Hz)
    };
    const httpCount = async () => gauge(await scrape(stack!.ports.controlPlaneMetrics), 'vap_http_request_duration_seconds_count');
    const pgStats = async () => {
      const [r] = await admin<{ xact: number; ins: number; upd: number; del: number }[]>`
        select (xact_commit + xact_rollback)::float8 as xact, tup_inserted::float8 as ins, tup_updated::float8 as upd, tup_deleted::float8 as del
        from pg_stat_database where datname = ${dbName}`;
      return r!;
    };

    /** Starts one call and waits for its greeting; the worker that took it is the one whose gauge rose. */
    const startCall = async (): Promise<Call> => {
      const before = await active();
      const created = await api('POST', '/v1/calls/web', { agent_id: agent.body.id });
      if (created.status !== 201) throw new Error(`POST /v1/calls/web: ${created.status} ${JSON.stringify(created.body)}`);
      const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
      await client.publishMicrophone();
      const call = new Call(created.body.id, client);
      await call.rec.utterance({ silenceMs: 700, timeoutMs: 240_000 });
      const after = await until('the worker gauge to show the call', async () => {
        const a = await active();
        return a.A + a.B > before.A + before.B ? a : null;
      }, 45_000).catch(() => null);
      call.worker = after ? (after.A > before.A ? 'A' : 'B') : '?';
      calls.push(call);
      log(`call ${calls.length} ${call.id} on worker ${call.worker} (active A ${after?.A}, B ${after?.B})`);
      return call;
    };

    const cpu0 = cpuSeconds();
    const http0 = await httpCount();
    const pg0 = await pgStats();

    // 1. Spread.
    log(`phase 1: ${2 * N} calls`);
    const phase1: Call[] = [];
    for (let i = 0; i < 2 * N; i++) phase1.push(await startCall());
    for (const c of phase1) await c.turn(question);
    const split1 = { A: phase1.filter((c) => c.worker === 'A').length, B: phase1.filter((c) => c.worker === 'B').length };
    log(`phase 1 split: A ${split1.A}, B ${split1.B}`);

    // 2. Drain B mid-call.
    const onB = phase1.filter((c) => c.worker === 'B');
    const onA = phase1.filter((c) => c.worker === 'A');
    const sigtermAt = Date.now();
    procB.kill('SIGTERM');
    log(`SIGTERM to worker B (${onB.length} calls on it)`);
    // B's calls still answer after SIGTERM.
    let bTurnsAfterSigterm = 0;
    for (const c of onB) {
      await c.turn(question);
      bTurnsAfterSigterm++;
    }
    const bStillRunning = procB.exitCode === null && procB.signalCode === null;
    // End A's calls to make room, then N new calls: all must go to A.
    for (const c of onA) {
      await c.end();
      await api('POST', `/v1/calls/${c.id}/stop`);
    }
    await until('A to be idle', async () => (await active()).A === 0, 60_000);
    const phase2: Call[] = [];
    for (let i = 0; i < N; i++) phase2.push(await startCall());
    for (const c of phase2) await c.turn(question);
    const split2 = { A: phase2.filter((c) => c.worker === 'A').length, B: phase2.filter((c) => c.worker === 'B').length };
    log(`phase 2 (B draining) split: A ${split2.A}, B ${split2.B}`);
    // B's calls end normally; B exits by itself.
    let lastBEnd = Date.now();
    for (const c of onB) {
      await c.end();
      await api('POST', `/v1/calls/${c.id}/stop`);
      lastBEnd = Date.now();
    }
    const exit = await Promise.race([exitB, sleep(DRAIN_TIMEOUT_MS).then(() => null)]);
    log(`worker B exited: ${exit ? `code ${exit.code}, ${((exit.at - lastBEnd) / 1000).toFixed(1)} s after its last call ended` : 'NOT within the drain timeout'}`);
    for (const c of phase2) {
      await c.end();
      await api('POST', `/v1/calls/${c.id}/stop`);
    }

    // 3. Every call completed, none lost.
    const ids = calls.map((c) => c.id);
    const rows = await until('every call to be final with its report', async () => {
      const r = await sql<{ id: string; status: string; end_reason: string | null; messages: unknown[] | null }[]>`select id, status, end_reason, messages from calls where id = any(${ids})`;
      return r.length === ids.length && r.every((x) => x.status === 'completed' && (x.messages?.length ?? 0) >= 3) ? r : null;
    }, 120_000).catch(async () => sql<{ id: string; status: string; end_reason: string | null; messages: unknown[] | null }[]>`select id, status, end_reason, messages from calls where id = any(${ids})`);
    const byStatus: Record<string, number> = {};
    for (const r of rows) byStatus[`${r.status}/${r.end_reason}`] = (byStatus[`${r.status}/${r.end_reason}`] ?? 0) + 1;
    const cpu1 = cpuSeconds();
    const http1 = await httpCount();
    const pg1 = await pgStats();
    const n = calls.length;
    await sql.end();

    result = {
      benchmark: 'scale',
      commit: execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim(),
      date: new Date().toISOString(),
      machine: { cores: os.cpus().length, cpu: os.cpus()[0]?.model, load_average_start: null as unknown, load_average_end: os.loadavg().map((x) => +x.toFixed(2)), memory_gb: +(os.totalmem() / 2 ** 30).toFixed(1) },
      command: `npm run bench:scale -- ${N}`,
      settings: { N, max_concurrent_calls_per_worker: MAX_CALLS_PER_WORKER, load_threshold: 0.7, drain_timeout_ms: DRAIN_TIMEOUT_MS, stt: 'local pocketsphinx', tts: 'local espeak-ng', llm: 'OpenAI-compatible stand-in, 200 ms TTFT' },
      spread: { phase1_calls: 2 * N, split: split1, calls: phase1.map((c) => ({ id: c.id, worker: c.worker })) },
      drain: {
        calls_on_b_at_sigterm: onB.length,
        b_turns_answered_after_sigterm: bTurnsAfterSigterm,
        b_running_while_its_calls_ran: bStillRunning,
        new_calls_while_b_draining: split2,
        b_exit_code: exit?.code ?? null,
        b_exit_seconds_after_last_call_ended: exit ? +((exit.at - lastBEnd) / 1000).toFixed(1) : null,
        b_exit_seconds_after_sigterm: exit ? +((exit.at - sigtermAt) / 1000).toFixed(1) : null,
      },
      outcome: { calls: n, by_status: byStatus, lost_or_stuck: rows.filter((r) => r.status !== 'completed' || r.end_reason !== 'api_stop').length },
      per_call: {
        control_plane_http_requests: +((http1 - http0) / n).toFixed(1),
        control_plane_cpu_seconds: +((cpu1 - cpu0) / n).toFixed(3),
        postgres_transactions: +((pg1.xact - pg0.xact) / n).toFixed(1),
        postgres_rows_inserted: +((pg1.ins - pg0.ins) / n).toFixed(1),
        postgres_rows_updated: +((pg1.upd - pg0.upd) / n).toFixed(1),
        postgres_rows_deleted: +((pg1.del - pg0.del) / n).toFixed(1),
        call_seconds_mean: null as unknown,
      },
      wall_seconds: Math.round((Date.now() - started) / 1000),
    };
    const durations = await (async () => {
      const s = createSql(dbUrl.toString(), { max: 1 });
      const r = await s<{ d: number }[]>`select avg(duration_seconds)::float8 as d from calls where id = any(${ids})`;
      await s.end();
      return r[0]?.d ?? null;
    })();
    (result.per_call as Record<string, unknown>).call_seconds_mean = durations === null ? null : +durations.toFixed(1);
    rmSync(path.join(stack.runDir, 'keep'), { force: true }); // a good run leaves no logs behind
  } finally {
    for (const c of calls) await c.end().catch(() => {});
    await disposeRtc();
    if (workers.B.proc && workers.B.proc.exitCode === null) workers.B.proc.kill('SIGKILL');
    await stack?.stop();
    await llm.close();
    await admin.unsafe(`drop database if exists ${dbName} with (force)`).catch(() => {});
    await admin.end();
  }
  mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(path.join(ROOT, 'bench/results/scale.json'), `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result, null, 2));
}

const loadStart = os.loadavg().map((x) => +x.toFixed(2));
main()
  .then(() => {
    const file = path.join(ROOT, 'bench/results/scale.json');
    const r = JSON.parse(readFileSync(file, 'utf8'));
    r.machine.load_average_start = loadStart;
    writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
    process.exit(0);
  })
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
