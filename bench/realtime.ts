// bench:realtime — voice to voice on a realtime (speech-to-speech) agent over a real web call (docs/benchmarks.md,
// "Realtime agents: voice to voice"). The supervisor starts Redis, LiveKit, the control plane (embedded PostgreSQL,
// dev org) and a media worker; the agent's model is OpenAI Realtime pointed at the local Realtime double
// (test/support/fake-openai-realtime.ts) as the org's own server, with server VAD ending a turn after 500 ms of
// silence. A real rtc-node caller speaks synthesized questions (festival) and listens (bench/support/room-call.ts).
//   - v2v: the end of the caller's speech to the first frame of the agent's answer the caller hears;
//   - the double's own part, in the same turns: its VAD silence (500 ms, on the audio's clock) and its time from the
//     end of the turn to its first audio delta (300-500 ms drawn by the double, plus espeak-ng's synthesis of the
//     answer). What is left is the platform's and WebRTC's: the worker's audio in and out, and the rooms.
// The double's timing is the double's, never OpenAI's: the figures say what vap adds to a speech-to-speech
// provider, not what a call with OpenAI takes. At least 100 turns for a p95 (default 25 calls x 4 turns).
//   npm run bench:realtime [-- CALLS TURNS]
// First: rtc-client quiets rtc-node's logger, which reads NODE_ENV when it loads.
import { disposeRtc, rms } from '../test/support/rtc-client.ts';
import { percentile } from '../shared/latency.ts';
import { startStack, type RunningStack } from '../scripts/stack/supervisor.ts';
import { startFakeOpenAI } from '../test/support/fake-openai.ts';
import { resample, synthesize, type Pcm } from '../test/support/speech.ts';
import { api, devKey, roomCall, type Clip } from './support/room-call.ts';
import { writeResults } from './support/results.ts';

const CALLS = Number(process.argv[2] ?? 25);
const TURNS = Number(process.argv[3] ?? 4);
const SILENCE_MS = 500;
const FIRST_MESSAGE = 'Hello, thank you for calling. How can I help you today?';
const REPLY = 'Sure, I can help you with that.';
const QUESTIONS = ['What time do you open tomorrow morning?', 'Can I book a table for two people tonight?', 'Do you have parking near the office?', 'How much does a cleaning cost?'];
const SPEECH_RMS = 300;
const round = (x: number) => Math.round(x * 10) / 10;
function stats(v: number[]) {
  return { n: v.length, p50_ms: v.length >= 30 ? round(percentile(v, 50)) : null, p95_ms: v.length >= 100 ? round(percentile(v, 95)) : null, mean_ms: v.length ? round(v.reduce((a, b) => a + b, 0) / v.length) : null };
}

/** End (ms from the clip's start) of its last 10 ms window above the speech threshold. */
function lastSpeechEndMs(pcm: Pcm): number {
  const step = pcm.sampleRate / 100;
  let end = 0;
  for (let at = 0; at < pcm.samples.length; at += step) if (rms(pcm.samples.subarray(at, at + step)) > SPEECH_RMS) end = Math.min(at + step, pcm.samples.length);
  return (end / pcm.sampleRate) * 1000;
}

