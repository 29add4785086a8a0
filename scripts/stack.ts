// `npm start`: the local stack (Redis, LiveKit server, SIP bridge, control plane, media worker) in one
// foreground process. Ctrl-C (or SIGTERM) stops everything it started. See docs/guides/getting-started.md, "Local stack".
//
//   node scripts/stack.ts [--free-ports] [--no-sip] [--no-control-plane] [--worker | --no-worker]
//                         [--redis auto|own|HOST:PORT] [--<service>-port N] [--sip-rtp-ports A-B] [--run-dir DIR]
//
// Every port flag has an environment twin: --livekit-port is STACK_LIVEKIT_PORT, and so on. The control
// plane's port also follows PORT (and its metrics port METRICS_PORT), as `.env.example` documents:
// the flag wins, then STACK_CONTROL_PLANE_PORT, then PORT.
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { REPO_ROOT, sipBridgeVersion, startStack, type RunningStack } from './stack/supervisor.ts';
import { OptionError, PORT_FLAGS, portOptions } from './stack/cli-options.ts';
import { detectLlm, llmLines, localLlmReady, noLlmParagraph, type LlmFindings } from './stack/llm-detect.ts';
import { devOrgBlock } from './stack/dev-org-block.ts';

function fail(message: string): never {
  process.stderr.write(`stack: ${message}\n`);
  process.exit(1);
}

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      'free-ports': { type: 'boolean' },
      'no-sip': { type: 'boolean' },
      'no-control-plane': { type: 'boolean' },
      worker: { type: 'boolean' },
      'no-worker': { type: 'boolean' },
      redis: { type: 'string' },
      'sip-rtp-ports': { type: 'string' },
      'run-dir': { type: 'string' },
      ...Object.fromEntries(Object.keys(PORT_FLAGS).map((f) => [f, { type: 'string' as const }])),
    },
  });
} catch (err) {
  fail((err as Error).message);
}
const { positionals, values } = parsed;
// `start` is accepted for old habits; the stack has no other command (it runs in the foreground).
if (positionals.length > 1 || (positionals[0] !== undefined && positionals[0] !== 'start')) {
  fail(`unknown command ${positionals.join(' ')}: the stack runs in the foreground (npm start), Ctrl-C stops it`);
}

const runDir = path.resolve(values['run-dir'] ?? path.resolve(REPO_ROOT, process.env.DATA_DIR ?? '.data', 'stack'));

/** API keys: from the environment, else generated once and kept in the run folder (mode 600). */
function apiKeys(): { apiKey: string; apiSecret: string } {
  if (process.env.LIVEKIT_API_KEY && process.env.LIVEKIT_API_SECRET) return { apiKey: process.env.LIVEKIT_API_KEY, apiSecret: process.env.LIVEKIT_API_SECRET };
  const file = path.join(runDir, 'keys.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as { apiKey: string; apiSecret: string };
  const keys = { apiKey: `API${randomBytes(6).toString('hex')}`, apiSecret: randomBytes(32).toString('base64url') };
  writeFileSync(file, JSON.stringify(keys) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return keys;
}

async function printSummary(stack: RunningStack, worker: boolean, llm: LlmFindings, cpLogStart: number): Promise<void> {
  const cp = stack.controlPlaneUrl;
  const lines = [
    `LiveKit:       ${stack.livekitUrl}  (livekit-server ${stack.livekitVersion}; API key ${stack.apiKey}; the secret is LIVEKIT_API_SECRET or ${path.join(runDir, 'keys.json')})`,
    `Redis:         ${stack.redisAddress}${stack.ownRedis ? ' (started here)' : ' (already running)'}`,
    `SIP bridge:    ${stack.sipAddress ? `${stack.sipAddress} (livekit-sip ${stack.sipVersion ?? 'unknown'})` : 'not running'}`,
    `Control plane: ${cp ?? 'not running'}`,
    `Media worker:  ${worker ? 'running' : 'not running'}`,
    ...llmLines(llm),
    `Logs:          ${stack.logDir}`,
    ...(cp ? [`Playground:    ${cp}/playground`, `Console:       ${cp}/console`, `API docs:      ${cp}/docs`] : []),
  ];
  process.stdout.write(lines.join('\n') + '\n');
  if (!cp) return;
  // On the very first start the control plane creates a development organisation and prints its key once, into
  // its own log: show it here too, or nobody would see it.
  const block = await devOrgBlock(path.join(stack.logDir, 'control-plane.log'), cpLogStart);
  if (block) process.stdout.write(`${block}\n`);
  if (llm.cloud.length || localLlmReady(llm)) return;
  const firstStart = !!block && /Development organisation created\./.test(block);
  if (firstStart) process.stdout.write(noLlmParagraph(/, model (\S+):/.exec(block)?.[1] ?? null, cp, /API key: (\S+)/.exec(block)?.[1]));
  else process.stdout.write("  No language model is available: docs/guides/getting-started.md, 'Your first agent', says how to give agents one.\n");
}

let options;
try {
  options = portOptions(values, process.env);
} catch (err) {
  if (err instanceof OptionError) fail(err.message);
  throw err;
}
for (const note of options.notes) process.stdout.write(`stack: ${note}\n`);

mkdirSync(runDir, { recursive: true });
const workerMain = path.join(REPO_ROOT, 'media-worker/src/main.ts');
const worker = values['no-worker'] ? false : values.worker ? true : existsSync(workerMain);
// A signal during start-up aborts it (startStack stops what it started); after that, it stops the stack.
const abort = new AbortController();
let onSignal: () => void = () => {
  abort.abort(new Error('interrupted'));
};
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => onSignal());
// What makes agents talk: cloud keys, a local server (an Ollama found on its default port is used), a GGUF file.
const llm = await detectLlm(process.env);
const cpLog = path.join(runDir, 'logs', 'control-plane.log');
const cpLogStart = existsSync(cpLog) ? statSync(cpLog).size : 0;
let stack: RunningStack;
try {
  stack = await startStack({
    freePorts: values['free-ports'] ?? false,
    ports: options.ports,
    redis: values.redis ?? process.env.STACK_REDIS ?? 'auto',
    sip: values['no-sip'] ? false : 'if-built',
    controlPlane: !values['no-control-plane'],
    worker,
    env: llm.env,
    ...apiKeys(),
    runDir,
    onProgress: (m) => process.stdout.write(`stack: ${m}\n`),
    signal: abort.signal,
  });
} catch (err) {
  fail(abort.signal.aborted ? 'interrupted during start-up' : (err as Error).message);
}
await printSummary(stack, worker, llm, cpLogStart);
if (!stack.sipAddress && sipBridgeVersion() === null && !values['no-sip']) {
  process.stdout.write('stack: no SIP bridge was built (see the setup output); running without SIP\n');
}
process.stdout.write('Ctrl-C stops everything.\n');

let stopping = false;
const shutdown = async (code: number) => {
  if (stopping) return;
  stopping = true;
  process.stdout.write('stack: stopping\n');
  await stack.stop();
  process.exit(code);
};
onSignal = () => void shutdown(0);
if (abort.signal.aborted) await shutdown(0);
const dead = await stack.crashed;
process.stderr.write(`stack: ${dead.name} exited (code ${String(dead.code)}); see ${path.join(stack.logDir, dead.name + '.log')}\n`);
await shutdown(1);
