// Turn-taking benchmark (npm run bench:turns; docs/benchmarks.md, "Turn-taking"): for each turn-taking
// configuration, web calls over the real WebRTC path (rig.ts) in which an rtc-node caller speaks corpus
// utterances (corpus.ts) and listens to the agent. Per configuration:
//   - EOU delay: end of the user's speech to the turn being committed, from the worker's per-turn trace
//     (cross-checked at the client as voice-to-voice minus the stand-ins' fixed latency);
//   - voice-to-voice: end of speech to the agent's first audio at the client;
//   - false cut-ins: the agent starts speaking before the caller finished a paused sentence;
//   - barge-in stop time: the caller speaks over the agent's long reply; start of that speech to the agent's
//     audio stopping at the client;
//   - backchannel false stops: "mm-hm" and the like over the agent's reply stop it (the reply is not heard to its
//     end), and the longest gap in the agent's audio after one (a pause that resumed shows here);
//   - wasted LLM tokens per turn: tokens streamed for replies no call used (preemptive generation).
// The configurations run one after the other on one stack, several calls at once. Counts per configuration
// are in the output; a p50 of fewer than 30 samples or a p95 of fewer than 100 is printed "n/a".
// Usage: node bench/turn-taking/run.ts [config names...]   Env: BENCH_TURNS (turn trials per configuration),
// BENCH_TURNS_BEST, BENCH_BARGE_INS_BEST, BENCH_BACKCHANNELS_BEST (the transcript configuration, for p95s),
// BENCH_BARGE_INS, BENCH_BACKCHANNELS, BENCH_BUDGET_S (the whole run, default 3300), BENCH_CALLS
// (calls at once), BENCH_OFFLINE=0 to skip the offline-STT run, BENCH_REPLY_TAGS=0 for untagged replies,
// BENCH_RESULTS (the results file's name in bench/results, default turn-taking) for a partial run, BENCH_FLOOR
// (barge-ins on a bare rtc-node participant: the transport's floor, floor.ts; 0 skips them).
import { disposeRtc } from '../../test/support/rtc-client.ts';
import { initializeLogger } from '@livekit/agents';
import { percentile } from '../../shared/latency.ts';
import { writeResults } from '../support/results.ts';
import { loadCorpus, type CorpusItem } from './corpus.ts';
import { seededRandom } from '../../test/support/seeded-random.ts';
import { runFloor, type FloorTrial } from './floor.ts';
import {
  LLM_TTFT_MS,
  STT_FINAL_DELAY_MS,
  TTS_TTFB_MS,
  LLM_TOKEN_MS,
  createAgent,
  endCall,
  endedCall,
  eouOf,
  runTask,
  startCall,
  startRig,
  wastedTokens,
  workerPauses,
  workerTurns,
  type BackchannelResult,
  type BargeInResult,
  type CallHandle,
  type Rig,
  type Task,
  type TaskResult,
  type TurnResult,
  type TurnTakingConfig,
} from './rig.ts';

const env = process.env;
const TURNS = Number(env.BENCH_TURNS ?? 40);
const TURNS_BEST = Number(env.BENCH_TURNS_BEST ?? 280);
const BARGE_INS = Number(env.BENCH_BARGE_INS ?? 5);
const BACKCHANNELS = Number(env.BENCH_BACKCHANNELS ?? 6);
// Some trials are not valid (the reply ended before the caller spoke): 120 leave the p95 its 100 samples.
const BARGE_INS_BEST = Number(env.BENCH_BARGE_INS_BEST ?? 120);
const FLOOR = Number(env.BENCH_FLOOR ?? 110);
const BACKCHANNELS_BEST = Number(env.BENCH_BACKCHANNELS_BEST ?? 30);
const CALLS = Number(env.BENCH_CALLS ?? 3);
/** The whole run's budget (s): a configuration that would overrun its share stops taking trials (counts are reported). */
const BUDGET_S = Number(env.BENCH_BUDGET_S ?? 3300);
const OFFLINE = env.BENCH_OFFLINE !== '0';
/** BENCH_REPLY_TAGS=0: replies without the request tag (wasted tokens are then not counted). */
const REPLY_TAGS = env.BENCH_REPLY_TAGS !== '0';
const RESULTS = env.BENCH_RESULTS ?? 'turn-taking';