const fake = await startFakeOpenAI({ ttftMs: 20, speaker: async (text) => resample(await synthesize(text, 'espeak-ng'), 24000).samples });
fake.setRealtimeTranscriber(() => 'A question.');
fake.setRealtimeResponder((turn) => {
  const fixed = /Say exactly [^"]*"([^"]*)"\s*$/.exec(turn.responseInstructions ?? '');
  return { text: fixed ? fixed[1]! : REPLY };
});
let stack: RunningStack | null = null;
try {
  const clips: Clip[] = [];
  for (const text of QUESTIONS) {
    const pcm = await synthesize(text);
    const pcm48 = resample(pcm, 48000);
    const pcm16 = resample(pcm, 16000);
    const speechEnd48 = lastSpeechEndMs(pcm48);
    clips.push({ text, pcm48, pcm16, speechEnd48, speechEnd16: lastSpeechEndMs(pcm16), trailingMs: pcm48.samples.length / 48 - speechEnd48 });
  }
  stack = await startStack({
    freePorts: true,
    redis: 'own',
    sip: false,
    controlPlane: true,
    worker: true,
    logLevel: 'warn',
    env: { NODE_ENV: 'development', SSRF_ALLOWLIST: '127.0.0.1,localhost', RATE_LIMIT_PER_SECOND: '0', RATE_LIMIT_ORG_PER_SECOND: '0' },
    onProgress: (m) => process.stderr.write(`${m}\n`),
  });
  const key = await devKey(stack);
  const must = (res: { status: number; body: unknown }, what: string) => {
    if (res.status >= 300) throw new Error(`${what} answered ${res.status}: ${JSON.stringify(res.body)}`);
    return res.body as { id: string };
  };
  must(await api(stack, key, 'POST', '/v1/integrations', { name: 'openai', provider: 'openai', api_key: 'sk-org-openai-0123456789' }), 'POST /v1/integrations');
  const model = must(
    await api(stack, key, 'POST', '/v1/models', {
      name: 'Realtime',
      model: 'gpt-realtime',
      base_url: fake.url,
      system_prompt: 'Answer in one short sentence.',
      realtime: { voice: 'marin', turn_detection: 'server_vad', silence_duration_ms: SILENCE_MS },
    }),
    'POST /v1/models',
  );
  const agent = must(await api(stack, key, 'POST', '/v1/agents', { name: 'Realtime bench', llm_id: model.id, first_message: FIRST_MESSAGE, silence_timeout_seconds: 120 }), 'POST /v1/agents');

  const v2v: number[] = [];
  const doubleFirstAudio: number[] = [];
  const platform: number[] = [];
  const failures: string[] = [];
  // One call of warm-up (the worker's first job loads its modules), not counted.
  await roomCall(stack, key, agent.id, clips, 1, 0, { waitForReport: false });
  for (let c = 0; c < CALLS; c++) {
    const before = fake.realtime.length;
    try {
      const call = await roomCall(stack, key, agent.id, clips, TURNS, c, { waitForReport: false });
      // The double's answers to this call's turns, in order (its first response is the greeting).
      const conn = fake.realtime.slice(before).find((x) => x.responses.some((r) => r.text === REPLY));
      const answers = (conn?.responses ?? []).filter((r) => r.text === REPLY && r.firstAudioAt !== undefined);
      if (answers.length !== call.turns.length) throw new Error(`${call.turns.length} turns heard, ${answers.length} answers sent by the double`);
      call.turns.forEach((t, i) => {
        const own = answers[i]!.firstAudioAt! - answers[i]!.turnEndedAt;
        v2v.push(t.v2v_ms);
        doubleFirstAudio.push(own);
        platform.push(t.v2v_ms - SILENCE_MS - own);
      });
      process.stderr.write(`call ${c + 1}/${CALLS}: v2v ${call.turns.map((t) => t.v2v_ms.toFixed(0)).join(', ')} ms\n`);
    } catch (err) {
      failures.push(`call ${c + 1}: ${(err as Error).message}`);
      process.stderr.write(`call ${c + 1}/${CALLS} failed: ${(err as Error).message}\n`);
    }
  }
  writeResults('realtime', {
    calls: CALLS,
    turns_per_call: TURNS,
    failures,
    double: { vad: 'server_vad', silence_duration_ms: SILENCE_MS, first_audio_ms: '300-500 (seeded) + espeak-ng synthesis' },
    v2v_ms: stats(v2v),
    double_first_audio_ms: stats(doubleFirstAudio),
    platform_and_webrtc_ms: stats(platform),
    samples: v2v.map((v, i) => ({ v2v_ms: round(v), double_first_audio_ms: round(doubleFirstAudio[i]!), platform_and_webrtc_ms: round(platform[i]!) })),
  });
} finally {
  await stack?.stop();
  await fake.close();
  await disposeRtc();
}
