// Voice benchmarks (docs/benchmarks.md). Providers have fixed, known latency (bench/support/fixed-providers.ts):
// endpointing 200 ms, LLM TTFT 200 ms, TTS first byte 100 ms, STT final 50 ms after the end of speech (inside
// the endpointing wait). Voice-to-voice is the end of the user's speech to the agent's first audio frame out;
// minus 500 ms of providers and endpointing, what is left is overhead.
//   node --expose-gc bench/voice-overhead.ts overhead [turns]     ours vs bare agents-js, same run, alternating
//   node --expose-gc bench/voice-overhead.ts density              sessions until p95 overhead doubles
//   node --expose-gc bench/voice-overhead.ts memory [minutes] [speed]   a long call, faster than real time
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { VADEventType, initializeLogger, voice } from '@livekit/agents';
import { percentile } from '../shared/latency.ts';
import { InternalApiClient } from '../shared/internal-api.ts';
import { createLogger } from '../shared/logger.ts';
import { WorkerMetrics } from '../media-worker/src/metrics.ts';
import { CallSession } from '../media-worker/src/session/call-session.ts';
import { baseConfigForBench } from './support/bench-config.ts';
import { FixedSTT, FixedTTS, ScriptedVAD } from './support/fixed-providers.ts';
import { startFakeInternalApi } from '../test/support/fake-internal-api.ts';
import { CaptureAudioOutput, LineAudioInput } from '../test/support/voice-io.ts';

const ENDPOINTING_MS = 200;
const LLM_TTFT_MS = 200;
const TTS_TTFB_MS = 100;
const STT_DELAY_MS = 50;
const PROVIDERS_MS = ENDPOINTING_MS + LLM_TTFT_MS + TTS_TTFB_MS;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

initializeLogger({ pretty: false, level: 'error' });

type Kind = 'bare' | 'ours';
interface Rig {
  kind: Kind;
  line: LineAudioInput;
  out: CaptureAudioOutput;
  vad: ScriptedVAD;
  stt: FixedSTT;
  close(): Promise<void>;
}

let api: Awaited<ReturnType<typeof startFakeInternalApi>> | null = null;
const metrics = new WorkerMetrics();
let seq = 0;

async function rig(kind: Kind, opts: { speed?: number; sampleRate?: number; keepFrames?: boolean } = {}): Promise<Rig> {
  const vad = new ScriptedVAD();
  const stt = new FixedSTT();
  const tts = new FixedTTS({ ttfbMs: TTS_TTFB_MS });
  const llm = new voice.testing.FakeLLM([{ input: 'hello', content: 'Hi there, how can I help?', ttft: LLM_TTFT_MS }]);
  const line = new LineAudioInput({ speed: opts.speed ?? 1, sampleRate: opts.sampleRate ?? 16000 });
  const out = new CaptureAudioOutput({ keepFrames: opts.keepFrames ?? false });
  if (kind === 'bare') {
    const session = new voice.AgentSession({
      stt, llm, tts, vad,
      aecWarmupDuration: null,
      turnHandling: {
        turnDetection: 'vad',
        endpointing: { mode: 'fixed', minDelay: ENDPOINTING_MS, maxDelay: 1000 },
        interruption: { mode: 'vad' },
        preemptiveGeneration: { enabled: false },
      },
    });
    session.input.audio = line;
    session.output.audio = out;
    line.start();
    await session.start({ agent: new voice.Agent({ instructions: 'You are a helpful assistant.' }) });
    return { kind, line, out, vad, stt, close: async () => { await session.close(); await line.close(); } };
  }
  api ??= await startFakeInternalApi();
  const config = baseConfigForBench(`call_${++seq}`);
  const client = new InternalApiClient({ baseUrl: api.url, token: api.token });
  const call = new CallSession({
    config,
    models: { stt, llm, tts, vad, turnDetection: 'vad' },
    labels: { stt: { provider: 'fixed', model: 's' }, llm: { provider: 'fake', model: 'l' }, tts: { provider: 'fixed', model: 't' } },
    reporter: client.reporter(config.call.id),
    api: client,
    metrics,
    logger: createLogger('bench', 'error'),
    preemptiveGeneration: false,
  });
  line.start();
  await call.start({ audioInput: line, audioOutput: out });
  return { kind, line, out, vad, stt, close: async () => { await call.end('user_hangup'); await line.close(); } };
}

/** One user turn; resolves with the overhead in ms (or null if no reply came). */
async function turn(r: Rig, speechMs = 600): Promise<number | null> {
  r.vad.speech(VADEventType.START_OF_SPEECH);
  await sleep(speechMs);
  const before = r.out.segmentStarts.length;
  const t0 = performance.now();
  r.vad.speech(VADEventType.END_OF_SPEECH, speechMs);
  r.stt.finalAfter('hello', STT_DELAY_MS);
  const deadline = t0 + 5000;
  while (r.out.segmentStarts.length === before && performance.now() < deadline) await sleep(2);
  const t1 = r.out.segmentStarts[before];
  if (t1 === undefined) return null;
  await sleep(700); // the reply plays out
  return t1 - t0 - PROVIDERS_MS;
}

