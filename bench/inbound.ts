// bench:inbound — an inbound phone call against a web call, in the same run, on the real local stack (LiveKit,
// SIP bridge, control plane, one media worker, local STT/TTS, an LLM stand-in):
//   - INVITE sent (SIPp) -> first audio of the first message at the caller (decoded RTP above a threshold);
//   - POST /v1/calls/web sent -> first audio of the first message at a WebRTC client (the baseline);
//   - concurrency: k inbound calls at once (k = 1, 2, 4, ...); the INVITE -> first audio p50 at each level, and the
//     first level at which it is more than double the single-call p50.
// Warm worker: one call of each kind runs first and is not counted. Usage:
//   npm run bench:inbound [-- CALLS [MAX_CONCURRENCY]]     (defaults 20 and 6)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { percentile } from '../shared/latency.ts';
import { startStack, type RunningStack } from '../scripts/stack/supervisor.ts';
import { startFakeOpenAI } from '../test/support/fake-openai.ts';
import { SipPhone } from '../test/support/sip-phone.ts';
import { RtcClient, disposeRtc, nowMs } from '../test/support/rtc-client.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CALLS = Number(process.argv[2] ?? 20);
const MAX_CONCURRENCY = Number(process.argv[3] ?? 6);
const FIRST_MESSAGE = 'Hello, thank you for calling.';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stats = (v: number[]) => ({ n: v.length, p50: +percentile(v, 50).toFixed(1), p95: +percentile(v, 95).toFixed(1), max: +Math.max(...v).toFixed(1) });

async function api(stack: RunningStack, key: string, method: string, p: string, body?: unknown) {
  const res = await fetch(stack.controlPlaneUrl + p, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

async function devKey(stack: RunningStack): Promise<string> {
  const log = path.join(stack.logDir, 'control-plane.log');
  const end = Date.now() + 20_000;
  for (;;) {
    const m = /API key: (\S+)/.exec(readFileSync(log, 'utf8'));
    if (m) return m[1]!;
    if (Date.now() > end) throw new Error(`no development key in ${log}`);
    await sleep(100);
  }
}

/** INVITE -> first audio of the agent at the caller, in ms; the call is hung up once heard. */
async function inboundCall(stack: RunningStack, number: string, from: string): Promise<number> {
  const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: number, from, timeoutSeconds: 120 });
  try {
    await phone.waitFor('the answer', () => phone.answered || phone.finalStatus, 120_000);
    if (!phone.answered) throw new Error(`call refused with ${phone.finalStatus}`);
    await phone.startMedia();
    await phone.waitFor('the first audio', () => phone.firstAudioAt !== null, 60_000);
    return phone.firstAudioAt! - phone.startedAt;
  } finally {
    await phone.close();
  }
}

/** POST /v1/calls/web -> first audio of the agent at a WebRTC client, in ms. */
async function webCall(stack: RunningStack, key: string, agentId: string): Promise<number> {
  const t0 = nowMs();
  const created = await api(stack, key, 'POST', '/v1/calls/web', { agent_id: agentId });
  if (created.status !== 201) throw new Error(`POST /v1/calls/web answered ${created.status}`);
  const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
  try {
    await client.publishMicrophone();
    const rec = client.record({});
    await rec.until(() => rec.firstSpeechAt !== undefined, 60_000, 'the first message');
    return rec.firstSpeechAt! - t0;
  } finally {
    await client.leave();
    await api(stack, key, 'POST', `/v1/calls/${created.body.id}/stop`);
  }
}

async function main() {
  const started = Date.now();
  const llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder(() => ({ text: 'We open at nine.' }));
  let stack: RunningStack | null = null;
  try {
    stack = await startStack({
      freePorts: true,
      redis: 'own',
      sip: true,
      controlPlane: true,
      worker: true,
      logLevel: 'warn',
      env: { NODE_ENV: 'development', SSRF_ALLOWLIST: '127.0.0.1,localhost', SIP_RINGING_TIMEOUT_SECONDS: '90', MAX_CONCURRENT_CALLS: String(MAX_CONCURRENCY + 2) },
      onProgress: (m) => process.stderr.write(`${m}\n`),
    });
    const key = await devKey(stack);
    const model = await api(stack, key, 'POST', '/v1/models', { name: 'stand-in', model: 'fake-model', base_url: llm.url, system_prompt: 'Answer in one short sentence.' });
    const agent = await api(stack, key, 'POST', '/v1/agents', {
      name: 'Bench',
      llm_id: model.body.id,
      transcriber: { provider: 'local' },
      tts: { provider: 'local', model: 'espeak-ng' },
      first_message: FIRST_MESSAGE,
      silence_timeout_seconds: 600,
    });
    const number = await api(stack, key, 'POST', '/v1/phone-numbers', { agent_id: agent.body.id, area_code: '415' });
    if (number.status !== 200) throw new Error(`purchase answered ${number.status}: ${JSON.stringify(number.body)}`);
    const to = number.body.phone_number as string;

    // Warm-up, not counted.
    await inboundCall(stack, to, '+15550100100');
    await webCall(stack, key, agent.body.id);

    const inbound: number[] = [];
    const web: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      inbound.push(await inboundCall(stack, to, `+1555010${String(1000 + i).slice(1)}`));
      web.push(await webCall(stack, key, agent.body.id));
      process.stderr.write(`call ${i + 1}/${CALLS}: inbound ${inbound.at(-1)!.toFixed(0)} ms, web ${web.at(-1)!.toFixed(0)} ms\n`);
    }

    const levels: { concurrency: number; first_audio_ms: ReturnType<typeof stats> }[] = [];
    const single = percentile(inbound, 50);
    let knee: number | null = null;
    for (let k = 1; k <= MAX_CONCURRENCY; k = k < 2 ? 2 : k + 2) {
      const v = await Promise.all(Array.from({ length: k }, (_, j) => inboundCall(stack!, to, `+1555020${String(1000 + k * 10 + j).slice(1)}`)));
      levels.push({ concurrency: k, first_audio_ms: stats(v) });
      process.stderr.write(`concurrency ${k}: p50 ${percentile(v, 50).toFixed(0)} ms\n`);
      if (knee === null && percentile(v, 50) > 2 * single) knee = k;
    }

    const result = {
      commit: execSync('git rev-parse HEAD', { cwd: ROOT }).toString().trim(),
      date: new Date().toISOString(),
      machine: { cores: os.cpus().length, model: os.cpus()[0]?.model, load_average: os.loadavg().map((l) => +l.toFixed(2)) },
      command: `npm run bench:inbound -- ${CALLS} ${MAX_CONCURRENCY}`,
      setup: { tts: 'local espeak-ng', stt: 'local pocketsphinx', llm: 'stand-in, 20 ms TTFT', caller: 'SIPp + decoded G.711 RTP', web_client: 'rtc-node' },
      invite_to_first_audio_ms: stats(inbound),
      post_calls_web_to_first_audio_ms: stats(web),
      concurrency: levels,
      latency_doubles_at_concurrency: knee,
      samples: { inbound: inbound.map((x) => +x.toFixed(1)), web: web.map((x) => +x.toFixed(1)) },
      wall_seconds: Math.round((Date.now() - started) / 1000),
    };
    mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
    const out = process.env.BENCH_OUT ?? path.join(ROOT, 'bench/results/inbound.json');
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify({ invite: result.invite_to_first_audio_ms, web: result.post_calls_web_to_first_audio_ms, concurrency: levels, knee }, null, 2));
  } finally {
    await disposeRtc();
    await stack?.stop();
    await llm.close();
  }
}

await main();
process.exit(0);