interface BenchConfig {
  name: string;
  label: string;
  stt: 'deepgram' | 'local';
  turnTaking: TurnTakingConfig | null;
  /** Other agent fields (interruption_sensitivity). */
  agent?: Record<string, unknown>;
  turns: number;
  /** Default BENCH_BARGE_INS and BENCH_BACKCHANNELS. */
  bargeIns?: number;
  backchannels?: number;
}

/** The transcript rules' rows start from this (the default's turn taking but for barge_in), each changing one thing. */
const TRANSCRIPT = { detection: 'transcript', endpointing: 'fixed', min_delay_ms: 150, max_delay_ms: 1500, preemptive_generation: true, ignore_backchannels: true } as const;

// Silero only at agents-js's default delays (500 ms after the VAD's end of speech); the end-of-turn model
// with fixed delays; the same with dynamic endpointing; and that plus preemptive generation.
const DEEPGRAM_CONFIGS: BenchConfig[] = [
  { name: 'silero', label: 'Silero only (VAD, 500 ms silence)', stt: 'deepgram', turns: TURNS, turnTaking: { detection: 'vad', endpointing: 'fixed', min_delay_ms: 500, max_delay_ms: 3000, preemptive_generation: false, ignore_backchannels: false, barge_in: 'words' } },
  { name: 'eot-fixed', label: 'EOT model, fixed 300/1500 ms', stt: 'deepgram', turns: TURNS, turnTaking: { detection: 'model', endpointing: 'fixed', min_delay_ms: 300, max_delay_ms: 1500, preemptive_generation: false, ignore_backchannels: true, barge_in: 'words' } },
  { name: 'eot-dynamic', label: 'EOT model, dynamic 300/1500 ms', stt: 'deepgram', turns: TURNS, turnTaking: { detection: 'model', endpointing: 'dynamic', min_delay_ms: 300, max_delay_ms: 1500, preemptive_generation: false, ignore_backchannels: true, barge_in: 'words' } },
  { name: 'eot-dynamic-preemptive', label: 'EOT model, dynamic 300/1500 ms, preemptive generation', stt: 'deepgram', turns: TURNS, turnTaking: { detection: 'model', endpointing: 'dynamic', min_delay_ms: 300, max_delay_ms: 1500, preemptive_generation: true, ignore_backchannels: true, barge_in: 'words' } },
  // Silero alone with the delay cut to 200 ms: what a short silence costs without a turn detector.
  { name: 'silero-200', label: 'Silero only, 200 ms, preemptive generation', stt: 'deepgram', turns: TURNS, turnTaking: { detection: 'vad', endpointing: 'fixed', min_delay_ms: 200, max_delay_ms: 1500, preemptive_generation: true, ignore_backchannels: true, barge_in: 'words' } },
  // The transcript rules (below), stopping on sound alone (any 100 ms of speech, no word needed): the fastest
  // barge-in, at the cost of backchannels stopping the agent too.
  { name: 'transcript-sound-barge-in', label: 'Transcript rules, 150/1500 ms, barge-in on sound (sensitivity 1)', stt: 'deepgram', turns: TURNS, bargeIns: 10, backchannels: 10, agent: { interruption_sensitivity: 1 }, turnTaking: { ...TRANSCRIPT, ignore_backchannels: false, barge_in: 'words' } },
  // The transcript rules with the previous default floor (200 ms), and without preemptive generation: what
  // the shorter floor and starting the reply early (on a finished-sounding interim, LLM and TTS) buy.
  { name: 'transcript-200', label: 'Transcript rules, fixed 200/1500 ms, preemptive generation', stt: 'deepgram', turns: TURNS, turnTaking: { ...TRANSCRIPT, min_delay_ms: 200, barge_in: 'words' } },
  // The previous default: the same, but the agent speaks on until the caller's first word that is not a
  // backchannel (barge_in 'words'): no pause on a backchannel, a later stop on a barge-in.
  { name: 'transcript-words', label: 'Transcript rules, fixed 150/1500 ms, preemptive generation, stop on words', stt: 'deepgram', turns: TURNS, bargeIns: 10, backchannels: 10, turnTaking: { ...TRANSCRIPT, barge_in: 'words' } },
  // The default but for the pause's trigger: the VAD's start of speech (barge_in 'pause_on_speech', the default
  // until the onset), against the onset of the caller's sound.
  { name: 'transcript-pause-on-speech', label: 'Transcript rules, fixed 150/1500 ms, preemptive generation, pause on the VAD\'s speech', stt: 'deepgram', turns: TURNS, bargeIns: 20, backchannels: 10, turnTaking: { ...TRANSCRIPT, barge_in: 'pause_on_speech' } },
  { name: 'transcript-no-preemptive', label: 'Transcript rules, fixed 150/1500 ms, no preemptive generation', stt: 'deepgram', turns: TURNS, turnTaking: { ...TRANSCRIPT, preemptive_generation: false, barge_in: 'words' } },
  // The transcript rules (media-worker/src/session/transcript-turn-detector.ts), the default: 150 ms after a
  // finished sentence, 1500 ms after an open one. The most trials, for p95s: 280 turns hold 112 complete
  // sentences, so the p95 on complete utterances has its 100 samples.
  { name: 'transcript', label: 'Transcript rules, fixed 150/1500 ms, preemptive generation, pause on the onset of sound', stt: 'deepgram', turns: TURNS_BEST, bargeIns: BARGE_INS_BEST, backchannels: BACKCHANNELS_BEST, turnTaking: { ...TRANSCRIPT, barge_in: 'pause' } },
];

