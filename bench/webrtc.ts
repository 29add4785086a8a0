// Voice-to-voice over the real WebRTC path, next to the same loop with no room, in one run
// (docs/benchmarks.md, "Web calls over LiveKit"):
//   - room: the supervisor starts Redis, LiveKit, the control plane (its own embedded PostgreSQL, dev org)
//     and a media worker; the agent is created through the API, each call through POST /v1/calls/web, and a
//     real rtc-node client speaks synthesized questions (festival) and listens to the agent;
//   - no room: the worker's CallSession with the same providers, built the way the worker builds them, on a
//     phone-line input and a capture output (the voice benchmark's code path), in this process;
//   - the time from POST /v1/calls/web to the first audio of the first message at the client.
// Providers: pocketsphinx STT and espeak-ng TTS (local), the OpenAI-compatible stand-in with a fixed time to
// first token for the LLM. Voice-to-voice runs from the end of the last speech frame the client sent (the
// clip's own trailing silence excluded) to the first agent frame above the same speech threshold.
// Usage: node bench/webrtc.ts [calls] [turns per call]   (npm run bench:webrtc; defaults 30 calls x 5 turns:
// at least 30 calls for a p50 and 120 turns after the first for a p95; a p95 of fewer than 100 samples, or a
// p50 of fewer than 30, is printed as "n/a")
// First: rtc-client quiets rtc-node's logger, which reads NODE_ENV when it loads.
import { disposeRtc, rms } from '../test/support/rtc-client.ts';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { inference, initializeLogger } from '@livekit/agents';
import type { AudioFrame } from '@livekit/rtc-node';
import { percentile } from '../shared/latency.ts';
import { writeResults } from './support/results.ts';
import { InternalApiClient } from '../shared/internal-api.ts';
import { createLogger } from '../shared/logger.ts';
import type { CallConfig, CallLatency } from '../schemas/internal.ts';
import { nullSink } from '../media-worker/src/session/metrics-sink.ts';
import { createLLM, createSTT, createTTS } from '../media-worker/src/providers/index.ts';
import { TURN_TAKING_DEFAULTS, delaysFor } from '../shared/turn-taking.ts';
import { vadSilenceFor } from '../media-worker/src/session/mappings.ts';
import { CallSession } from '../media-worker/src/session/call-session.ts';
import { installRaceFix } from '../media-worker/src/session/race-fix.ts';
import type { TurnTiming } from '../media-worker/src/session/turn-trace.ts';
import type { RunningStack } from '../scripts/stack/supervisor.ts';
import { createBenchAgent, createBenchModel, startBenchStack } from './support/bench-stack.ts';
import { baseConfigForBench } from './support/bench-config.ts';
import { devKey, roomCall, type Clip, type RoomCall, type Turn } from './support/room-call.ts';
import { startFakeInternalApi } from '../test/support/fake-internal-api.ts';
import { startFakeOpenAI } from '../test/support/fake-openai.ts';
import { resample, synthesize, type Pcm } from '../test/support/speech.ts';
import { CaptureAudioOutput, LINE_RATE, LineAudioInput } from '../test/support/voice-io.ts';

const CALLS = Number(process.argv[2] ?? 30);
const TURNS = Number(process.argv[3] ?? 5);
const LLM_TTFT_MS = 200;
const RESPONSIVENESS = 1;
// The agent takes the default turn taking, with the delays of this responsiveness.
const ENDPOINTING_MS = delaysFor(RESPONSIVENESS, TURN_TAKING_DEFAULTS.detection).min_delay_ms;
/** Silero's minimum silence before it reports the end of speech (mappings.ts, vadSilenceFor). */
const VAD_MIN_SILENCE_MS = vadSilenceFor({ detection: TURN_TAKING_DEFAULTS.detection, min_delay_ms: ENDPOINTING_MS });
/** A 10 ms window counts as speech above this RMS (int16), on both sides (rtc-client's Recorder default). */
const SPEECH_RMS = 300;
const FIRST_MESSAGE = 'Hello, thank you for calling. How can I help you today?';
const REPLY = 'Sure, I can help you with that.';
const QUESTIONS = [
  'What time do you open tomorrow morning?',
  'Can I book a table for two people tonight?',
  'Do you have parking near the office?',
  'How much does a cleaning cost?',
];
const WORKER_LOG_LEVEL = process.env.BENCH_WORKER_LOG_LEVEL;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

initializeLogger({ pretty: false, level: 'error' });
installRaceFix();

