// Voice benchmarks (docs/benchmarks.md). Providers have fixed, known latency (bench/support/fixed-providers.ts):
// endpointing 200 ms, LLM TTFT 200 ms, TTS first byte 100 ms, STT final 50 ms after the end of speech (inside
// the endpointing wait). Voice-to-voice is the end of the user's speech to the agent's first audio frame out;
// minus 500 ms of providers and endpointing, what is left is overhead.
//   node --expose-gc bench/voice-overhead.ts overhead [turns]     ours vs bare agents-js, same run, interleaved
//   node --expose-gc bench/voice-overhead.ts density ours|bare    sessions until p95 overhead doubles
//   node --expose-gc bench/voice-overhead.ts memory [minutes] [speed]   a long call, faster than real time
// `npm run bench:voice` runs all of them and writes bench/results/voice.json. "Bare" always runs in a process
// of its own where CallSession was never constructed, so agents-js there is unpatched (no race fix).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { VADEventType, initializeLogger, voice } from '@livekit/agents';
import { percentile } from '../shared/latency.ts';
import { InternalApiClient } from '../shared/internal-api.ts';
import { createLogger } from '../shared/logger.ts';
import { WorkerMetrics } from '../media-worker/src/metrics.ts';
import { CallSession } from '../media-worker/src/session/call-session.ts';
import { baseConfigForBench } from './support/bench-config.ts';
import { runInfo, writeResults } from './support/results.ts';
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

/** One process, one kind: a warm-up, then `turns` turns; prints the samples as a JSON line. */
async function overheadChild(kind: Kind, turns: number) {
  const r = await rig(kind);
  for (let i = 0; i < 3; i++) await turn(r); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < turns; i++) {
    const o = await turn(r);
    if (o !== null) samples.push(o);
  }
  await r.close();
  console.log(JSON.stringify({ samples, race_fix_installed: kind === 'ours' }));
}

/**
 * Ours against bare agents-js: `turns` turns each, in blocks of 25 that alternate between a bare process and
 * an ours process, so both see the same machine over the run and bare stays unpatched.
 */
function overhead(turns: number) {
  const res: Record<Kind, number[]> = { bare: [], ours: [] };
  const block = 25;
  for (let done = 0; done < turns; done += block) {
    for (const kind of (done / block) % 2 ? (['ours', 'bare'] as Kind[]) : (['bare', 'ours'] as Kind[])) {
      const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), 'overhead-child', kind, String(Math.min(block, turns - done))], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      const line = child.stdout.split('\n').find((l) => l.startsWith('{"samples"'));
      if (child.status !== 0 || !line) throw new Error(`overhead-child ${kind} failed (${String(child.status)})`);
      res[kind].push(...(JSON.parse(line) as { samples: number[] }).samples);
    }
  }
  const b = stats(res.bare);
  const o = stats(res.ours);
  const out = { bench: 'overhead', providers_ms: PROVIDERS_MS, bare: b, ours: o, delta_p50: +(o.p50 - b.p50).toFixed(1), delta_p95: +(o.p95 - b.p95).toFixed(1) };
  console.log(JSON.stringify(out));
  record('overhead', { ...out, samples: res });
}

async function density(kind: Kind, levels: number[], seconds: number) {
  let baseline = 0;
  const levelsOut: object[] = [];
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
    // At least `seconds`, and until 100 turns are in (a p95 needs them), at most 3 minutes per level.
    const end = Date.now() + seconds * 1000;
    const cap = Date.now() + 180_000;
    await Promise.all(
      rigs.map(async (r, i) => {
        await sleep((i * 1300) / n); // staggered, as real calls are
        while ((Date.now() < end || samples.length + misses < 100) && Date.now() < cap) {
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
    const level = { bench: 'density', kind, sessions: n, overhead: s, misses, mb_per_session: +((rss1 - rss0) / n / 1048576).toFixed(1), cpu_cores: +cpuShare.toFixed(2) };
    console.log(JSON.stringify(level));
    levelsOut.push(level);
    if (s.p95 > 2 * Math.max(baseline, 5) || misses > 0) {
      console.log(JSON.stringify({ bench: 'density', kind, knee_sessions: n, baseline_p95: baseline }));
      record(`density_${kind}`, { levels: levelsOut, knee_sessions: n, baseline_p95: baseline });
      return;
    }
  }
  record(`density_${kind}`, { levels: levelsOut, knee_sessions: null, baseline_p95: baseline });
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
  console.log(JSON.stringify({ bench: 'memory', kind, race_fix: kind === 'ours', node_flags: process.execArgv, sim_minutes: minutes, speed, turns, growth_heap_mb: last.heap_mb, growth_rss_mb: last.rss_mb, points }));
}

/** Adds one section to bench/results/voice.json (each mode runs in its own process under `npm run bench:voice`). */
function record(section: string, data: object) {
  const file = path.resolve(import.meta.dirname, 'results/voice.json');
  let doc: Record<string, unknown> = {};
  try {
    doc = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    // first section
  }
  const sections = { ...((doc.sections as Record<string, unknown> | undefined) ?? {}), [section]: { ...runInfo(), ...data } };
  writeResults('voice', { sections });
}

const [mode = 'overhead', a1, a2] = process.argv.slice(2);
if (mode === 'overhead') overhead(Number(a1 ?? 100));
else if (mode === 'overhead-child') await overheadChild(a1 as Kind, Number(a2 ?? 25));
else if (mode === 'density') await density((a1 as Kind) ?? 'ours', [1, 5, 10, 20, 30, 40], Number(a2 ?? 12));
else if (mode === 'memory-child') await memory(a1 as Kind, Number(a2 ?? 30), Number(process.argv[5] ?? 30));
else if (mode === 'memory') {
  // Each in its own process: the race fix is process-wide once installed. The third run is ours with the
  // young-generation cap job processes run with (JOB_MAX_SEMI_SPACE_MB, default 4; media-worker/src/main.ts).
  const runs: [Kind, string[]][] = [['bare', []], ['ours', []], ['ours', ['--max-semi-space-size=4']]];
  const out: object[] = [];
  for (const [kind, flags] of runs) {
    const res = spawnSync(process.execPath, ['--expose-gc', ...flags, fileURLToPath(import.meta.url), 'memory-child', kind, a1 ?? '30', a2 ?? '30'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    process.stdout.write(res.stdout);
    const line = res.stdout.split('\n').find((l) => l.startsWith('{"bench":"memory"'));
    if (res.status !== 0 || !line) process.exitCode = 1;
    else out.push(JSON.parse(line) as object);
  }
  record('memory', { runs: out });
}
await (api as { close(): Promise<void> } | null)?.close();
process.exit(process.exitCode ?? 0);