const stats = (xs: number[]) => ({ n: xs.length, p50: +percentile(xs, 50).toFixed(1), p95: +percentile(xs, 95).toFixed(1), max: +Math.max(...xs).toFixed(1) });

async function overhead(turns: number) {
  const bare = await rig('bare');
  const ours = await rig('ours');
  const res: Record<Kind, number[]> = { bare: [], ours: [] };
  for (let i = 0; i < 3; i++) { await turn(bare); await turn(ours); } // warm-up
  for (let i = 0; i < turns; i++) {
    for (const r of i % 2 ? [ours, bare] : [bare, ours]) {
      const o = await turn(r);
      if (o !== null) res[r.kind].push(o);
    }
  }
  await bare.close();
  await ours.close();
  const b = stats(res.bare);
  const o = stats(res.ours);
  console.log(JSON.stringify({ bench: 'overhead', providers_ms: PROVIDERS_MS, bare: b, ours: o, delta_p50: +(o.p50 - b.p50).toFixed(1), delta_p95: +(o.p95 - b.p95).toFixed(1) }));
}

async function density(kind: Kind, levels: number[], seconds: number) {
  let baseline = 0;
  for (const n of levels) {
    (globalThis as { gc?: () => void }).gc?.();
    const rss0 = process.memoryUsage().rss;
    const rigs: Rig[] = [];
    for (let i = 0; i < n; i++) rigs.push(await rig(kind));
    await sleep(1000);
    (globalThis as { gc?: () => void }).gc?.();
    const rss1 = process.memoryUsage().rss;
    const samples: number[] = [];
    let misses = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const end = Date.now() + seconds * 1000;
    await Promise.all(
      rigs.map(async (r, i) => {
        await sleep((i * 1300) / n); // staggered, as real calls are
        while (Date.now() < end) {
          const o = await turn(r);
          if (o === null) misses++;
          else samples.push(o);
          await sleep(300);
        }
      }),
    );
    const cpu = process.cpuUsage(cpu0);
    const cpuShare = (cpu.user + cpu.system) / 1000 / (performance.now() - t0);
    for (const r of rigs) await r.close();
    const s = stats(samples);
    if (n === levels[0]) baseline = s.p95;
    console.log(JSON.stringify({ bench: 'density', kind, sessions: n, overhead: s, misses, mb_per_session: +((rss1 - rss0) / n / 1048576).toFixed(1), cpu_cores: +cpuShare.toFixed(2) }));
    if (s.p95 > 2 * Math.max(baseline, 5) || misses > 0) {
      console.log(JSON.stringify({ bench: 'density', kind, knee_sessions: n, baseline_p95: baseline }));
      break;
    }
  }
}

async function memory(kind: Kind, minutes: number, speed: number) {
  // 48 kHz input, as a WebRTC track delivers it.
  const r = await rig(kind, { speed, sampleRate: 48000 });
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  await sleep(500);
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const rss0 = process.memoryUsage().rss;
  const start = performance.now();
  const points: { sim_min: number; heap_mb: number; rss_mb: number }[] = [];
  let nextPoint = 0;
  let turns = 0;
  while (true) {
    const simMin = ((performance.now() - start) * speed) / 60000;
    if (simMin >= nextPoint) {
      gc();
      const m = process.memoryUsage();
      points.push({ sim_min: Math.round(simMin), heap_mb: +((m.heapUsed - heap0) / 1048576).toFixed(1), rss_mb: +((m.rss - rss0) / 1048576).toFixed(1) });
      nextPoint += 5;
    }
    if (simMin >= minutes) break;
    if ((await turn(r, 300)) !== null) turns++;
    await sleep(500);
  }
  await r.close();
  const last = points.at(-1)!;
  console.log(JSON.stringify({ bench: 'memory', kind, race_fix: kind === 'ours', sim_minutes: minutes, speed, turns, growth_heap_mb: last.heap_mb, growth_rss_mb: last.rss_mb, points }));
}

const [mode = 'overhead', a1, a2] = process.argv.slice(2);
if (mode === 'overhead') await overhead(Number(a1 ?? 40));
else if (mode === 'density') await density((a1 as Kind) ?? 'ours', [1, 5, 10, 20, 30, 40], Number(a2 ?? 12));
else if (mode === 'memory-child') await memory(a1 as Kind, Number(a2 ?? 30), Number(process.argv[5] ?? 30));
else if (mode === 'memory') {
  // Each in its own process: the race fix is process-wide once installed.
  for (const kind of ['bare', 'ours'] as Kind[]) {
    const res = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), 'memory-child', kind, a1 ?? '30', a2 ?? '30'], { stdio: 'inherit' });
    if (res.status !== 0) process.exitCode = 1;
  }
}
await (api as { close(): Promise<void> } | null)?.close();
process.exit(process.exitCode ?? 0);
