// bench:realtime — voice to voice on a realtime (speech-to-speech) agent against a pipeline agent (STT -> LLM -> TTS)
// and against a bare agents-js realtime session, in one run, over real web calls (docs/benchmarks.md, "Realtime
// agents: voice to voice"). The supervisor starts Redis, LiveKit, the control plane (embedded PostgreSQL, dev org)
// and a media worker; a real rtc-node caller speaks synthesized questions (festival) and listens
// (bench/support/room-call.ts). Three arms, their calls interleaved (the order rotates each round) so the machine's
// load falls on all three alike:
//   - realtime: a vap agent whose model is OpenAI Realtime pointed at the local Realtime double
//     (test/support/fake-openai-realtime.ts) as the org's own server, server VAD ending a turn after 500 ms of
//     silence. The double's part of a turn: that silence (on the audio's clock) and its end of turn to first audio
//     delta (300-500 ms drawn, seeded, plus espeak-ng's synthesis of the answer);
//   - pipeline: a vap agent with the platform's default turn taking on stand-ins timed like the third parties they
//     replace (realtime/pipeline.ts: Deepgram, an OpenAI-compatible LLM and TTS). Their part: the STT's endpoint
//     delay, the LLM's first token and streaming, the TTS's first audio, summed;
//   - floor: a bare agents-js realtime session on the same double (realtime/floor-agent.ts: voice.AgentSession, the
//     openai plugin's RealtimeModel, agents-js's room I/O; no control plane, no vap worker code), dispatched through
//     LiveKit's API, called by the same caller with the same clips.
// Per turn, v2v runs from the end of the caller's speech to the first frame of the answer the caller hears; what is
// left after the doubles' part is the platform's (or bare agents-js's) and WebRTC's. The doubles' timings are the
// doubles', never OpenAI's or Deepgram's: the figures say what vap adds to them, not what a call with those
// providers takes. At least 100 turns per arm for a p95 (default 25 calls x 4 turns each).
//   npm run bench:realtime [-- CALLS TURNS]
// First: rtc-client quiets rtc-node's logger, which reads NODE_ENV when it loads.
import { disposeRtc, rms } from '../test/support/rtc-client.ts';
import { PortPicker } from '../scripts/stack/ports.ts';
import type { RunningStack } from '../scripts/stack/supervisor.ts';
import { createBenchAgent, createBenchModel, startBenchStack } from './support/bench-stack.ts';
import { startFakeOpenAI } from '../test/support/fake-openai.ts';
import { resample, synthesize, type Pcm } from '../test/support/speech.ts';
import { TURN_TAKING_DEFAULTS, delaysFor } from '../shared/turn-taking.ts';
import { api, devKey, roomCall, type Clip, type RoomTurn } from './support/room-call.ts';
import { writeResults } from './support/results.ts';
import { stopWorker, type Worker } from './first-audio/workers.ts';
import { armStats, difference, realtimeParts, round, type ArmTurn } from './realtime/arms.ts';
import { FLOOR_AGENT_NAME, floorCall, startFloorWorker } from './realtime/floor.ts';
import { STAND_INS, callConnection, scriptOf, standInParts, startPipelineStandIns } from './realtime/pipeline.ts';

const CALLS = Number(process.argv[2] ?? 25);
const TURNS = Number(process.argv[3] ?? 4);
const SILENCE_MS = 500;
const MODEL = 'gpt-realtime';
const VOICE = 'marin';
const FIRST_MESSAGE = 'Hello, thank you for calling. How can I help you today?';
const REPLY = 'Sure, I can help you with that.';
const QUESTIONS = ['What time do you open tomorrow morning?', 'Can I book a table for two people tonight?', 'Do you have parking near the office?', 'How much does a cleaning cost?'];
const SPEECH_RMS = 300;
const ARMS = ['realtime', 'pipeline', 'floor'] as const;
type Arm = (typeof ARMS)[number];

/** Start and end (ms from the clip's start) of its speech: its first and last 10 ms windows above the threshold. */
function speechSpan(pcm: Pcm): { start: number; end: number } {
  const step = pcm.sampleRate / 100;
  let start = -1;
  let end = 0;
  for (let at = 0; at < pcm.samples.length; at += step) {
    if (rms(pcm.samples.subarray(at, at + step)) <= SPEECH_RMS) continue;
    if (start < 0) start = at;
    end = Math.min(at + step, pcm.samples.length);
  }
  return { start: (Math.max(0, start) / pcm.sampleRate) * 1000, end: (end / pcm.sampleRate) * 1000 };
}