/** The agent's defaults (no turn_taking sent): `node bench/turn-taking/run.ts current`. */
const CURRENT: BenchConfig = { name: 'current', label: "The agent's defaults", stt: 'deepgram', turns: TURNS, turnTaking: null };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// A p50 of fewer than 30 samples or a p95 of fewer than 100 is NaN (printed "n/a").
const stats = (xs: number[]) => ({
  n: xs.length,
  p50: xs.length >= 30 ? +percentile(xs, 50).toFixed(1) : NaN,
  p95: xs.length >= 100 ? +percentile(xs, 95).toFixed(1) : NaN,
  median_any_n: xs.length ? +percentile(xs, 50).toFixed(1) : NaN,
  max: xs.length ? +Math.max(...xs).toFixed(1) : NaN,
});

const known = (xs: (number | null)[]) => xs.filter((x): x is number => x !== null);

function shuffled<T>(xs: T[], rnd: () => number): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** The trials of a configuration: turns (40 % complete, 40 % paused, 20 % lists and digit groups), barge-ins, backchannels. */
function tasksFor(corpus: CorpusItem[], turns: number, seed: number, bargeIns: number, backchannels: number): Task[] {
  const rnd = seededRandom(seed);
  const of = (c: CorpusItem['category']) => shuffled(corpus.filter((i) => i.category === c), rnd);
  const pick = (pool: CorpusItem[], n: number) => Array.from({ length: n }, (_, i) => pool[i % pool.length]!);
  const nList = Math.round(turns * 0.2);
  const nPause = Math.round(turns * 0.4);
  const nComplete = turns - nList - nPause;
  const turnTasks: Task[] = [...pick(of('complete'), nComplete), ...pick(of('pause'), nPause), ...pick(of('list'), nList)].map((item) => ({ kind: 'turn', item }));
  const barge: Task[] = pick(of('complete'), bargeIns).map((item) => ({ kind: 'barge_in', item }));
  const back: Task[] = pick(of('backchannel'), backchannels).map((item) => ({ kind: 'backchannel', item }));
  // Interleaved, so the calls' load is even over the run.
  return shuffled([...turnTasks, ...barge, ...back], rnd);
}

