// The turn-taking rig: real WebRTC calls (LiveKit server, control plane, media worker, from the stack
// supervisor) with an rtc-node caller that speaks corpus utterances and listens to the agent. The third
// parties are local stand-ins on their wire protocols: Deepgram's streaming STT (labels as transcripts),
// the OpenAI chat completions (fixed time to first token) and speech (fixed time to first byte).
// Shared by the benchmark (run.ts) and the behavioural tests (test/e2e/turn-taking.test.ts).
// First: rtc-client quiets rtc-node's logger, which reads NODE_ENV when it loads.
import { RtcClient, nowMs } from '../../test/support/rtc-client.ts';
import { AgentEar, type Ear } from './ear.ts';
import { api } from './rig-records.ts';
import { startStack, type RunningStack } from '../../scripts/stack/supervisor.ts';
import { startFakeDeepgram, type FakeDeepgram, type Script, type SttConnection } from '../../test/support/fake-deepgram.ts';
import { lastUserText, startFakeOpenAI, type ChatRequest, type FakeOpenAI } from '../../test/support/fake-openai.ts';
import { concatSamples, resample, synthesize, type Pcm } from '../../test/support/speech.ts';
import { mixSeed } from '../../test/support/seeded-random.ts';
import { Mic, type LineSource } from '../support/mic.ts';
import { CORPUS_RATE, SPEECH_RMS, itemPcm, ms, speechBounds, type CorpusItem } from './corpus.ts';
import { devKey } from '../support/room-call.ts';
import type { TurnTaking } from '../../shared/turn-taking.ts';

export const LLM_TTFT_MS = 200;
export const TTS_TTFB_MS = 100;
/** Between streamed tokens: a fast hosted model (about 60 tokens/s). */
export const LLM_TOKEN_MS = 15;
export const STT_FINAL_DELAY_MS = 200;
// A gap in the agent's audio this long means it stopped: STOP_GAP_MS, in ear.ts (re-exported below).
export { STOP_GAP_MS } from './ear.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const FIRST_MESSAGE = 'Hello, how can I help?';
/** Asked to make the agent talk for a while (barge-in and backchannel trials). */
export const LONG_QUESTION = 'Tell me about your opening hours please.';
const SHORT_REPLY = 'Sure, one moment.';
const LONG_REPLY =
  'Our opening hours are nine in the morning to five in the evening on weekdays. On Saturdays we open from ten until four in the afternoon. We are closed on Sundays and on public holidays.';
/** Each reply starts with a tag naming its request, so the calls' transcripts show which replies were used. */
const TAG = /\bR(\d+),\s*/;

export type TurnTakingConfig = {
  detection: 'vad' | 'model' | 'transcript' | 'stt';
  endpointing: 'fixed' | 'dynamic';
  min_delay_ms: number;
  max_delay_ms: number;
  preemptive_generation: boolean;
  ignore_backchannels: boolean;
  barge_in: TurnTaking['barge_in'];
};

export interface Rig {
  stack: RunningStack;
  key: string;
  deepgram: FakeDeepgram;
  llm: FakeOpenAI;
  modelId: string;
  /** Speech of the long question, at CORPUS_RATE. */
  longQuestion: { pcm: Pcm; script: Script; speechEndMs: number };
  /** The long reply's spoken length (ms), as the TTS stand-in plays it. */
  longReplyMs: number;
  close(opts?: { keepLogs?: boolean }): Promise<void>;
}

// ---- the agent's voice: espeak-ng clips of the reply sentences, synthesized once ----

const speechCache = new Map<string, Int16Array>();

async function speak24k(text: string): Promise<Int16Array> {
  const key = text.replace(TAG, '').trim();
  let pcm = speechCache.get(key);
  if (!pcm) {
    // Trimmed to the speech (20 ms kept each side): espeak-ng's own leading and trailing silence would read
    // as a late start and as a stop between sentences.
    const raw = resample(await synthesize(key || 'okay', 'espeak-ng'), 24000);
    const [a, b] = speechBounds(raw);
    pcm = raw.samples.slice(Math.max(0, a - 480), Math.min(raw.samples.length, b + 480));
    speechCache.set(key, pcm);
  }
  return pcm;
}

/** The agent's long reply as the TTS stand-in speaks it (24 kHz, its sentences one after the other). */
export async function longReplyPcm(): Promise<Int16Array> {
  return concatSamples(...(await Promise.all(sentences(LONG_REPLY).map((s) => speak24k(s)))));
}

