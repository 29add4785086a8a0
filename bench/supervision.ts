// bench:supervision — how soon a supervisor's action reaches a caller on a real web call (docs/benchmarks.md,
// "Supervising a live call"). The supervisor starts Redis, LiveKit, the control plane (its own embedded PostgreSQL,
// dev org) and a media worker; each call is POST /v1/calls/web with a real rtc-node caller who hears the agent.
// Per call, after the greeting:
//   - say_ms: POST /v1/calls/{id}/control {say, when: now} sent -> the caller hears the agent's first speech frame
//     (the POST, the record and audit, the nudge to the worker, its fetch of the action, TTS, WebRTC);
//   - takeover_quiet_ms: while the agent speaks a long sentence, POST {takeover} sent -> the last frame of the
//     agent's speech the caller hears (followed by 1.5 s of silence);
//   - the floor, in the same room: a bare rtc-node participant's microphone. floor_start_ms: its first tone sample
//     leaves its source -> the caller hears it; floor_stop_ms: its first silent sample leaves -> the caller hears
//     its last tone frame. This is what WebRTC alone costs; the platform's figures above include it.
// TTS is espeak-ng (local), the LLM the OpenAI-compatible stand-in (the agent is never asked to reply). At least 100
// calls for a p95 (default 100); calls run one at a time.
//   npm run bench:supervision [-- CALLS]
// First: rtc-client quiets rtc-node's logger, which reads NODE_ENV when it loads.
import { RtcClient, disposeRtc, nowMs, roomToken, type Recorder } from '../test/support/rtc-client.ts';
import { percentile } from '../shared/latency.ts';
import type { RunningStack } from '../scripts/stack/supervisor.ts';
import { createBenchAgent, createBenchModel, startBenchStack } from './support/bench-stack.ts';
import { startFakeOpenAI } from '../test/support/fake-openai.ts';
import { api, devKey } from './support/room-call.ts';
import { writeResults } from './support/results.ts';

const CALLS = Number(process.argv[2] ?? 100);
const SAY = 'One moment please, a colleague is checking that for you.';
const LONG = 'Let me read you the whole list of our opening hours, one day at a time, from Monday morning to Sunday evening, so that you know exactly when you can reach us, and when somebody will be at the front desk to answer.';
const QUIET_MS = 1500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (x: number) => Math.round(x * 10) / 10;

function stats(v: number[]) {
  return {
    n: v.length,
    p50_ms: v.length >= 30 ? round(percentile(v, 50)) : null,
    p95_ms: v.length >= 100 ? round(percentile(v, 95)) : null,
    max_ms: v.length ? round(Math.max(...v)) : null,
  };
}

/** A 440 Hz tone at 48 kHz, 10 ms. */
function toneFrame(offset: number): Int16Array {
  const f = new Int16Array(480);
  for (let i = 0; i < f.length; i++) f[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (offset + i)) / 48000));
  return f;
}

/** A bare participant's microphone: silence or a tone, frame by frame; when each switch left the source. */
class FloorMic {
  tone = false;
  toneLeftAt: number | undefined;
  silenceLeftAt: number | undefined;
  #running = true;
  readonly #loop: Promise<void>;
  constructor(client: RtcClient) {
    this.#loop = (async () => {
      let n = 0;
      let was = false;
      while (this.#running) {
        const tone = this.tone;
        const queuedMs = await client.sendFrame(tone ? toneFrame(n++ * 480) : new Int16Array(480));
        // The frame leaves once what is queued ahead of it has played (rtc-client's sendFrame).
        if (tone && !was) this.toneLeftAt = nowMs() + queuedMs - 10;
        if (!tone && was) this.silenceLeftAt = nowMs() + queuedMs - 10;
        was = tone;
      }
    })();
  }
  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }
}

/** Waits until the recorder has heard speech and then `QUIET_MS` of silence. */
async function quiet(rec: Recorder, what: string): Promise<void> {
  await rec.until(() => rec.lastSpeechAt !== undefined && nowMs() - rec.lastSpeechAt >= QUIET_MS, 60_000, what);
}

interface Sample {
  call_id: string;
  say_ms: number;
  say_post_ms: number;
  takeover_quiet_ms: number;
  takeover_post_ms: number;
  floor_start_ms: number;
  floor_stop_ms: number;
}