interface ConfigRun {
  config: BenchConfig;
  results: (TaskResult & { call_id: string })[];
  callIds: string[];
  errors: string[];
  llmFrom: number;
  wall_s: number;
}

async function runConfig(rig: Rig, corpus: CorpusItem[], config: BenchConfig, seed: number, deadline = Infinity): Promise<ConfigRun> {
  const t0 = Date.now();
  const agentId = await createAgent(rig, `Turns ${config.name}`, config.stt, config.turnTaking, config.agent);
  const queue = tasksFor(corpus, config.turns, seed, config.bargeIns ?? BARGE_INS, config.backchannels ?? BACKCHANNELS);
  const total = queue.length;
  const llmFrom = rig.llm.completions.length;
  const run: ConfigRun = { config, results: [], callIds: [], errors: [], llmFrom, wall_s: 0 };
  const calls: CallHandle[] = [];
  // One call start at a time: the next Deepgram stand-in connection is the new call's.
  for (let c = 0; c < CALLS; c++) {
    try {
      calls.push(await startCall(rig, agentId, config.stt));
      run.callIds.push(calls.at(-1)!.callId);
    } catch (err) {
      run.errors.push(`call start: ${(err as Error).message}`);
    }
  }
  let done = 0;
  await Promise.all(
    calls.map(async (call) => {
      for (let task = queue.shift(); task && Date.now() < deadline; task = queue.shift()) {
        try {
          run.results.push({ ...(await runTask(rig, call, task)), call_id: call.callId });
        } catch (err) {
          run.errors.push(`${task.kind} ${task.item.id}: ${(err as Error).message}`);
          await sleep(500);
        }
        done++;
        if (done % 10 === 0) process.stderr.write(`  ${config.name}: ${done}/${total}\n`);
      }
    }),
  );
  await Promise.all(calls.map((c) => endCall(rig, c).catch((err: unknown) => run.errors.push(`end: ${(err as Error).message}`))));
  run.wall_s = Math.round((Date.now() - t0) / 1000);
  return run;
}