/** Sentences of a reply as agents-js's tokenizer will hand them to a non-streaming TTS. */
function sentences(text: string): string[] {
  return text.match(/[^.!?]+[.!?]+/g)?.map((s) => s.trim()) ?? [text];
}

/**
 * The long reply answers the long question only ("opening" or "hours": the offline STT hears one of them). No
 * corpus utterance has either word, so the answer to a barge-in is the short reply, and a reply heard nearly
 * whole after a barge-in can only be the long one resumed.
 */
export function wantsLongReply(userText: string): boolean {
  return /\b(opening|hours)\b/i.test(userText);
}

// The control plane's API as the rig's key: rig-records.ts (re-exported below).

/** `sip`: the stack runs the LiveKit SIP bridge too, for calls on a purchased number (sip-caller.ts). */
export async function startRig(opts: { onProgress?: (m: string) => void; workerLogLevel?: string; replyTags?: boolean; sip?: boolean } = {}): Promise<Rig> {
  const progress = opts.onProgress ?? (() => {});
  const deepgram = await startFakeDeepgram({ finalDelayMs: STT_FINAL_DELAY_MS });
  const llm = await startFakeOpenAI({ ttftMs: LLM_TTFT_MS, ttsTtfbMs: TTS_TTFB_MS, chunkDelayMs: LLM_TOKEN_MS, speaker: speak24k });
  llm.setResponder((req: ChatRequest, index: number) => {
    // The post-call analysis asks for JSON, not streamed.
    if (!req.stream) return { text: JSON.stringify({ summary: 'Benchmark call.', outcome: 'benchmark' }), ttftMs: 0 };
    const said = lastUserText(req);
    const reply = wantsLongReply(said) ? LONG_REPLY : SHORT_REPLY;
    return { text: opts.replyTags === false ? reply : `R${index}, ${reply}` };
  });
  for (const s of [...sentences(SHORT_REPLY), ...sentences(LONG_REPLY)]) await speak24k(s);
  const longReplyMs = sentences(LONG_REPLY).reduce((n, s) => n + (speechCache.get(s)!.length / 24000) * 1000, 0);
  const q = resample(await synthesize(LONG_QUESTION, 'espeak-ng'), CORPUS_RATE);
  const [a, b] = speechBounds(q);
  const qpcm = { samples: q.samples.slice(a, b), sampleRate: CORPUS_RATE };
  const longQuestion = { pcm: qpcm, script: { segments: [{ text: LONG_QUESTION, startMs: 0, endMs: ((b - a) / CORPUS_RATE) * 1000 }] }, speechEndMs: ((b - a) / CORPUS_RATE) * 1000 };

  let stack: RunningStack | null = null;
  try {
    stack = await startStack({
      freePorts: true,
      // A loaded shared machine can take minutes to start the control plane (as bench/agent-tests.ts allows).
      readyTimeoutMs: 300_000,
      redis: 'own',
      sip: opts.sip ?? false,
      controlPlane: true,
      worker: true,
      logLevel: 'warn',
      env: {
        NODE_ENV: 'development',
        SSRF_ALLOWLIST: '127.0.0.1,localhost',
        DEEPGRAM_BASE_URL: deepgram.url,
        DEEPGRAM_API_KEY: 'stand-in',
        OPENAI_BASE_URL: llm.url,
        OPENAI_API_KEY: 'stand-in',
        // The worker's per-turn timing records (turn-trace.ts) are at debug level.
        LOG_LEVEL: opts.workerLogLevel ?? 'debug',
        // A job process on a loaded shared machine can take far over agents-js's 10 s to start.
        JOB_INIT_TIMEOUT_MS: process.env.JOB_INIT_TIMEOUT_MS ?? '60000',
      },
      onProgress: progress,
    });
    const key = await devKey(stack, 30_000);
    const model = await api({ stack, key }, 'POST', '/v1/models', { name: 'stand-in', model: 'fake-model', base_url: llm.url, system_prompt: 'Answer in one short sentence.' });
    if (model.status !== 201) throw new Error(`POST /v1/models answered ${model.status}: ${JSON.stringify(model.body)}`);
    const running = stack;
    return {
      stack,
      key,
      deepgram,
      llm,
      modelId: model.body.id,
      longQuestion,
      longReplyMs,
      async close({ keepLogs = false } = {}) {
        await running.stop();
        if (keepLogs) process.stderr.write(`logs kept in ${running.logDir}\n`);
        await deepgram.close();
        await llm.close();
      },
    };
  } catch (err) {
    await stack?.stop();
    await deepgram.close();
    await llm.close();
    throw err;
  }
}