/** End (ms from the clip's start) of its last 10 ms window above the speech threshold. */
function lastSpeechEndMs(pcm: Pcm): number {
  const step = pcm.sampleRate / 100;
  let end = 0;
  for (let at = 0; at < pcm.samples.length; at += step) {
    if (rms(pcm.samples.subarray(at, at + step)) > SPEECH_RMS) end = Math.min(at + step, pcm.samples.length);
  }
  return (end / pcm.sampleRate) * 1000;
}

/** Offset (ms) of the first 10 ms window above the speech threshold, or null. */
function firstSpeechOffsetMs(samples: Int16Array, sampleRate: number): number | null {
  const step = Math.max(1, Math.round(sampleRate / 100));
  for (let at = 0; at < samples.length; at += step) if (rms(samples.subarray(at, at + step)) > SPEECH_RMS) return (at / sampleRate) * 1000;
  return null;
}

/** The capture output, also noting when the first frame above the speech threshold would play. */
class SpeechCapture extends CaptureAudioOutput {
  firstSpeechAt: number | undefined;
  lastFrameAt = 0;
  playedUntil = 0;
  #segments = 0;
  #segmentMs = 0;

  override async captureFrame(frame: AudioFrame): Promise<void> {
    await super.captureFrame(frame);
    const now = performance.now();
    this.lastFrameAt = now;
    if (this.segmentStarts.length !== this.#segments) {
      this.#segments = this.segmentStarts.length;
      this.#segmentMs = 0;
    }
    const start = this.segmentStarts.at(-1)!;
    if (this.firstSpeechAt === undefined) {
      const off = firstSpeechOffsetMs(frame.data.subarray(0, frame.samplesPerChannel), frame.sampleRate);
      // The output plays in real time from the segment's first frame: this sample plays at start + offset.
      if (off !== null) this.firstSpeechAt = start + this.#segmentMs + off;
    }
    this.#segmentMs += (frame.samplesPerChannel / frame.sampleRate) * 1000;
    this.playedUntil = start + this.#segmentMs;
  }

  reset(): void {
    this.firstSpeechAt = undefined;
  }
}

async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
}

// ---- no room: the worker's CallSession on a phone-line input ----

let vad: inference.VAD | null = null;