async function summarize(rig: Rig, run: ConfigRun) {
  const records = await Promise.all(run.callIds.map((id) => endedCall(rig, id)));
  const agentMessages = records.flatMap((r) => (r?.messages ?? []).filter((m: { role: string }) => m.role === 'agent').map((m: { content: string }) => m.content ?? ''));
  const userTurns = records.reduce((n, r) => n + (r?.messages ?? []).filter((m: { role: string }) => m.role === 'user').length, 0);
  const trace = workerTurns(rig.stack);
  const turns = run.results.filter((r): r is TurnResult & { call_id: string } => r.kind === 'turn');
  const ended = turns.filter((t) => !t.cut_in && t.replied);
  const eouAll: number[] = [];
  const eouComplete: number[] = [];
  const traced: Record<string, unknown>[] = [];
  for (const t of ended) {
    const rec = eouOf(trace, t.call_id, t.speech_end_at);
    if (!rec) continue;
    traced.push({ item: t.item, category: t.category, ...rec });
    eouAll.push(rec.eou_delay_ms);
    if (t.category === 'complete') eouComplete.push(rec.eou_delay_ms);
  }
  const v2v = ended.map((t) => t.v2v_ms!);
  // The end-of-turn model's probability at the end of each utterance, by category (the model configurations).
  const eot = Object.fromEntries(
    ['complete', 'pause', 'list'].map((c) => {
      const ps = traced.filter((r) => r.category === c && typeof r.eot_probability === 'number').map((r) => r.eot_probability as number);
      return [c, ps.length ? { n: ps.length, median: +percentile(ps, 50).toFixed(3) } : null];
    }),
  );
  const pause = turns.filter((t) => t.category === 'pause');
  const listy = turns.filter((t) => t.category === 'list');
  const barge = run.results.filter((r): r is BargeInResult & { call_id: string } => r.kind === 'barge_in');
  const bargeValid = barge.filter((b) => b.valid);
  // Where each stopped barge-in's time went: the caller's start to the worker's pause (the audio in, and the onset
  // or the VAD), then the pause to the stop at the client (the audio already out, both ways of the transport).
  const pauses = workerPauses(rig.stack);
  const split = bargeValid.flatMap((b) => {
    if (b.stop_at === null) return [];
    const p = pauses.find((x) => x.call_id === b.call_id && x.at >= b.start_at - 30 && x.at <= b.stop_at!);
    return p ? [{ to_pause: p.at - b.start_at, pause_to_stop: b.stop_at - p.at, by: p.by }] : [];
  });
  const back = run.results.filter((r): r is BackchannelResult & { call_id: string } => r.kind === 'backchannel');
  const backValid = back.filter((b) => b.valid);
  const waste = wastedTokens(rig.llm, run.llmFrom, agentMessages);
  const committed = Math.max(1, userTurns);
  return {
    name: run.config.name,
    label: run.config.label,
    stt: run.config.stt,
    turn_taking: run.config.turnTaking,
    wall_seconds: run.wall_s,
    trials_run: run.results.length,
    calls: run.callIds.length,
    errors: run.errors,
    eou_delay_ms: { all: stats(eouAll), complete: stats(eouComplete), trace_records_matched: eouAll.length },
    voice_to_voice_ms: stats(v2v),
    eot_probability_at_end: eot,
    // Client-side cross-check of the EOU delay: voice-to-voice minus the stand-ins' fixed latency.
    client_eou_estimate_p50_ms: v2v.length ? +(percentile(v2v, 50) - LLM_TTFT_MS - TTS_TTFB_MS).toFixed(1) : null,
    turns: { n: turns.length, replied: turns.filter((t) => t.replied).length, no_reply: turns.filter((t) => !t.replied).length },
    cut_ins: {
      pause: { n: pause.length, cut_in: pause.filter((t) => t.cut_in).length, in_pause: pause.filter((t) => t.cut_in_pause).length },
      lists_and_digits: { n: listy.length, cut_in: listy.filter((t) => t.cut_in).length },
      complete: { n: turns.filter((t) => t.category === 'complete').length, cut_in: turns.filter((t) => t.category === 'complete' && t.cut_in).length },
    },
    barge_in: {
      trials: barge.length,
      valid: bargeValid.length,
      stopped: bargeValid.filter((b) => b.stop_ms !== null).length,
      stop_ms: stats(known(bargeValid.map((b) => b.stop_ms))),
      to_worker_pause_ms: stats(split.map((x) => x.to_pause)),
      worker_pause_to_stop_ms: stats(split.map((x) => x.pause_to_stop)),
      paused_by: { onset: split.filter((x) => x.by === 'onset').length, agents_js: split.filter((x) => x.by === 'agents-js').length },
      samples: bargeValid.map((b) => b.stop_ms),
    },
    backchannel: {
      trials: back.length,
      valid: backValid.length,
      false_stops: backValid.filter((b) => b.stopped).length,
      gaps_over_400: backValid.filter((b) => b.gap_over_400).length,
      longest_gap_ms: stats(backValid.map((b) => b.longest_gap_ms)),
    },
    llm: { ...waste, committed_user_turns: userTurns, wasted_tokens_per_turn: +(waste.wasted / committed).toFixed(2) },
    call_latency_eou_p50_ms: records.map((r) => r?.latency?.eou_delay?.p50_ms ?? null),
    samples: run.results,
    worker_trace: traced,
  };
}

type Summary = Awaited<ReturnType<typeof summarize>>;

const f = (x: number | null | undefined) => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : `${Math.round(x)}`);
const pct = (a: number, n: number) => (n ? `${a}/${n} (${Math.round((100 * a) / n)} %)` : 'n/a');

