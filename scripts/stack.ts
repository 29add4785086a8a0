// `npm run stack:start` / `npm run stack:stop`: the local stack (Redis, LiveKit server, SIP bridge, control
// plane, media worker) in one command. See README "Local stack".
//
//   node scripts/stack.ts start [--detach] [--free-ports] [--no-sip] [--no-control-plane] [--worker | --no-worker]
//                               [--redis auto|own|HOST:PORT] [--<service>-port N] [--sip-rtp-ports A-B] [--run-dir DIR]
//   node scripts/stack.ts stop [--run-dir DIR]
//   node scripts/stack.ts status [--run-dir DIR]
//
// Every port flag has an environment twin: --livekit-port is STACK_LIVEKIT_PORT, and so on.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { REPO_ROOT, sipBridgeVersion, startStack, type StackPorts } from './stack/supervisor.ts';

const PORT_FLAGS: Record<string, keyof StackPorts> = {
  'livekit-port': 'livekit',
  'rtc-tcp-port': 'rtcTcp',
  'rtc-udp-port': 'rtcUdp',
  'redis-port': 'redis',
  'sip-port': 'sip',
  'sip-health-port': 'sipHealth',
  'control-plane-port': 'controlPlane',
  'control-plane-metrics-port': 'controlPlaneMetrics',
  'worker-port': 'worker',
  'worker-metrics-port': 'workerMetrics',
};

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    detach: { type: 'boolean' },
    'free-ports': { type: 'boolean' },
    'no-sip': { type: 'boolean' },
    'no-control-plane': { type: 'boolean' },
    worker: { type: 'boolean' },
    'no-worker': { type: 'boolean' },
    redis: { type: 'string' },
    'sip-rtp-ports': { type: 'string' },
    'run-dir': { type: 'string' },
    supervised: { type: 'boolean' }, // internal: the detached child of --detach
    ...Object.fromEntries(Object.keys(PORT_FLAGS).map((f) => [f, { type: 'string' as const }])),
  },
});

const runDir = path.resolve(values['run-dir'] ?? path.resolve(REPO_ROOT, process.env.DATA_DIR ?? '.data', 'stack'));
const statePath = path.join(runDir, 'stack.json');

interface State {
  status: 'starting' | 'ready' | 'failed';
  pid: number;
  error?: string;
  [key: string]: unknown;
}

function readState(): State | null {
  try {
    return JSON.parse(readFileSync(statePath, 'utf8')) as State;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function portOptions(): Partial<StackPorts> {
  const ports: Partial<StackPorts> = {};
  for (const [flag, key] of Object.entries(PORT_FLAGS)) {
    const raw = (values as Record<string, unknown>)[flag] ?? process.env[`STACK_${flag.replace(/-/g, '_').toUpperCase()}`];
    if (raw === undefined || raw === '') continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 65535) fail(`--${flag}: not a port: ${String(raw)}`);
    ports[key] = n;
  }
  const rtp = values['sip-rtp-ports'] ?? process.env.STACK_SIP_RTP_PORTS;
  if (rtp) {
    const m = /^(\d+)-(\d+)$/.exec(rtp);
    if (!m || Number(m[1]) >= Number(m[2])) fail(`--sip-rtp-ports: expected START-END, got ${rtp}`);
    ports.sipRtpStart = Number(m![1]);
    ports.sipRtpEnd = Number(m![2]);
  }
  return ports;
}

function fail(message: string): never {
  process.stderr.write(`stack: ${message}\n`);
  process.exit(1);
}

/** API keys: from the environment, else generated once and kept in the run folder (mode 600). */
function apiKeys(): { apiKey: string; apiSecret: string } {
  if (process.env.LIVEKIT_API_KEY && process.env.LIVEKIT_API_SECRET) return { apiKey: process.env.LIVEKIT_API_KEY, apiSecret: process.env.LIVEKIT_API_SECRET };
  const file = path.join(runDir, 'keys.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8'));
  const keys = { apiKey: `API${randomBytes(6).toString('hex')}`, apiSecret: randomBytes(32).toString('base64url') };
  writeFileSync(file, JSON.stringify(keys) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return keys;
}

async function start(): Promise<void> {
  mkdirSync(runDir, { recursive: true });
  const existing = readState();
  if (existing && alive(existing.pid) && existing.pid !== process.pid) fail(`already running (pid ${existing.pid}); npm run stack:stop first`);

  if (values.detach) {
    rmSync(statePath, { force: true });
    const out = openSync(path.join(runDir, 'supervisor.log'), 'a');
    const args = process.argv.slice(2).filter((a) => a !== '--detach');
    const child = spawn(process.execPath, [import.meta.filename, ...args, '--supervised'], { detached: true, stdio: ['ignore', out, out], cwd: REPO_ROOT });
    child.unref();
    for (;;) {
      await sleep(200);
      const state = readState();
      if (state?.status === 'ready') {
        printSummary(state);
        process.stdout.write(`Supervisor pid ${state.pid}; stop with: npm run stack:stop\n`);
        return;
      }
      if (state?.status === 'failed' || child.exitCode !== null) {
        fail(`start-up failed: ${state?.error ?? 'see ' + path.join(runDir, 'supervisor.log')}`);
      }
    }
  }

  const workerMain = path.join(REPO_ROOT, 'media-worker/src/main.ts');
  const worker = values['no-worker'] ? false : values.worker ? true : existsSync(workerMain);
  writeFileSync(statePath, JSON.stringify({ status: 'starting', pid: process.pid }));
  // A signal during start-up aborts it (startStack stops what it started); after that, it stops the stack.
  const abort = new AbortController();
  let onSignal: () => void = () => abort.abort(new Error('interrupted'));
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => onSignal());
  let stack;
  try {
    stack = await startStack({
      freePorts: values['free-ports'] ?? false,
      ports: portOptions(),
      redis: values.redis ?? process.env.STACK_REDIS ?? 'auto',
      sip: values['no-sip'] ? false : 'if-built',
      controlPlane: !values['no-control-plane'],
      worker,
      ...apiKeys(),
      runDir,
      onProgress: (m) => process.stdout.write(`stack: ${m}\n`),
      signal: abort.signal,
    });
  } catch (err) {
    const error = abort.signal.aborted ? 'interrupted during start-up' : (err as Error).message;
    writeFileSync(statePath, JSON.stringify({ status: 'failed', pid: process.pid, error }));
    fail(error);
  }
  const { stop, crashed, apiSecret: _secret, ...info } = stack;
  const state: State = { status: 'ready', pid: process.pid, ...info, worker, sipBridge: stack.sipVersion ?? null };
  writeFileSync(statePath, JSON.stringify(state, null, 2));
  if (!values.supervised) {
    printSummary(state);
    process.stdout.write('Ctrl-C stops everything.\n');
  }
  if (!stack.sipAddress && sipBridgeVersion() === null && !values['no-sip']) {
    process.stdout.write('stack: no SIP bridge was built (see the setup output); running without SIP\n');
  }

  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('stack: stopping\n');
    await stop();
    rmSync(statePath, { force: true });
    process.exit(code);
  };
  onSignal = () => void shutdown(0);
  if (abort.signal.aborted) await shutdown(0);
  const dead = await crashed;
  process.stderr.write(`stack: ${dead.name} exited (code ${dead.code}); see ${path.join(stack.logDir, dead.name + '.log')}\n`);
  await shutdown(1);
}