const double = await startFakeOpenAI({ ttftMs: 20, speaker: async (text) => resample(await synthesize(text, 'espeak-ng'), 24000).samples });
double.setRealtimeTranscriber(() => 'A question.');
double.setRealtimeResponder((turn) => {
  const fixed = /Say exactly [^"]*"([^"]*)"\s*$/.exec(turn.responseInstructions ?? '');
  return { text: fixed ? fixed[1]! : REPLY };
});
const standIns = await startPipelineStandIns(REPLY);
let stack: RunningStack | null = null;
let floorWorker: Worker | null = null;
try {
  const clips: (Clip & { speechStart48: number })[] = [];
  for (const text of QUESTIONS) {
    const pcm = await synthesize(text);
    const pcm48 = resample(pcm, 48000);
    const pcm16 = resample(pcm, 16000);
    const span = speechSpan(pcm48);
    clips.push({ text, pcm48, pcm16, speechEnd48: span.end, speechStart48: span.start, speechEnd16: speechSpan(pcm16).end, trailingMs: pcm48.samples.length / 48 - span.end });
  }
  stack = await startBenchStack({
    env: {
      RATE_LIMIT_PER_SECOND: '0',
      RATE_LIMIT_ORG_PER_SECOND: '0',
      // The pipeline's STT and TTS stand-ins as the operator's endpoints.
      DEEPGRAM_BASE_URL: standIns.deepgram.url,
      DEEPGRAM_API_KEY: 'stand-in',
      OPENAI_BASE_URL: standIns.llm.url,
      OPENAI_API_KEY: 'stand-in',
    },
  });
  const key = await devKey(stack);
  const must = (res: { status: number; body: unknown }, what: string) => {
    if (res.status >= 300) throw new Error(`${what} answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body as { id: string };
  };
  must(await api(stack, key, 'POST', '/v1/integrations', { name: 'openai', provider: 'openai', api_key: 'sk-org-openai-0123456789' }), 'POST /v1/integrations');
  const realtimeModel = must(
    await api(stack, key, 'POST', '/v1/models', {
      name: 'Realtime',
      model: MODEL,
      base_url: double.url,
      system_prompt: 'Answer in one short sentence.',
      realtime: { voice: VOICE, turn_detection: 'server_vad', silence_duration_ms: SILENCE_MS },
    }),
    'POST /v1/models (realtime)',
  );
  const textModelId = await createBenchModel(stack, key, standIns.llm.url);
  const realtimeAgentId = await createBenchAgent(stack, key, { name: 'Realtime bench', llm_id: realtimeModel.id, first_message: FIRST_MESSAGE, silence_timeout_seconds: 120 });
  // The platform's default turn taking: no turn_taking, no responsiveness.
  const pipelineAgentId = await createBenchAgent(stack, key, {
    name: 'Pipeline bench',
    llm_id: textModelId,
    transcriber: { provider: 'deepgram' },
    tts: { provider: 'openai', model: 'tts-1', voice_id: 'alloy' },
    first_message: FIRST_MESSAGE,
    silence_timeout_seconds: 120,
  });
  floorWorker = await startFloorWorker(stack, new PortPicker(), { realtimeUrl: double.url, model: MODEL, voice: VOICE, silenceMs: SILENCE_MS, greeting: FIRST_MESSAGE });

  const running = stack;
  let script = 0;
  /** One call of an arm: each turn's v2v, the doubles' part and the rest. */
  async function call(arm: Arm, turns: number, offset: number): Promise<ArmTurn[]> {
    const conns = double.realtime.length;
    if (arm === 'realtime') {
      const c = await roomCall(running, key, realtimeAgentId, clips, turns, offset, { waitForReport: false });
      return realtimeParts(double.realtime.slice(conns), c.turns, REPLY, SILENCE_MS);
    }
    if (arm === 'floor') {
      const c = await floorCall(running, clips, turns, offset);
      return realtimeParts(double.realtime.slice(conns), c.turns, REPLY, SILENCE_MS);
    }
    const from = standIns.deepgram.connections.length;
    const c = await roomCall(running, key, pipelineAgentId, clips, turns, offset, {
      waitForReport: false,
      // The STT stand-in is told what the caller will say (its realistic mode hears it with its own lags).
      beforeTurn: async (_i, clip) => (await callConnection(standIns.deepgram, from)).expectNext(scriptOf(clip, (clip as (typeof clips)[number]).speechStart48, ++script)),
    });
    const conn = await callConnection(standIns.deepgram, from);
    return c.turns.map((t: RoomTurn) => {
      const parts = standInParts(standIns, conn, t);
      return { v2v_ms: t.v2v_ms, double_ms: parts.stand_ins_ms, rest_ms: t.v2v_ms - parts.stand_ins_ms, stt_final_ms: parts.stt_final_ms, llm_ms: parts.llm_ms, tts_ms: parts.tts_ms };
    });
  }

  const results: Record<Arm, ArmTurn[]> = { realtime: [], pipeline: [], floor: [] };
  const failures: Record<Arm, string[]> = { realtime: [], pipeline: [], floor: [] };
  // One call of warm-up per arm (a job's first call loads its modules), not counted.
  for (const arm of ARMS) await call(arm, 1, 0);
  for (let c = 0; c < CALLS; c++) {
    // The arms take turns, each round starting with the next one.
    for (const arm of ARMS.map((_, i) => ARMS[(i + c) % ARMS.length]!)) {
      try {
        const turns = await call(arm, TURNS, c);
        results[arm].push(...turns);
        process.stderr.write(`call ${c + 1}/${CALLS} ${arm}: v2v ${turns.map((t) => t.v2v_ms.toFixed(0)).join(', ')} ms; doubles ${turns.map((t) => t.double_ms.toFixed(0)).join(', ')} ms\n`);
      } catch (err) {
        failures[arm].push(`call ${c + 1}: ${(err as Error).message}`);
        process.stderr.write(`call ${c + 1}/${CALLS} ${arm} failed: ${(err as Error).message}\n`);
      }
    }
  }
  const arms = Object.fromEntries(ARMS.map((a) => [a, armStats(results[a])])) as Record<Arm, Record<string, ReturnType<typeof armStats>[string]>>;
  const delays = delaysFor(0.5, TURN_TAKING_DEFAULTS.detection);
  writeResults('realtime', {
    calls: CALLS,
    turns_per_call: TURNS,
    order: 'per round, one call of each arm; the first arm rotates each round',
    failures,
    double: { what: 'the Realtime double (test/support/fake-openai-realtime.ts), not OpenAI', vad: 'server_vad', silence_duration_ms: SILENCE_MS, first_audio_ms: '300-500 (seeded) + espeak-ng synthesis' },
    stand_ins: { what: 'stand-ins of Deepgram and OpenAI (bench/realtime/pipeline.ts), not those services', ...STAND_INS },
    pipeline_turn_taking: { ...TURN_TAKING_DEFAULTS, ...delays, note: "the platform's defaults (responsiveness 0.5)" },
    floor: { what: 'bare agents-js: voice.AgentSession with the openai plugin realtime.RealtimeModel on the same double, agents-js room I/O, dispatched through LiveKit (no control plane, no vap worker code)', agent_name: FLOOR_AGENT_NAME },
    // double_ms: the doubles' part of a turn (realtime and floor: the VAD silence and the double's first audio;
    // pipeline: the stand-ins' STT endpoint, LLM and TTS, summed); rest_ms = v2v_ms - double_ms.
    arms,
    pipeline_minus_realtime_v2v: difference(arms.pipeline.v2v_ms!, arms.realtime.v2v_ms!),
    realtime_minus_floor: { v2v: difference(arms.realtime.v2v_ms!, arms.floor.v2v_ms!), rest: difference(arms.realtime.rest_ms!, arms.floor.rest_ms!) },
    samples: Object.fromEntries(ARMS.map((a) => [a, results[a].map((t) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, round(v)])))])),
  });
} finally {
  if (floorWorker) await stopWorker(floorWorker);
  await stack?.stop();
  await double.close();
  await standIns.close();
  await disposeRtc();
}