/** Creates an agent with these turn-taking settings (none: the agent's defaults), STT provider, and other agent fields. */
export async function createAgent(rig: Rig, name: string, stt: 'deepgram' | 'local', turnTaking: TurnTakingConfig | null, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await api(rig, 'POST', '/v1/agents', {
    name,
    llm_id: rig.modelId,
    transcriber: stt === 'deepgram' ? { provider: 'deepgram' } : { provider: 'local' },
    tts: { provider: 'openai', model: 'tts-1', voice_id: 'alloy' },
    first_message: FIRST_MESSAGE,
    silence_timeout_seconds: 300,
    max_duration_seconds: 1200,
    ...(turnTaking ? { turn_taking: turnTaking } : {}),
    ...extra,
  });
  if (res.status !== 201) throw new Error(`POST /v1/agents answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

// ---- the caller ----

// The caller's ear (the agent's audio as heard): ear.ts.
export { Ear, AgentEar } from './ear.ts';

/** The script of a corpus item for the Deepgram stand-in; `seed` (a trial's) draws its realistic mode's latencies. */
export function scriptOf(item: CorpusItem, seed?: number): Script {
  return { segments: item.segments_at.map((s) => ({ text: s.text, startMs: ms(item, s.start), endMs: ms(item, s.end) })), ...(seed === undefined ? {} : { seed }) };
}

export interface TurnResult {
  kind: 'turn';
  item: string;
  category: CorpusItem['category'];
  /** Wall-clock ms of the start and the end of the user's speech at the client. */
  speech_start_at: number;
  speech_end_at: number;
  /** The utterance's pauses, [start, end) in wall-clock ms at the client. */
  pauses_at: [number, number][];
  /** End of speech -> first agent speech at the client; null when there was no reply or it cut in. */
  v2v_ms: number | null;
  /** The agent started speaking before the user finished (during a pause or over the rest). */
  cut_in: boolean;
  /** The agent started speaking inside one of the utterance's pauses. */
  cut_in_pause: boolean;
  replied: boolean;
}

export interface BargeInResult {
  kind: 'barge_in';
  item: string;
  /** The long reply was playing when the caller spoke. */
  valid: boolean;
  /** Start of the caller's speech -> the agent's audio stopped at the client; null: it did not stop, or resumed. */
  stop_ms: number | null;
  /** Wall-clock ms of the start of the caller's speech (at the client's source), and of the stop. */
  start_at: number;
  stop_at: number | null;
}

export interface BackchannelResult {
  kind: 'backchannel';
  item: string;
  valid: boolean;
  /** The backchannel stopped the reply: it was not heard to its end (heardWhole). */
  stopped: boolean;
  /** The agent's audio went quiet for 400 ms or more within 2 s of the backchannel (the earlier measure). */
  gap_over_400: boolean;
  /** The longest gap in the agent's audio from the backchannel's start to 2.5 s later (a pause, or none). */
  longest_gap_ms: number;
}

/** The agent's long reply with the caller silent: on a dirty line, only the line's noise or echo is sent. */
export interface QuietResult {
  kind: 'quiet';
  /** The long reply started. */
  valid: boolean;
  /** Wall-clock ms of the reply's start at the client, and of its end had it played through. */
  began_at: number;
  natural_end_at: number;
  /** The longest gap in the agent's audio at the client within the reply (200 ms in from each end). */
  longest_gap_ms: number;
  /** The reply was not heard to its end. */
  stopped: boolean;
}

export type TaskResult = TurnResult | BargeInResult | BackchannelResult | QuietResult;
/** A trial; `seed` draws the realistic STT stand-in's latencies and punctuation for it (the same on every run). */
export type Task = { kind: 'turn' | 'barge_in' | 'backchannel'; item: CorpusItem; seed?: number } | { kind: 'quiet'; seed?: number };

/** What the trials need of a call: the caller's voice and ear, and the call's Deepgram stand-in connection. */
export interface TrialCall {
  callId: string;
  /** The call's stand-in connection: Nova (v1) or Flux (v2), whichever the agent's transcriber opened. */
  conn: SttConnection | null;
  ear: Ear;
  /** Speaks a clip; resolves once it is out, with when its first and last samples left the caller. */
  mic: { say(pcm: Pcm): Promise<{ start: number; end: number }> };
}

/** A web call and its rtc-node caller. */
export interface CallHandle extends TrialCall {
  client: RtcClient;
  ear: AgentEar;
  mic: Mic;
}

export interface CallOptions {
  /** Added to everything the caller sends, from the call's start (a dirty line). */
  line?: LineSource;
  /** Gets the agent's audio as the caller receives it, at the line's rate: 48 kHz on a web call (the line's echo). */
  onAgentAudio?: (samples: Int16Array) => void;
  /** The Deepgram stand-in's speech threshold for this call (raised over a line's noise). */
  sttSpeechRms?: number;
}

/**
 * Starts a web call and waits for its first message to play out. With the Deepgram stand-in, call starts
 * must not overlap (the caller holds `startLock`): the next stand-in connection is this call's.
 */
export async function startCall(rig: Rig, agentId: string, stt: 'deepgram' | 'local', opts: CallOptions = {}): Promise<CallHandle> {
  const created = await api(rig, 'POST', '/v1/calls/web', { agent_id: agentId });
  if (created.status !== 201) throw new Error(`POST /v1/calls/web answered ${created.status}: ${JSON.stringify(created.body)}`);
  // Set before the call's stand-in connection exists (it takes the threshold when made), reset once it does.
  if (opts.sttSpeechRms !== undefined) rig.deepgram.setSpeechRms(opts.sttSpeechRms);
  const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
  const ear = new AgentEar();
  ear.attach(client, opts.onAgentAudio);
  await client.publishMicrophone();
  const mic = new Mic(client, opts.line);
  const conn = stt === 'deepgram' ? await rig.deepgram.nextAnyConnection(60_000).finally(() => rig.deepgram.setSpeechRms(SPEECH_RMS)) : null;
  // The first message, then quiet.
  await ear.until(() => ear.speech.length > 0, 60_000);
  await ear.quiet(700);
  return { callId: created.body.id as string, conn, client, ear, mic };
}

export async function endCall(rig: Rig, call: CallHandle): Promise<void> {
  await call.mic.stop();
  await call.ear.stop();
  await call.client.leave();
  await api(rig, 'POST', `/v1/calls/${call.callId}/stop`);
}

/** Speaks an utterance and measures the agent's answer to it. */
export async function runTurn(call: TrialCall, item: CorpusItem, seed?: number): Promise<TurnResult> {
  call.conn?.expectNext(scriptOf(item, seed));
  const mark = nowMs();
  const { start } = await call.mic.say(itemPcm(item));
  const speechEnd = start + ms(item, item.speech_end);
  const speechStart = start + ms(item, item.segments_at[0]?.start ?? 0);
  // Up to 6 s for the reply (the longest endpointing delay plus the stand-ins' latency, with room to spare).
  await call.ear.until(() => call.ear.firstAfter(mark) !== undefined, 6000);
  const first = call.ear.firstAfter(mark);
  const cutIn = first !== undefined && first < speechEnd;
  const inPause = first !== undefined && item.pauses_at.some(([a, b]) => first >= start + ms(item, a) && first < start + ms(item, b));
  const result: TurnResult = {
    kind: 'turn',
    item: item.id,
    category: item.category,
    speech_start_at: speechStart,
    speech_end_at: speechEnd,
    pauses_at: item.pauses_at.map(([a, b]) => [start + ms(item, a), start + ms(item, b)]),
    v2v_ms: first !== undefined && !cutIn ? first - speechEnd : null,
    cut_in: cutIn,
    cut_in_pause: inPause,
    replied: first !== undefined,
  };
  // An agent that cut in answers again after the end: let it all play out.
  await call.ear.quiet(cutIn ? 1500 : 600, 20_000);
  return result;
}

/**
 * Lets what the caller's utterance set off play out before the next trial: an answer to a barge-in starts up to
 * the longest endpointing delay plus the stand-ins' latency after the caller stops, so waiting only for a quiet
 * moment could end between the stop and that answer, which the next trial would then take for its own reply.
 */
async function settle(call: TrialCall, utteranceEnd: number): Promise<void> {
  await sleep(Math.max(0, utteranceEnd + SETTLE_AFTER_UTTERANCE_MS - nowMs()));
  await call.ear.quiet(1500, 30_000);
}
const SETTLE_AFTER_UTTERANCE_MS = 2500;

/** Gets the agent talking (the long reply) and returns when its speech started, or null. */
export async function startLongReply(rig: Rig, call: TrialCall, seed?: number): Promise<number | null> {
  call.conn?.expectNext({ ...rig.longQuestion.script, ...(seed === undefined ? {} : { seed: mixSeed(seed, 1) }) });
  const mark = nowMs();
  await call.mic.say(rig.longQuestion.pcm);
  await call.ear.until(() => call.ear.firstAfter(mark) !== undefined, 6000);
  return call.ear.firstAfter(mark) ?? null;
}

/**
 * Once the agent is quiet (after settle): was the long reply begun at `began` heard to its end? A reply paused and
 * resumed plays to its end (about 3/4 of its length is voiced); one interrupted 1.5 s in, with a short answer
 * after it, stays near 1/4. Half its length in voiced audio tells them apart.
 */
export function heardWhole(rig: Rig, call: TrialCall, began: number): boolean {
  return call.ear.speechMs(began, nowMs()) >= 0.5 * rig.longReplyMs;
}

/** The caller speaks a complete utterance over the agent's long reply: how soon does the agent stop? */
export async function runBargeIn(rig: Rig, call: TrialCall, item: CorpusItem, seed?: number): Promise<BargeInResult> {
  const began = await startLongReply(rig, call, seed);
  if (began === null) return { kind: 'barge_in', item: item.id, valid: false, stop_ms: null, start_at: nowMs(), stop_at: null };
  await sleep(Math.max(0, began + 1200 - nowMs()));
  call.conn?.expectNext(scriptOf(item, seed));
  const { start, end } = await call.mic.say(itemPcm(item));
  // Valid only if the reply was still playing when the caller started (a reply too short ends on its own).
  const valid = call.ear.speech.some((s) => s >= start && s < start + 150);
  await call.ear.until(() => call.ear.stopAfter(start) !== undefined, Math.max(0, end + 3000 - nowMs()));
  const stop = call.ear.stopAfter(start);
  const natural = began + rig.longReplyMs;
  await settle(call, end);
  // A stop within 300 ms of the reply's own end is the reply ending, not the barge-in; and a reply that went on
  // after the gap (a pause that resumed) was not stopped.
  const stopped = stop !== undefined && stop < natural - 300 && !heardWhole(rig, call, began);
  return { kind: 'barge_in', item: item.id, valid, stop_ms: valid && stopped ? stop - start : null, start_at: start, stop_at: valid && stopped ? stop : null };
}

/** The caller says "mm-hm" (or the like) over the agent's long reply: does the agent stop? */
export async function runBackchannel(rig: Rig, call: TrialCall, item: CorpusItem, seed?: number): Promise<BackchannelResult> {
  const began = await startLongReply(rig, call, seed);
  if (began === null) return { kind: 'backchannel', item: item.id, valid: false, stopped: false, gap_over_400: false, longest_gap_ms: 0 };
  await sleep(Math.max(0, began + 1500 - nowMs()));
  call.conn?.expectNext(scriptOf(item, seed));
  const { start, end } = await call.mic.say(itemPcm(item));
  const valid = call.ear.speech.some((s) => s >= start && s < start + 150);
  const natural = began + rig.longReplyMs;
  await sleep(Math.max(0, Math.min(natural, start + 2500) - nowMs()));
  const stop = call.ear.stopAfter(start);
  const gapOver400 = stop !== undefined && stop < Math.min(natural - 300, start + 2000);
  const longestGap = call.ear.longestGap(start, start + 2500);
  await settle(call, end);
  const stopped = !heardWhole(rig, call, began);
  return { kind: 'backchannel', item: item.id, valid, stopped, gap_over_400: gapOver400, longest_gap_ms: longestGap };
}

/** The agent's long reply while the caller says nothing: does it pause or stop anyway (on a dirty line, from the line alone)? */
export async function runQuiet(rig: Rig, call: TrialCall, seed?: number): Promise<QuietResult> {
  const began = await startLongReply(rig, call, seed);
  if (began === null) return { kind: 'quiet', valid: false, began_at: nowMs(), natural_end_at: nowMs(), longest_gap_ms: 0, stopped: false };
  const natural = began + rig.longReplyMs;
  await sleep(Math.max(0, natural + 500 - nowMs()));
  const longest = call.ear.longestGap(began + 200, natural - 200);
  await call.ear.quiet(1500, 30_000);
  return { kind: 'quiet', valid: true, began_at: began, natural_end_at: natural, longest_gap_ms: longest, stopped: !heardWhole(rig, call, began) };
}

export async function runTask(rig: Rig, call: TrialCall, task: Task): Promise<TaskResult> {
  if (task.kind === 'quiet') return runQuiet(rig, call, task.seed);
  if (task.kind === 'barge_in') return runBargeIn(rig, call, task.item, task.seed);
  if (task.kind === 'backchannel') return runBackchannel(rig, call, task.item, task.seed);
  return runTurn(call, task.item, task.seed);
}

// What the worker and the control plane recorded: rig-records.ts.
export * from './rig-records.ts';