async function oneCall(stack: RunningStack, key: string, agentId: string, i: number): Promise<Sample> {
  const created = await api(stack, key, 'POST', '/v1/calls/web', { agent_id: agentId });
  if (created.status !== 201) throw new Error(`POST /v1/calls/web answered ${created.status}: ${JSON.stringify(created.body)}`);
  const callId = created.body.id as string;
  const caller = await RtcClient.join(created.body.server_url, created.body.participant_token);
  let floor: RtcClient | null = null;
  let floorMic: FloorMic | null = null;
  const control = async (body: Record<string, unknown>) => {
    const t0 = nowMs();
    const res = await api(stack, key, 'POST', `/v1/calls/${callId}/control`, body);
    if (res.status !== 200) throw new Error(`control ${String(body.action)} answered ${res.status}: ${JSON.stringify(res.body)}`);
    return { t0, post_ms: nowMs() - t0 };
  };
  try {
    await caller.publishMicrophone();
    const agentParticipant = await caller.waitForParticipant(undefined, 60_000);
    const agent = caller.record({ from: agentParticipant.identity });
    await agent.utterance({ silenceMs: 800, timeoutMs: 60_000 });

    // The floor: a bare participant's tone, on and off.
    floor = await RtcClient.join(created.body.server_url, await roomToken(stack, created.body.room_name, `floor-${i}`));
    await floor.publishMicrophone();
    const heardFloor = caller.record({ from: `floor-${i}` });
    floorMic = new FloorMic(floor);
    await sleep(500);
    floorMic.tone = true;
    await heardFloor.until(() => heardFloor.firstSpeechAt !== undefined, 20_000, 'the floor tone');
    await sleep(300);
    floorMic.tone = false;
    await quiet(heardFloor, 'the floor tone to stop');
    const floor_start_ms = heardFloor.firstSpeechAt! - floorMic.toneLeftAt!;
    const floor_stop_ms = heardFloor.lastSpeechAt! - floorMic.silenceLeftAt!;

    // say, with the agent idle.
    agent.reset();
    const say = await control({ action: 'say', text: SAY, when: 'now' });
    await agent.until(() => agent.firstSpeechAt !== undefined, 30_000, 'the say');
    const say_ms = agent.firstSpeechAt! - say.t0;
    await quiet(agent, 'the say to end');

    // takeover, while the agent speaks.
    agent.reset();
    await control({ action: 'say', text: LONG, when: 'now' });
    await agent.until(() => agent.firstSpeechAt !== undefined && nowMs() - agent.firstSpeechAt >= 600, 30_000, 'the long say');
    const takeover = await control({ action: 'takeover' });
    await quiet(agent, 'the agent to go quiet');
    const takeover_quiet_ms = agent.lastSpeechAt! - takeover.t0;
    await control({ action: 'hand_back' });
    return { call_id: callId, say_ms, say_post_ms: say.post_ms, takeover_quiet_ms, takeover_post_ms: takeover.post_ms, floor_start_ms, floor_stop_ms };
  } finally {
    await floorMic?.stop();
    await floor?.leave().catch(() => {});
    await caller.leave().catch(() => {});
    await api(stack, key, 'POST', `/v1/calls/${callId}/stop`).catch(() => {});
  }
}

const llm = await startFakeOpenAI({ ttftMs: 200 });
llm.setResponder(() => ({ text: 'Sure.' }));
let stack: RunningStack | null = null;
const samples: Sample[] = [];
const failures: string[] = [];
try {
  stack = await startBenchStack({ env: { RATE_LIMIT_PER_SECOND: '0', RATE_LIMIT_ORG_PER_SECOND: '0' } });
  const key = await devKey(stack);
  const agentId = await createBenchAgent(stack, key, {
    name: 'Bench',
    llm_id: await createBenchModel(stack, key, llm.url),
    transcriber: { provider: 'local' },
    tts: { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' },
    first_message: 'Hello.',
    silence_timeout_seconds: 120,
  });
  for (let i = 0; i < CALLS; i++) {
    try {
      const s = await oneCall(stack, key, agentId, i);
      samples.push(s);
      process.stderr.write(`call ${i + 1}/${CALLS}: say ${s.say_ms.toFixed(0)} ms, takeover quiet ${s.takeover_quiet_ms.toFixed(0)} ms, floor ${s.floor_start_ms.toFixed(0)}/${s.floor_stop_ms.toFixed(0)} ms\n`);
    } catch (err) {
      failures.push(`call ${i + 1}: ${(err as Error).message}`);
      process.stderr.write(`call ${i + 1}/${CALLS} failed: ${(err as Error).message}\n`);
    }
  }
  const col = (k: keyof Sample) => samples.map((s) => s[k] as number);
  writeResults('supervision', {
    calls: CALLS,
    calls_measured: samples.length,
    failures,
    tts: 'espeak-ng (local)',
    say_ms: stats(col('say_ms')),
    say_post_ms: stats(col('say_post_ms')),
    takeover_quiet_ms: stats(col('takeover_quiet_ms')),
    takeover_post_ms: stats(col('takeover_post_ms')),
    floor_start_ms: stats(col('floor_start_ms')),
    floor_stop_ms: stats(col('floor_stop_ms')),
    samples,
  });
} finally {
  await stack?.stop();
  await llm.close();
  await disposeRtc();
}