function table(rows: Summary[]): string {
  const head = '| Configuration | STT | EOU p50 / p95 (ms) | v2v p50 / p95 (ms) | cut-ins, paused sentences | barge-in stop p50 / p95 (ms), stopped | backchannel false stops; longest gap p50 (ms) | wasted tokens / turn |';
  const lines = rows.map(
    (r) =>
      `| ${r.label} | ${r.stt === 'deepgram' ? 'Deepgram stand-in' : 'offline (pocketsphinx)'} | ${f(r.eou_delay_ms.all.p50)} / ${f(r.eou_delay_ms.all.p95)} (n=${r.eou_delay_ms.all.n}) | ${f(r.voice_to_voice_ms.p50)} / ${f(r.voice_to_voice_ms.p95)} (n=${r.voice_to_voice_ms.n}) | ${pct(r.cut_ins.pause.cut_in, r.cut_ins.pause.n)} | ${f(r.barge_in.stop_ms.median_any_n)}${r.barge_in.stop_ms.n < 30 ? '*' : ''} / ${f(r.barge_in.stop_ms.p95)}, ${r.barge_in.stopped}/${r.barge_in.valid} | ${pct(r.backchannel.false_stops, r.backchannel.valid)}; ${f(r.backchannel.longest_gap_ms.median_any_n)} | ${r.llm.wasted_tokens_per_turn} |`,
  );
  return [head, '|---|---|---|---|---|---|---|---|', ...lines].join('\n');
}