interface InferenceExecutor {
  start(): Promise<void>;
  initialize(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The inference process agents-js gives a worker's jobs (and its console mode), for the end-of-turn model:
 * without one the v1-mini detector answers 1.0 at once, and the no-room turns would skip the model the
 * worker runs. agents-js does not export these classes, so they are loaded from its dist folder, registered
 * as its worker does (maybeRegisterLocalEotRunner in dist/worker.js).
 */
async function startTurnDetectorExecutor(): Promise<InferenceExecutor> {
  const dist = path.dirname(fileURLToPath(import.meta.resolve('@livekit/agents')));
  const load = (file: string) => import(pathToFileURL(path.join(dist, file)).href);
  const { InferenceRunner } = await load('inference_runner.js');
  const { EOT_INFERENCE_METHOD } = await load('inference/eot/runner.js');
  const { InferenceProcExecutor } = await load('ipc/inference_proc_executor.js');
  if (!InferenceRunner.registeredRunners[EOT_INFERENCE_METHOD]) {
    InferenceRunner.registerRunner(EOT_INFERENCE_METHOD, pathToFileURL(path.join(dist, 'inference/eot/runner.js')).href);
  }
  const executor = InferenceProcExecutor.createIfNeeded() as InferenceExecutor;
  await executor.start();
  await executor.initialize();
  return executor;
}

async function noRoomSession(clips: Clip[], llmUrl: string, api: Awaited<ReturnType<typeof startFakeInternalApi>>, executor: InferenceExecutor, id: string, offset: number): Promise<{ turns: Turn[]; latency: CallLatency; timing: TurnTiming[] }> {
  const base = baseConfigForBench(id);
  const config: CallConfig = {
    ...base,
    agent: { ...base.agent, responsiveness: RESPONSIVENESS, end_call_phrases: [], first_message: null, tts: { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' } },
    llm: { provider: 'openai', model: 'fake-model', base_url: llmUrl, temperature: null, max_tokens: null },
    tools: [],
  };
  // The same construction as media-worker/src/call/start.ts.
  vad ??= new inference.VAD({ minSilenceDuration: VAD_MIN_SILENCE_MS });
  const stt = createSTT({ ...config.agent.transcriber, language: config.agent.language }, {});
  const tts = createTTS(config.agent.tts, {}, { speed: 1, emotions: false, language: 'en-US' });
  // The stand-in is on loopback: a private model host the operator allows (shared/model-egress.ts).
  const llm = createLLM(config.llm, {}, { ...process.env, LLM_PRIVATE_HOSTS: '127.0.0.1' });
  const client = new InternalApiClient({ baseUrl: api.url, token: api.token });
  const call = new CallSession({
    config,
    models: { stt, llm, tts, vad, turnDetection: new inference.TurnDetector({ version: 'v1-mini', executor: executor as never }) },
    labels: { stt: { provider: 'local', model: stt.model }, llm: { provider: 'openai', model: 'fake-model' }, tts: { provider: 'local', model: tts.model } },
    reporter: client.reporter(id),
    api: client,
    metrics: nullSink,
    logger: createLogger('bench', 'error'),
  });
  const line = new LineAudioInput();
  const out = new SpeechCapture({ keepFrames: false });
  line.start();
  await call.start({ audioInput: line, audioOutput: out });
  await sleep(1000);
  const turns: Turn[] = [];
  for (let i = 0; i < TURNS; i++) {
    const clip = clips[(offset + i) % clips.length]!;
    out.reset();
    // say() resolves as the clip's last 20 ms frame goes out; frames go out at the end of their 20 ms.
    const sentAt = await line.say(clip.pcm16.samples);
    const frames = Math.ceil(clip.pcm16.samples.length / ((LINE_RATE * line.frameMs) / 1000));
    const speechEnd = sentAt - frames * line.frameMs + clip.speechEnd16;
    await waitFor(() => out.firstSpeechAt !== undefined, 20_000, `a reply (no room, turn ${i})`);
    turns.push({ v2v_ms: out.firstSpeechAt! - speechEnd });
    // The reply plays out (the output keeps real time), then a pause.
    await waitFor(() => performance.now() - out.lastFrameAt > 300 && performance.now() > out.playedUntil + 400, 20_000, 'the reply to play out');
  }
  const report = await call.end('user_hangup');
  await line.close();
  return { turns, latency: report.latency, timing: call.turnTrace.turns };
}

// ---- room: a web call through the API, the worker and LiveKit (bench/support/room-call.ts) ----

/** The worker's 'user turn timing' debug records, per job process (one call each). */
function workerTurnTimings(logDir: string): TurnTiming[][] {
  const byPid = new Map<number, TurnTiming[]>();
  for (const line of readFileSync(path.join(logDir, 'worker.log'), 'utf8').split('\n')) {
    if (!line.includes('"user turn timing"')) continue;
    try {
      const rec = JSON.parse(line.slice(line.indexOf('{'))) as TurnTiming & { pid: number };
      const { pid, ...t } = rec as TurnTiming & { pid: number; [k: string]: unknown };
      const list = byPid.get(pid) ?? [];
      list.push(t);
      byPid.set(pid, list);
    } catch {
      // not a JSON line
    }
  }
  return [...byPid.values()];
}

// ---- the run ----

// A p50 of fewer than 30 samples or a p95 of fewer than 100 is NaN (printed "n/a"), never a mean called a percentile.
const stats = (xs: number[]) => ({
  n: xs.length,
  p50: xs.length >= 30 ? +percentile(xs, 50).toFixed(1) : NaN,
  p95: xs.length >= 100 ? +percentile(xs, 95).toFixed(1) : NaN,
  min: +Math.min(...xs).toFixed(1),
  max: +Math.max(...xs).toFixed(1),
});
const median = (xs: number[]) => +percentile(xs, 50).toFixed(1);

async function main() {
  const started = Date.now();
  const llm = await startFakeOpenAI({ ttftMs: LLM_TTFT_MS });
  llm.setResponder((req) =>
    // The post-call analysis asks for JSON (not streamed); every turn of the agent gets the same short reply.
    req.stream ? { text: REPLY } : { text: JSON.stringify({ summary: 'Benchmark call.', outcome: 'benchmark' }), ttftMs: 0 },
  );
  const internal = await startFakeInternalApi();
  const clips: Clip[] = [];
  for (const text of QUESTIONS) {
    const pcm = await synthesize(text);
    const pcm48 = resample(pcm, 48000);
    const pcm16 = resample(pcm, LINE_RATE);
    const speechEnd48 = lastSpeechEndMs(pcm48);
    clips.push({ text, pcm48, pcm16, speechEnd48, speechEnd16: lastSpeechEndMs(pcm16), trailingMs: (pcm48.samples.length / 48) - speechEnd48 });
  }

  let stack: RunningStack | null = null;
  const executor = await startTurnDetectorExecutor();
  const room: RoomCall[] = [];
  const noRoom: { turns: Turn[]; latency: CallLatency; timing: TurnTiming[] }[] = [];
  let warmup: RoomCall | null = null;
  let failed = true;
  try {
    // BENCH_WORKER_LOG_LEVEL=debug logs each user turn's timing in the worker (and keeps the logs).
    stack = await startBenchStack({ env: WORKER_LOG_LEVEL ? { LOG_LEVEL: WORKER_LOG_LEVEL } : {} });
    const key = await devKey(stack);
    const agentId = await createBenchAgent(stack, key, {
      name: 'Bench',
      llm_id: await createBenchModel(stack, key, llm.url),
      transcriber: { provider: 'local' },
      tts: { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' },
      first_message: FIRST_MESSAGE,
      responsiveness: RESPONSIVENESS,
      silence_timeout_seconds: 120,
      max_duration_seconds: 600,
    });

    // A warm-up of each path (job process start, model loads, first festival/espeak runs), not counted.
    process.stderr.write('warm-up\n');
    warmup = await roomCall(stack, key, agentId, clips, 2, 0);
    await noRoomSession(clips, llm.url, internal, executor, 'call_warmup', 0);
    // Alternating, so both paths see the same machine.
    for (let c = 0; c < CALLS; c++) {
      process.stderr.write(`call ${c + 1}/${CALLS}\n`);
      room.push(await roomCall(stack, key, agentId, clips, TURNS, c));
      noRoom.push(await noRoomSession(clips, llm.url, internal, executor, `call_noroom_${c}`, c));
    }
    failed = false;
  } finally {
    await stack?.stop();
    // The services' logs stay when the run failed.
    if (stack && !failed && !WORKER_LOG_LEVEL) rmSync(stack.runDir, { recursive: true, force: true });
    else if (stack) process.stderr.write(`logs kept in ${stack.logDir}\n`);
    await executor.close();
    await llm.close();
    await internal.close();
    await disposeRtc();
  }

  // The first user turn of a call is reported apart: it is much slower in a fresh job (see docs/benchmarks.md).
  const roomV2v = room.flatMap((c) => c.turns.slice(1).map((t) => t.v2v_ms));
  const noRoomV2v = noRoom.flatMap((s) => s.turns.slice(1).map((t) => t.v2v_ms));
  const roomFirst = stats(room.map((c) => c.turns[0]!.v2v_ms));
  const noRoomFirst = stats(noRoom.map((s) => s.turns[0]!.v2v_ms));
  const eou = (xs: (CallLatency | null)[]) => median(xs.flatMap((l) => (l?.eou_delay.samples ? [l.eou_delay.p50_ms] : [])));
  const ttsRoom = median(room.flatMap((c) => (c.latency?.tts_ttfb.samples ? [c.latency.tts_ttfb.p50_ms] : [])));
  const ttsNoRoom = median(noRoom.map((s) => s.latency.tts_ttfb.p50_ms));
  const r = stats(roomV2v);
  const n = stats(noRoomV2v);
  // The fixed part: the VAD's minimum silence (it outlasts the 200 ms endpointing delay, which runs from the
  // end of speech, so the turn cannot end sooner), the LLM's time to first token, the TTS's first byte.
  const fixedRoom = Math.max(VAD_MIN_SILENCE_MS, ENDPOINTING_MS) + LLM_TTFT_MS + ttsRoom;
  const fixedNoRoom = Math.max(VAD_MIN_SILENCE_MS, ENDPOINTING_MS) + LLM_TTFT_MS + ttsNoRoom;
  const firstMessage = stats(room.map((c) => c.first_message_ms));
  const result = {
    bench: 'webrtc',
    at: new Date().toISOString(),
    wall_seconds: Math.round((Date.now() - started) / 1000),
    calls: CALLS,
    turns_per_call: TURNS,
    providers: {
      stt: 'local pocketsphinx (python3-pocketsphinx, streaming)',
      tts: 'local espeak-ng, voice en-us',
      llm: `OpenAI-compatible stand-in (test/support/fake-openai.ts), ${LLM_TTFT_MS} ms to first token`,
      vad: `Silero (inference.VAD), ${VAD_MIN_SILENCE_MS} ms minimum silence`,
      turn_detection: 'inference.TurnDetector v1-mini (local, in an inference process on both paths)',
      endpointing_ms: ENDPOINTING_MS,
      preemptive_generation: true,
    },
    speech_rms_threshold: SPEECH_RMS,
    clips: clips.map((c) => ({ text: c.text, speech_ms: +c.speechEnd48.toFixed(0), trailing_silence_ms: +c.trailingMs.toFixed(0) })),
    voice_to_voice: {
      room: r,
      no_room: n,
      room_minus_no_room: { p50: +(r.p50 - n.p50).toFixed(1), p95: +(r.p95 - n.p95).toFixed(1) },
      first_turn: { room: roomFirst, no_room: noRoomFirst },
      eou_delay_p50_ms: { room: eou(room.map((c) => c.latency)), no_room: eou(noRoom.map((s) => s.latency)) },
      tts_ttfb_p50_ms: { room: ttsRoom, no_room: ttsNoRoom },
      fixed_ms: { room: fixedRoom, no_room: fixedNoRoom },
      room_minus_fixed: { p50: +(r.p50 - fixedRoom).toFixed(1), p95: +(r.p95 - fixedRoom).toFixed(1) },
      no_room_minus_fixed: { p50: +(n.p50 - fixedNoRoom).toFixed(1), p95: +(n.p95 - fixedNoRoom).toFixed(1) },
    },
    first_message: {
      post_to_first_speech: firstMessage,
      post_to_first_frame: stats(room.flatMap((c) => (c.first_frame_ms === null ? [] : [c.first_frame_ms]))),
      create_ms: stats(room.map((c) => c.create_ms)),
      join_ms: stats(room.map((c) => c.join_ms)),
      cold_first_call_ms: warmup ? +warmup.first_message_ms.toFixed(1) : null,
    },
    agents_metrics: {
      room: room.map((c) => c.latency),
      no_room: noRoom.map((s) => s.latency),
    },
    // Per user turn, ms after the last speech: VAD end, STT final, EOT prediction, EOU decision.
    turn_timing: {
      no_room: noRoom.map((s) => s.timing),
      ...(stack && WORKER_LOG_LEVEL === 'debug' ? { room: workerTurnTimings(stack.logDir) } : {}),
    },
    samples: {
      room: room.map((c) => c.turns.map((t) => +t.v2v_ms.toFixed(1))),
      no_room: noRoom.map((s) => s.turns.map((t) => +t.v2v_ms.toFixed(1))),
      first_message: room.map((c) => +c.first_message_ms.toFixed(1)),
    },
  };
  writeResults('webrtc', result);

  const f = (x: number) => (Number.isNaN(x) ? 'n/a' : `${x.toFixed(0)} ms`);
  console.log(`
Voice-to-voice, turns 2-${TURNS} of each call (${r.n} room turns over ${CALLS} calls, ${n.n} no-room turns; same providers, same run)

| Path | p50 | p95 | max | minus fixed ${f(fixedRoom)} (p50 / p95) |
|---|---|---|---|---|
| No room (CallSession, line in / capture out) | ${f(n.p50)} | ${f(n.p95)} | ${f(n.max)} | ${f(n.p50 - fixedNoRoom)} / ${f(n.p95 - fixedNoRoom)} |
| WebRTC (client -> LiveKit -> worker -> LiveKit -> client) | ${f(r.p50)} | ${f(r.p95)} | ${f(r.max)} | ${f(r.p50 - fixedRoom)} / ${f(r.p95 - fixedRoom)} |
| **WebRTC - no room** | **${f(r.p50 - n.p50)}** | **${f(r.p95 - n.p95)}** | | |

First user turn of each call (${roomFirst.n} calls): room p50 ${f(roomFirst.p50)} / max ${f(roomFirst.max)}; no room p50 ${f(noRoomFirst.p50)} / max ${f(noRoomFirst.max)}.
agents-js end-of-utterance delay (median of per-call p50s): room ${f(result.voice_to_voice.eou_delay_p50_ms.room)}, no room ${f(result.voice_to_voice.eou_delay_p50_ms.no_room)}.

POST /v1/calls/web to the first message at the client (${firstMessage.n} calls; cold first call ${warmup ? f(warmup.first_message_ms) : 'n/a'}, not counted)

| | p50 | p95 | max |
|---|---|---|---|
| POST sent -> 201 | ${f(result.first_message.create_ms.p50)} | ${f(result.first_message.create_ms.p95)} | ${f(result.first_message.create_ms.max)} |
| 201 -> client connected | ${f(result.first_message.join_ms.p50)} | ${f(result.first_message.join_ms.p95)} | ${f(result.first_message.join_ms.max)} |
| POST sent -> first agent frame (any) | ${f(result.first_message.post_to_first_frame.p50)} | ${f(result.first_message.post_to_first_frame.p95)} | ${f(result.first_message.post_to_first_frame.max)} |
| **POST sent -> first speech of the first message** | **${f(firstMessage.p50)}** | **${f(firstMessage.p95)}** | ${f(firstMessage.max)} |

TTS first byte p50: room ${f(ttsRoom)}, no room ${f(ttsNoRoom)}. JSON: bench/results/webrtc.json (${result.wall_seconds} s).`);
}

await main();
process.exit(0);