function printSummary(state: State): void {
  const s = state as State & { livekitUrl: string; livekitVersion: string; apiKey: string; redisAddress: string; ownRedis: boolean; sipAddress?: string; sipVersion?: string; controlPlaneUrl?: string; logDir: string; worker: boolean };
  const lines = [
    `LiveKit:       ${s.livekitUrl}  (livekit-server ${s.livekitVersion}; API key ${s.apiKey}; the secret is LIVEKIT_API_SECRET or ${path.join(runDir, 'keys.json')})`,
    `Redis:         ${s.redisAddress}${s.ownRedis ? ' (started here)' : ' (already running)'}`,
    `SIP bridge:    ${s.sipAddress ? `${s.sipAddress} (livekit-sip ${s.sipVersion})` : 'not running'}`,
    `Control plane: ${s.controlPlaneUrl ?? 'not running'}`,
    `Media worker:  ${s.worker ? 'running' : 'not running'}`,
    `Logs:          ${s.logDir}`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
  // On the very first start the control plane creates a development organisation and prints its key once,
  // into its own log: show it here too, or nobody would see it.
  const cpLog = path.join(s.logDir, 'control-plane.log');
  if (s.controlPlaneUrl && existsSync(cpLog)) {
    const m = /\n(\s*Development organisation created\.[\s\S]*?Docs: \S+)/.exec(readFileSync(cpLog, 'utf8'));
    if (m) process.stdout.write(`${m[1]}\n`);
  }
}

async function stopCommand(): Promise<void> {
  const state = readState();
  if (!state || !alive(state.pid)) {
    rmSync(statePath, { force: true });
    process.stdout.write('stack: not running\n');
    return;
  }
  process.kill(state.pid, 'SIGTERM');
  for (let i = 0; i < 300 && alive(state.pid); i++) await sleep(100);
  if (alive(state.pid)) {
    // The supervisor did not finish in 30 s: kill what it started, then it.
    for (const s of (state.services as { pid?: number }[] | undefined) ?? []) {
      try {
        if (s.pid) process.kill(-s.pid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
    process.kill(state.pid, 'SIGKILL');
  }
  rmSync(statePath, { force: true });
  process.stdout.write('stack: stopped\n');
}

async function status(): Promise<void> {
  const state = readState();
  if (!state || !alive(state.pid)) {
    process.stdout.write('stack: not running\n');
    process.exitCode = 3;
    return;
  }
  process.stdout.write(`stack: ${state.status} (supervisor pid ${state.pid})\n`);
  if (state.status === 'ready') printSummary(state);
}

const command = positionals[0] ?? 'start';
if (command === 'start') await start();
else if (command === 'stop') await stopCommand();
else if (command === 'status') await status();
else fail(`unknown command ${command}; use start, stop or status`);
