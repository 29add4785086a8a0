// bench:inbound — an inbound phone call against a web call, in the same run, on the real local stack (LiveKit,
// SIP bridge, control plane, one media worker, local STT/TTS, an LLM stand-in):
//   - INVITE sent (SIPp) -> first audio of the first message at the caller (decoded RTP above a threshold);
//   - POST /v1/calls/web sent -> first audio of the first message at a WebRTC client (the baseline);
//   - concurrency: k inbound calls at once (k = 1, 2, 4, 6, ...), repeated until the level has at least
//     LEVEL_SAMPLES calls; the INVITE -> first audio p50 at each level, against the sequential p50: the last
//     level whose p50 stays within double it (and whose calls were all answered) is what one worker holds.
// Warm worker: one call of each kind runs first and is not counted. A p95 is given only over >= 100 samples
// (else null, "not claimed"). Load averages are recorded per phase: other work may share the machine.
// Usage: npm run bench:inbound [-- CALLS [MAX_CONCURRENCY]]     (defaults 100 and 10)
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { percentile } from '../shared/latency.ts';
import type { RunningStack } from '../scripts/stack/supervisor.ts';
import { createBenchAgent, createBenchModel, startBenchStack } from './support/bench-stack.ts';
import { startFakeOpenAI } from '../test/support/fake-openai.ts';
import { SipPhone } from '../test/support/sip-phone.ts';
import { RtcClient, disposeRtc, nowMs } from '../test/support/rtc-client.ts';
import { writeResults } from './support/results.ts';
import { api, devKey } from './support/room-call.ts';

const CALLS = Number(process.argv[2] ?? 100);
const MAX_CONCURRENCY = Number(process.argv[3] ?? 10);
const LEVEL_SAMPLES = 10;
const FIRST_MESSAGE = 'Hello, thank you for calling.';

const round = (x: number) => +x.toFixed(1);
/** p95 only over >= 100 samples: fewer do not support it. */
const stats = (v: number[]) =>
  v.length === 0
    ? { n: 0, p50: null, p95: null, max: null }
    : { n: v.length, p50: round(percentile(v, 50)), p95: v.length >= 100 ? round(percentile(v, 95)) : null, max: round(Math.max(...v)) };
const load = () => os.loadavg().map((l) => +l.toFixed(2));

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
    stack = await startBenchStack({ sip: true, env: { SIP_RINGING_TIMEOUT_SECONDS: '90', MAX_CONCURRENT_CALLS: String(MAX_CONCURRENCY + 2) } });
    const key = await devKey(stack);
    const agentId = await createBenchAgent(stack, key, {
      name: 'Bench',
      llm_id: await createBenchModel(stack, key, llm.url),
      transcriber: { provider: 'local' },
      tts: { provider: 'local', model: 'espeak-ng' },
      first_message: FIRST_MESSAGE,
      silence_timeout_seconds: 600,
    });
    const number = await api(stack, key, 'POST', '/v1/phone-numbers', { agent_id: agentId, area_code: '415' });
    if (number.status !== 200) throw new Error(`purchase answered ${number.status}: ${JSON.stringify(number.body)}`);
    const to = number.body.phone_number as string;

    // Warm-up, not counted.
    await inboundCall(stack, to, '+15550100100');
    await webCall(stack, key, agentId);

    const seriesLoad = { start: load(), end: [] as number[] };
    const seriesStarted = Date.now();
    const inbound: number[] = [];
    const web: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      inbound.push(await inboundCall(stack, to, `+1555010${String(1000 + (i % 1000)).slice(1)}`));
      web.push(await webCall(stack, key, agentId));
      process.stderr.write(`call ${i + 1}/${CALLS}: inbound ${inbound.at(-1)!.toFixed(0)} ms, web ${web.at(-1)!.toFixed(0)} ms\n`);
    }
    seriesLoad.end = load();
    const seriesSeconds = Math.round((Date.now() - seriesStarted) / 1000);

    // Concurrency: a failed call (refused, or no audio within a minute) counts against its level.
    const single = percentile(inbound, 50);
    const levels: { concurrency: number; rounds: number; first_audio_ms: ReturnType<typeof stats>; failed: number; doubled: boolean; load_average_at_end: number[] }[] = [];
    let held = 0;
    for (let k = 1; k <= MAX_CONCURRENCY; k = k < 2 ? 2 : k + 2) {
      const v: number[] = [];
      let failed = 0;
      const rounds = Math.ceil(LEVEL_SAMPLES / k);
      for (let r = 0; r < rounds; r++) {
        const results = await Promise.allSettled(Array.from({ length: k }, (_, j) => inboundCall(stack!, to, `+1555020${String(1000 + ((k * 100 + r * 10 + j) % 1000)).slice(1)}`)));
        for (const x of results) {
          if (x.status === 'fulfilled') v.push(x.value);
          else {
            failed++;
            process.stderr.write(`concurrency ${k}: a call failed: ${String(x.reason).split('\n')[0]}\n`);
          }
        }
      }
      const doubled = failed > 0 || v.length === 0 || percentile(v, 50) > 2 * single;
      levels.push({ concurrency: k, rounds, first_audio_ms: stats(v), failed, doubled, load_average_at_end: load() });
      process.stderr.write(`concurrency ${k}: p50 ${v.length ? percentile(v, 50).toFixed(0) : '-'} ms over ${v.length}, ${failed} failed\n`);
      if (doubled) break;
      held = k;
    }

    const file = writeResults('inbound', {
      setup: { tts: 'local espeak-ng', stt: 'local pocketsphinx', llm: 'stand-in, 20 ms TTFT', caller: 'SIPp + decoded G.711 RTP', web_client: 'rtc-node', workers: 1 },
      calls: CALLS,
      max_concurrency: MAX_CONCURRENCY,
      series: { pairs: CALLS, seconds: seriesSeconds, load_average_at_start: seriesLoad.start, load_average_at_end: seriesLoad.end },
      invite_to_first_audio_ms: stats(inbound),
      post_calls_web_to_first_audio_ms: stats(web),
      concurrency: { baseline_p50_ms: round(single), level_samples: LEVEL_SAMPLES, levels, held_without_doubling: held, stopped_at: levels.at(-1)?.concurrency ?? null },
      samples: { inbound: inbound.map(round), web: web.map(round) },
      wall_seconds: Math.round((Date.now() - started) / 1000),
    });
    console.log(readFileSync(file, 'utf8'));
  } finally {
    await disposeRtc();
    await stack?.stop();
    await llm.close();
  }
}

await main();
process.exit(0);