async function main() {
  initializeLogger({ pretty: false, level: 'error' });
  const started = Date.now();
  const only = process.argv.slice(2);
  const corpus = await loadCorpus({ onProgress: (m) => process.stderr.write(`${m}\n`) });
  const rig = await startRig({ onProgress: (m) => process.stderr.write(`${m}\n`), replyTags: REPLY_TAGS });
  const summaries: Summary[] = [];
  let floor: FloorTrial[] = [];
  let failed = true;
  let best: BenchConfig | null = null;
  try {
    const configs = [CURRENT, ...DEEPGRAM_CONFIGS].filter((c) => (only.length ? only.includes(c.name) : c !== CURRENT));
    // A warm-up call (job process start, model loads), not counted.
    process.stderr.write('warm-up\n');
    await runConfig(rig, corpus, { ...configs[0]!, name: 'warm-up', turns: 3, bargeIns: 1, backchannels: 0 }, 1).catch((err: unknown) => process.stderr.write(`warm-up failed: ${(err as Error).message}\n`));
    if (FLOOR > 0) {
      process.stderr.write(`floor: ${FLOOR} barge-ins on a bare rtc-node participant\n`);
      floor = await runFloor(rig.stack, shuffled(corpus.filter((i) => i.category === 'complete'), seededRandom(7)), FLOOR);
    }
    let seed = 100;
    // Each configuration's share of what is left of the budget, by its planned trials (a barge-in or a
    // backchannel takes about twice a turn); the offline run counts as one more configuration.
    const weight = (c: BenchConfig) => c.turns + 2 * ((c.bargeIns ?? BARGE_INS) + (c.backchannels ?? BACKCHANNELS));
    let left = configs.reduce((n, c) => n + weight(c), 0) + (OFFLINE ? weight({ ...configs[0]!, turns: TURNS }) : 0);
    const share = (c: BenchConfig) => {
      const remaining = BUDGET_S * 1000 - (Date.now() - started);
      const ms = (remaining * weight(c)) / left;
      left -= weight(c);
      return Date.now() + ms;
    };
    for (const config of configs) {
      process.stderr.write(`config ${config.name} (${config.turns} turns, ${BARGE_INS} barge-ins, ${BACKCHANNELS} backchannels, ${CALLS} calls)\n`);
      summaries.push(await summarize(rig, await runConfig(rig, corpus, config, seed++, share(config))));
    }
    // The best: the lowest EOU p50 among those that cut in no more than the Silero baseline.
    const base = summaries.find((s) => s.name === 'silero');
    const eligible = summaries.filter((s) => !base || s.cut_ins.pause.cut_in / Math.max(1, s.cut_ins.pause.n) <= base.cut_ins.pause.cut_in / Math.max(1, base.cut_ins.pause.n));
    const bestSummary = [...eligible].sort((a, b) => a.eou_delay_ms.all.median_any_n - b.eou_delay_ms.all.median_any_n)[0];
    best = configs.find((c) => c.name === bestSummary?.name) ?? null;
    // The offline STT with the configuration agents get by default (the transcript rules), else the best.
    const shipped = configs.find((c) => c.name === 'transcript') ?? best;
    if (OFFLINE && shipped) {
      const offline: BenchConfig = { ...shipped, name: `${shipped.name}-offline`, label: `${shipped.label} (offline STT)`, stt: 'local', turns: TURNS, bargeIns: BARGE_INS, backchannels: BACKCHANNELS };
      process.stderr.write(`config ${offline.name} (${offline.turns} turns)\n`);
      summaries.push(await summarize(rig, await runConfig(rig, corpus, offline, seed++, share(offline))));
    }
    failed = false;
  } finally {
    await rig.close({ keepLogs: failed });
    await disposeRtc();
  }

  const result = {
    bench: 'turn-taking',
    wall_seconds: Math.round((Date.now() - started) / 1000),
    corpus: { utterances: corpus.length, by_category: Object.fromEntries(['complete', 'pause', 'list', 'backchannel'].map((c) => [c, corpus.filter((i) => i.category === c).length])) },
    stand_ins: { stt_final_delay_ms: STT_FINAL_DELAY_MS, llm_ttft_ms: LLM_TTFT_MS, llm_token_ms: LLM_TOKEN_MS, tts_ttfb_ms: TTS_TTFB_MS },
    calls_at_once: CALLS,
    targets: { eou_p50_ms: 200, eou_p95_ms: 350, v2v_p50_ms: LLM_TTFT_MS + TTS_TTFB_MS + 250, cut_ins: 'no more than the Silero baseline' },
    best: best?.name ?? null,
    barge_in_floor: {
      what: 'a bare rtc-node participant in place of the agent: it drops its 200 ms queue on the first 10 ms frame of the caller over the speech threshold',
      trials: floor.length,
      stopped: floor.filter((t) => t.stop_ms !== null).length,
      stop_ms: stats(known(floor.map((t) => t.stop_ms))),
      heard_ms: stats(known(floor.map((t) => t.heard_ms))),
      drop_to_stop_ms: stats(known(floor.map((t) => t.drop_to_stop_ms))),
      samples: floor,
    },
    configs: summaries,
  };
  writeResults(RESULTS, result);
  const split = summaries
    .filter((r) => r.barge_in.to_worker_pause_ms.n > 0)
    .map((r) => `- ${r.name}: start -> worker pause ${f(r.barge_in.to_worker_pause_ms.median_any_n)} ms, pause -> stop at the client ${f(r.barge_in.worker_pause_to_stop_ms.median_any_n)} ms (medians, n=${r.barge_in.to_worker_pause_ms.n}; paused by the onset ${r.barge_in.paused_by.onset}, by agents-js ${r.barge_in.paused_by.agents_js})`);
  const fl = result.barge_in_floor;
  if (fl.trials) split.push(`- floor (bare rtc-node participant): stop p50 ${f(fl.stop_ms.p50)} / p95 ${f(fl.stop_ms.p95)} ms (n=${fl.stop_ms.n}, max ${f(fl.stop_ms.max)}); start -> heard ${f(fl.heard_ms.median_any_n)} ms, drop -> stop at the client ${f(fl.drop_to_stop_ms.median_any_n)} ms (medians)`);
  console.log(`\nTurn-taking (${result.wall_seconds} s; * = fewer than 30 samples, a median only)\n\n${table(summaries)}\n\nBarge-ins, where the time went:\n${split.join('\n')}\n\nBest: ${best?.label ?? 'n/a'}. JSON: bench/results/${RESULTS}.json`);
}

await main();
process.exit(0);
