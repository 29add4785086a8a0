// Turn-taking benchmark (npm run bench:turns; docs/benchmarks.md, "Turn-taking"): for each turn-taking
// configuration, web calls over the real WebRTC path (rig.ts) in which an rtc-node caller speaks corpus
// utterances (corpus.ts, corpora/*.json) and listens to the agent. Per corpus, STT mode and configuration:
//   - EOU delay: end of the user's speech to the turn being committed, from the worker's per-turn trace
//     (cross-checked at the client as voice-to-voice minus the stand-ins' fixed latency);
//   - voice-to-voice: end of speech to the agent's first audio at the client;
//   - false cut-offs and premature commits, from the worker's commits (cut-offs.ts): the share of mid-turn pauses
//     the worker committed in, commits before the end of the last segment per utterance, and eot-bench's budget
//     figures (false cut-offs within 300 ms of mean latency, latency within 5 % of false cut-offs) over a sweep of
//     the default configuration's delays;
//   - audible cut-ins: the agent starts speaking before the caller finished a paused sentence;
//   - barge-in stop time: the caller speaks over the agent's long reply; start of that speech to the agent's
//     audio stopping at the client;
//   - backchannel false stops: "mm-hm" and the like over the agent's reply stop it (the reply is not heard to its
//     end), and the longest gap in the agent's audio after one (a pause that resumed shows here);
//   - wasted LLM tokens per turn: tokens streamed for replies no call used (preemptive generation).
// Then barge-ins on dirty lines (pink noise, babble, the agent's echo; dirty-line.ts), and the agent's reply with
// only the line under it (false pauses); and the same over a SIP leg (sip-caller.ts: SIPp dials a purchased
// number through the real LiveKit SIP bridge, the line at 8 kHz in G.711). The Deepgram stand-in runs realistic
// (the headline) or as the oracle of the earlier runs (`--stt oracle`: its figures are floors). The
// configurations run one after the other on one stack, several calls at once. Counts are in the output; a p50 of
// fewer than 30 samples or a p95 of fewer than 100 is printed "n/a".
// Usage: node bench/turn-taking/run.ts [config names... | none] [--stt realistic|oracle]... [--corpus FILE]...
// (`none`: no configuration's trials, only the floor and the lines).
// Env: BENCH_TURNS (turn trials per configuration), BENCH_TURNS_BEST, BENCH_BARGE_INS_BEST,
// BENCH_BACKCHANNELS_BEST (the transcript configuration, for p95s), BENCH_BARGE_INS, BENCH_BACKCHANNELS,
// BENCH_SWEEP (min/max delay pairs, 0: none), BENCH_SWEEP_TURNS, BENCH_SWEEP_CONFIG, BENCH_LINE (conditions, 0:
// none), BENCH_LINE_BARGE_INS, BENCH_LINE_QUIET, BENCH_LINE_CONFIG, BENCH_SIP_LINE (the SIP leg's conditions;
// default all when the SIP bridge is built, 0: none), BENCH_SIP_LINE_BARGE_INS, BENCH_SIP_LINE_QUIET,
// BENCH_PINK_SNR_DB, BENCH_BABBLE_SNR_DB, BENCH_ECHO_DELAY_MS, BENCH_ECHO_GAIN_DB, the realistic stand-in's
// BENCH_STT_SEED, BENCH_STT_LAG_MS (min-max), BENCH_STT_FINAL_MS (min-max), BENCH_STT_PERIOD,
// BENCH_STT_OPEN_PERIOD, BENCH_STT_PERIOD_SILENCE_MS, BENCH_STT_WER, BENCH_BUDGET_S (the whole run; default half again over the plan's
// estimate), BENCH_CALLS (calls at once), BENCH_OFFLINE=0 to skip the offline-STT run, BENCH_REPLY_TAGS=0 for
// untagged replies, BENCH_RESULTS (the results file's name in bench/results, default turn-taking) for a partial
// run, BENCH_FLOOR (barge-ins on a bare rtc-node participant: the transport's floor, floor.ts; 0 skips them).
import { disposeRtc } from '../../test/support/rtc-client.ts';
import { initializeLogger } from '@livekit/agents';
import path from 'node:path';
import { writeResults } from '../support/results.ts';
import { REALISTIC_DEFAULTS, type RealisticSttOptions } from '../../test/support/fake-deepgram.ts';
import { mixSeed, seededRandom } from '../../test/support/seeded-random.ts';
import { parseArgs, type SttMode } from './args.ts';
import { DEFAULT_SWEEP, NAMED_ONLY, SWEPT_CONFIG, currentConfig, deepgramConfigs, fluxConfig, parseSweep, sweepConfigs, type BenchConfig } from './configs.ts';
import { midTurnPauses } from './corpus-file.ts';
import { loadCorpusFile, type CorpusItem, type LoadedCorpus } from './corpus.ts';
import { prepareLines } from './dirty-line.ts';
import { runFloor, type FloorTrial } from './floor.ts';
import { LINE_CONDITIONS, type LineCondition } from './line-noise.ts';
import { LLM_TTFT_MS, STT_FINAL_DELAY_MS, TTS_TTFB_MS, LLM_TOKEN_MS, createAgent, endCall, runTask, startCall, startRig, type CallHandle, type CallOptions, type Rig, type Task } from './rig.ts';
import { SIP_RATE, buyNumber, endSipCall, startSipCall, type SipCallHandle } from './sip-caller.ts';
import { sipBridgeVersion } from '../../scripts/stack/supervisor.ts';
import { budgets, interruptionTable, known, lineTable, stats, summarize, summarizeLine, pauseLengthTable, sweepTable, turnTable, type ConfigRun, type LineSummary, type Summary } from './summary.ts';

const env = process.env;
const num = (name: string, fallback: number) => {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`${name}=${v}: not a number`);
  return n;
};
const range = (name: string, fallback: { min: number; max: number }) => {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const m = /^\s*(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)\s*$/.exec(v);
  if (!m || Number(m[1]) > Number(m[2])) throw new Error(`${name}=${v}: min-max in ms, as 150-350`);
  return { min: Number(m[1]), max: Number(m[2]) };
};

const TURNS = num('BENCH_TURNS', 40);
const COUNTS = { TURNS, TURNS_BEST: num('BENCH_TURNS_BEST', 280), BARGE_INS_BEST: num('BENCH_BARGE_INS_BEST', 120), BACKCHANNELS_BEST: num('BENCH_BACKCHANNELS_BEST', 30) };
const BARGE_INS = num('BENCH_BARGE_INS', 5);
const BACKCHANNELS = num('BENCH_BACKCHANNELS', 6);
const FLOOR = num('BENCH_FLOOR', 110);
const CALLS = num('BENCH_CALLS', 3);
const OFFLINE = env.BENCH_OFFLINE !== '0';
/** BENCH_REPLY_TAGS=0: replies without the request tag (wasted tokens are then not counted). */
const REPLY_TAGS = env.BENCH_REPLY_TAGS !== '0';
const RESULTS = env.BENCH_RESULTS ?? 'turn-taking';
const SWEEP = parseSweep(env.BENCH_SWEEP ?? DEFAULT_SWEEP);
const SWEEP_TURNS = num('BENCH_SWEEP_TURNS', 60);
const SWEEP_CONFIG = env.BENCH_SWEEP_CONFIG ?? SWEPT_CONFIG;
/** Line conditions from `name` (comma-separated; 0 or empty: none). */
const conditions = (name: string, fallback: string): LineCondition[] => {
  const v = env[name] ?? fallback;
  if (v.trim() === '0' || v.trim() === '') return [];
  return v.split(',').map((c) => {
    if (!LINE_CONDITIONS.includes(c.trim() as LineCondition)) throw new Error(`${name}: ${c}: one of ${LINE_CONDITIONS.join(', ')} (or 0)`);
    return c.trim() as LineCondition;
  });
};
const LINES = conditions('BENCH_LINE', LINE_CONDITIONS.join(','));
const LINE_BARGE_INS = num('BENCH_LINE_BARGE_INS', 20);
const LINE_QUIET = num('BENCH_LINE_QUIET', 10);
/** The SIP leg: on by default when scripts/setup.sh built the bridge. */
const SIP_BRIDGE = sipBridgeVersion();
const SIP_LINES = conditions('BENCH_SIP_LINE', SIP_BRIDGE ? LINE_CONDITIONS.join(',') : '0');
if (SIP_LINES.length && !SIP_BRIDGE) throw new Error('BENCH_SIP_LINE: the SIP bridge is not built (scripts/setup.sh); 0 skips the SIP leg');
const SIP_LINE_BARGE_INS = num('BENCH_SIP_LINE_BARGE_INS', 20);
const SIP_LINE_QUIET = num('BENCH_SIP_LINE_QUIET', 10);
const LINE_CONFIG = env.BENCH_LINE_CONFIG ?? 'transcript';
const LINE_OPTIONS = { pinkSnrDb: num('BENCH_PINK_SNR_DB', 20), babbleSnrDb: num('BENCH_BABBLE_SNR_DB', 20), echoDelayMs: num('BENCH_ECHO_DELAY_MS', 60), echoGainDb: num('BENCH_ECHO_GAIN_DB', -20), seed: 31 };
/** The realistic stand-in's distributions (test/support/realistic-stt.ts). */
const REALISTIC: Required<RealisticSttOptions> = {
  seed: num('BENCH_STT_SEED', REALISTIC_DEFAULTS.seed),
  interimLagMs: range('BENCH_STT_LAG_MS', REALISTIC_DEFAULTS.interimLagMs),
  finalDelayMs: range('BENCH_STT_FINAL_MS', REALISTIC_DEFAULTS.finalDelayMs),
  periodProbability: num('BENCH_STT_PERIOD', REALISTIC_DEFAULTS.periodProbability),
  openPeriodProbability: num('BENCH_STT_OPEN_PERIOD', REALISTIC_DEFAULTS.openPeriodProbability),
  periodSilenceMs: num('BENCH_STT_PERIOD_SILENCE_MS', REALISTIC_DEFAULTS.periodSilenceMs),
  wordErrorRate: num('BENCH_STT_WER', REALISTIC_DEFAULTS.wordErrorRate),
};

/**
 * The previous full run's pace (2932 s, 3 calls at once): 1.9 s of wall time per turn trial, twice that per barge-in,
 * backchannel or quiet trial, 3 s per floor trial; for the plan's estimate and the default budget.
 */
const S_PER_UNIT = 1.9 * (3 / Math.max(1, CALLS));
const S_PER_FLOOR_TRIAL = 3;
const WARM_UP_S = 60;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function shuffled<T>(xs: T[], rnd: () => number): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** FNV-1a: a seed from a name, so a configuration's trials are the same in every STT mode and run. */
function nameSeed(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Each task's own seed: the realistic stand-in's draws for it. */
const seeded = (tasks: Task[], seed: number): Task[] => tasks.map((t, i) => ({ ...t, seed: mixSeed(seed, i) }));

/**
 * The trials of a configuration: turns (40 % complete, 40 % paused, 20 % lists and digit groups; a kind the corpus
 * lacks gives its share to the others), barge-ins (complete utterances), backchannels; interleaved.
 */
function tasksFor(corpus: CorpusItem[], turns: number, seed: number, bargeIns: number, backchannels: number): Task[] {
  const rnd = seededRandom(seed);
  const of = (c: CorpusItem['category']) => shuffled(corpus.filter((i) => i.category === c), rnd);
  const pick = (pool: CorpusItem[], n: number) => (pool.length ? Array.from({ length: n }, (_, i) => pool[i % pool.length]!) : []);
  const pools = { complete: of('complete'), pause: of('pause'), list: of('list') };
  const shares = { complete: 0.4, pause: 0.4, list: 0.2 };
  const present = (Object.keys(shares) as (keyof typeof shares)[]).filter((k) => pools[k].length);
  const total = present.reduce((n, k) => n + shares[k], 0);
  let left = turns;
  const turnTasks: Task[] = present.flatMap((k, i) => {
    const n = i === present.length - 1 ? left : Math.round((turns * shares[k]) / total);
    left -= n;
    return pick(pools[k], n).map((item): Task => ({ kind: 'turn', item }));
  });
  const barge: Task[] = pick(pools.complete, bargeIns).map((item) => ({ kind: 'barge_in', item }));
  const back: Task[] = pick(of('backchannel'), backchannels).map((item) => ({ kind: 'backchannel', item }));
  // Interleaved, so the calls' load is even over the run.
  return seeded(shuffled([...turnTasks, ...barge, ...back], rnd), seed);
}

async function runConfig(
  rig: Rig,
  config: BenchConfig,
  tasks: Task[],
  ctx: { corpus: string; stt: SttMode | 'offline'; deadline?: number; callOptions?: (i: number) => CallOptions; leg?: Leg },
): Promise<ConfigRun> {
  const t0 = Date.now();
  const deadline = ctx.deadline ?? Infinity;
  const agentId = await createAgent(rig, `Turns ${config.name}`, config.stt, config.turnTaking, config.agent);
  const queue = [...tasks];
  const total = queue.length;
  const llmFrom = rig.llm.completions.length;
  const run: ConfigRun = { config, corpus: ctx.corpus, stt: ctx.stt, results: [], callIds: [], errors: [], llmFrom, wall_s: 0 };
  const calls: (CallHandle | SipCallHandle)[] = [];
  // On the SIP leg the agent answers a number of its own, which the callers dial.
  const number = ctx.leg === 'sip' ? await buyNumber(rig, agentId).catch((err: unknown) => void run.errors.push(`number: ${(err as Error).message}`)) : null;
  // One call start at a time: the next Deepgram stand-in connection is the new call's.
  for (let c = 0; c < CALLS && !(ctx.leg === 'sip' && !number); c++) {
    try {
      calls.push(number ? await startSipCall(rig, agentId, number, config.stt, ctx.callOptions?.(c)) : await startCall(rig, agentId, config.stt, ctx.callOptions?.(c)));
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
          run.errors.push(`${task.kind} ${task.kind === 'quiet' ? '' : task.item.id}: ${(err as Error).message}`);
          await sleep(500);
        }
        done++;
        if (done % 10 === 0) process.stderr.write(`  ${config.name}: ${done}/${total}\n`);
      }
    }),
  );
  await Promise.all(calls.map((c) => ('phone' in c ? endSipCall(rig, c) : endCall(rig, c)).catch((err: unknown) => run.errors.push(`end: ${(err as Error).message}`))));
  run.wall_s = Math.round((Date.now() - t0) / 1000);
  if (run.errors.length) process.stderr.write(`  ${config.name}: ${run.errors.length} error(s), the first: ${run.errors.slice(0, 3).join(' | ')}\n`);
  return run;
}

/** How a block's calls reach the agent: web calls (rtc-node), or SIPp through the SIP bridge. */
type Leg = 'webrtc' | 'sip';

/** One block of the run: a configuration on a corpus in an STT mode, or a dirty line's trials on a leg. */
type Block =
  | { kind: 'config'; stt: SttMode | 'offline'; corpus: LoadedCorpus; config: BenchConfig; tasks: Task[] }
  | { kind: 'line'; leg: Leg; stt: SttMode; corpus: LoadedCorpus; config: BenchConfig; condition: LineCondition; tasks: Task[] };

/** A block's planned cost in turn trials: a barge-in, backchannel or quiet trial takes about two; a longer delay slows a turn. */
function weight(b: Block): number {
  const tt = b.config.turnTaking;
  const slower = 1 + (0.18 * Math.max(0, (tt?.min_delay_ms ?? 150) - 150)) / 1000;
  return b.tasks.reduce((n, t) => n + (t.kind === 'turn' ? slower : 2), 0);
}

/** The first corpus with complete utterances: the barge-ins of the floor and of the dirty lines. */
const withComplete = (corpora: LoadedCorpus[]) => corpora.find((c) => c.items.some((i) => i.category === 'complete'));

function plan(args: ReturnType<typeof parseArgs>, corpora: LoadedCorpus[]): { blocks: Block[]; unknown: string[] } {
  const all = [currentConfig(TURNS), fluxConfig(TURNS), ...deepgramConfigs(COUNTS)];
  const configs = all.filter((c) => (args.configs.length ? args.configs.includes(c.name) : !NAMED_ONLY.includes(c.name)));
  const unknown = args.configs.filter((n) => n !== 'none' && !all.some((c) => c.name === n));
  const blocks: Block[] = [];
  const swept = all.find((c) => c.name === SWEEP_CONFIG);
  const lineConfig = all.find((c) => c.name === LINE_CONFIG);
  if (!swept && SWEEP.length) unknown.push(`BENCH_SWEEP_CONFIG=${SWEEP_CONFIG}`);
  if (!lineConfig && (LINES.length || SIP_LINES.length)) unknown.push(`BENCH_LINE_CONFIG=${LINE_CONFIG}`);
  args.stt.forEach((stt, m) => {
    for (const corpus of corpora) {
      const forConfig = (config: BenchConfig) =>
        tasksFor(corpus.items, config.turns, mixSeed(nameSeed(corpus.corpus.name), nameSeed(config.sweepOf ?? config.name)), config.bargeIns ?? BARGE_INS, config.backchannels ?? BACKCHANNELS);
      for (const config of configs) blocks.push({ kind: 'config', stt, corpus, config, tasks: forConfig(config) });
      if (swept && configs.includes(swept)) for (const config of sweepConfigs(swept, SWEEP, SWEEP_TURNS)) blocks.push({ kind: 'config', stt, corpus, config, tasks: forConfig(config) });
      // The offline STT once per corpus (no Deepgram stand-in), with the configuration agents get by default.
      const shipped = configs.find((c) => c.name === 'transcript') ?? configs.at(-1);
      if (OFFLINE && m === 0 && shipped) {
        const offline: BenchConfig = { ...shipped, name: `${shipped.name}-offline`, label: `${shipped.label} (offline STT)`, stt: 'local', turns: TURNS, bargeIns: BARGE_INS, backchannels: BACKCHANNELS };
        blocks.push({ kind: 'config', stt: 'offline', corpus, config: offline, tasks: forConfig(offline) });
      }
    }
    // The dirty lines once, in the headline mode, with the first corpus's complete utterances as the barge-ins; then
    // the same over the SIP leg (a condition's trials are the same utterances in the same order on both legs).
    const lineCorpus = withComplete(corpora);
    if (m === 0 && lineConfig && lineCorpus) {
      const complete = lineCorpus.items.filter((i) => i.category === 'complete');
      const legs: [Leg, LineCondition[], number, number][] = [
        ['webrtc', LINES, LINE_BARGE_INS, LINE_QUIET],
        ['sip', SIP_LINES, SIP_LINE_BARGE_INS, SIP_LINE_QUIET],
      ];
      for (const [leg, conditions, bargeIns, quiet] of legs) {
        for (const condition of conditions) {
          const seed = mixSeed(nameSeed(`line-${condition}`), nameSeed(lineCorpus.corpus.name));
          const rnd = seededRandom(seed);
          const pool = shuffled(complete, rnd);
          const tasks: Task[] = [...Array.from({ length: bargeIns }, (_, i): Task => ({ kind: 'barge_in', item: pool[i % pool.length]! })), ...Array.from({ length: quiet }, (): Task => ({ kind: 'quiet' }))];
          blocks.push({ kind: 'line', leg, stt, corpus: lineCorpus, config: lineConfig, condition, tasks: seeded(shuffled(tasks, rnd), seed) });
        }
      }
    }
  });
  // A block with no trials (its counts set to 0) is left out.
  return { blocks: blocks.filter((b) => b.tasks.length > 0), unknown };
}

async function main() {
  initializeLogger({ pretty: false, level: 'error' });
  const started = Date.now();
  const args = parseArgs(process.argv.slice(2));
  const corpora: LoadedCorpus[] = [];
  for (const file of args.corpora) corpora.push(await loadCorpusFile(file, { onProgress: (m) => process.stderr.write(`${m}\n`) }));
  const { blocks, unknown } = plan(args, corpora);
  if (unknown.length) throw new Error(`unknown configuration(s): ${unknown.join(', ')} (known: ${NAMED_ONLY.join(', ')}, ${deepgramConfigs(COUNTS).map((c) => c.name).join(', ')})`);
  const units = blocks.reduce((n, b) => n + weight(b), 0);
  const estimateS = Math.round(WARM_UP_S + (withComplete(corpora) ? FLOOR : 0) * S_PER_FLOOR_TRIAL + units * S_PER_UNIT);
  const budgetS = num('BENCH_BUDGET_S', Math.round(estimateS * 1.5));
  process.stderr.write(
    `plan: STT ${args.stt.join(', ')}; corpora ${corpora.map((c) => `${c.corpus.name} (${c.items.length} items)`).join(', ')}; ${blocks.length} blocks, ${blocks.reduce((n, b) => n + b.tasks.length, 0)} trials; about ${Math.round(estimateS / 60)} min at the last full run's pace (budget ${Math.round(budgetS / 60)} min)\n`,
  );
  const bargeCorpus = withComplete(corpora);
  const onLeg = (leg: Leg) => blocks.some((b) => b.kind === 'line' && b.leg === leg);
  const complete = bargeCorpus?.items.filter((i) => i.category === 'complete') ?? [];
  const lineSetups = { webrtc: onLeg('webrtc') ? await prepareLines(LINES, complete, LINE_OPTIONS) : [], sip: onLeg('sip') ? await prepareLines(SIP_LINES, complete, LINE_OPTIONS, SIP_RATE) : [] };
  const rig = await startRig({ onProgress: (m) => process.stderr.write(`${m}\n`), replyTags: REPLY_TAGS, sip: onLeg('sip') });
  const summaries: Summary[] = [];
  const lines: LineSummary[] = [];
  const sipLines: LineSummary[] = [];
  let floor: FloorTrial[] = [];
  let failed = true;
  try {
    // A warm-up call (job process start, model loads), not counted.
    process.stderr.write('warm-up\n');
    const first = blocks[0];
    if (first) {
      if (first.stt !== 'offline') rig.deepgram.setRealistic(first.stt === 'realistic' ? REALISTIC : null);
      const warm = { ...first.config, name: 'warm-up' };
      await runConfig(rig, warm, first.tasks.filter((t) => t.kind !== 'quiet').slice(0, 4), { corpus: first.corpus.corpus.name, stt: first.stt }).catch((err: unknown) => process.stderr.write(`warm-up failed: ${(err as Error).message}\n`));
    }
    if (FLOOR > 0 && bargeCorpus) {
      process.stderr.write(`floor: ${FLOOR} barge-ins on a bare rtc-node participant\n`);
      floor = await runFloor(rig.stack, shuffled(bargeCorpus.items.filter((i) => i.category === 'complete'), seededRandom(7)), FLOOR);
    }
    // Each block's share of what is left of the budget, by its planned trials.
    let left = units;
    const share = (b: Block) => {
      const remaining = budgetS * 1000 - (Date.now() - started);
      const ms = (remaining * weight(b)) / Math.max(1e-9, left);
      left -= weight(b);
      return Date.now() + ms;
    };
    for (const b of blocks) {
      if (b.stt !== 'offline') rig.deepgram.setRealistic(b.stt === 'realistic' ? REALISTIC : null);
      const what = b.kind === 'line' ? `${b.leg === 'sip' ? 'SIP leg, ' : ''}line ${b.condition}, ${b.config.name}` : b.config.name;
      process.stderr.write(`${b.stt} / ${b.corpus.corpus.name}: ${what} (${b.tasks.length} trials, ${CALLS} calls)\n`);
      if (b.kind === 'line') {
        const setup = lineSetups[b.leg].find((s) => s.condition === b.condition)!;
        const run = await runConfig(rig, b.config, b.tasks, { corpus: b.corpus.corpus.name, stt: b.stt, deadline: share(b), callOptions: (i) => setup.callOptions(i), leg: b.leg });
        (b.leg === 'sip' ? sipLines : lines).push(summarizeLine(rig, run, setup));
      } else {
        summaries.push(await summarize(rig, await runConfig(rig, b.config, b.tasks, { corpus: b.corpus.corpus.name, stt: b.stt, deadline: share(b) })));
      }
    }
    budgets(summaries);
    failed = false;
  } finally {
    await rig.close({ keepLogs: failed });
    await disposeRtc();
  }

  // The best per STT mode and corpus: the lowest EOU p50 among those that cut in no more than the Silero baseline.
  const best: Record<string, string | null> = {};
  for (const stt of args.stt) {
    for (const c of corpora) {
      // Never the Flux stand-in: its end of turn is a stand-in's rule (configs.ts, fluxConfig).
      const group = summaries.filter((s) => s.stt_mode === stt && s.corpus === c.corpus.name && !s.sweep_of && s.name !== 'flux-stt');
      const base = group.find((s) => s.name === 'silero');
      const cut = (s: Summary) => s.cut_ins.pause.cut_in / Math.max(1, s.cut_ins.pause.n);
      const eligible = group.filter((s) => !base || cut(s) <= cut(base));
      best[`${stt}/${c.corpus.name}`] = [...eligible].sort((a, b) => a.eou_delay_ms.all.median_any_n - b.eou_delay_ms.all.median_any_n)[0]?.name ?? null;
    }
  }
  const result = {
    bench: 'turn-taking',
    wall_seconds: Math.round((Date.now() - started) / 1000),
    plan: { stt_modes: args.stt, headline: args.stt[0], estimate_s: estimateS, budget_s: budgetS, sweep: { config: SWEEP_CONFIG, points: SWEEP, turns: SWEEP_TURNS }, lines: { conditions: LINES, configuration: LINE_CONFIG, barge_ins: LINE_BARGE_INS, quiet: LINE_QUIET }, sip_lines: { conditions: SIP_LINES, configuration: LINE_CONFIG, barge_ins: SIP_LINE_BARGE_INS, quiet: SIP_LINE_QUIET } },
    corpora: corpora.map((c) => ({
      name: c.corpus.name,
      file: path.relative(path.resolve(import.meta.dirname, '../..'), c.file),
      items: c.items.length,
      by_category: Object.fromEntries(['complete', 'pause', 'list', 'backchannel'].map((k) => [k, c.items.filter((i) => i.category === k).length])),
      mid_turn_pauses_in_file: midTurnPauses(c.corpus),
      mid_turn_pauses_spoken: c.items.reduce((n, i) => n + i.pauses_ms.length, 0),
    })),
    stand_ins: {
      stt: {
        realistic: REALISTIC,
        oracle: { what: "the script's words and punctuation, each word out up to 120 ms before its end, interims every 250 ms, the final a fixed time after the speech; its figures are floors", final_delay_ms: STT_FINAL_DELAY_MS },
      },
      llm_ttft_ms: LLM_TTFT_MS,
      llm_token_ms: LLM_TOKEN_MS,
      tts_ttfb_ms: TTS_TTFB_MS,
    },
    calls_at_once: CALLS,
    targets: { eou_p50_ms: 200, eou_p95_ms: 350, v2v_p50_ms: LLM_TTFT_MS + TTS_TTFB_MS + 250, cut_ins: 'no more than the Silero baseline' },
    best,
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
    dirty_line: lines,
    sip_line: {
      leg: {
        what: "SIPp dials a number the agent answers through the LiveKit SIP bridge; the caller's RTP is this process's: G.711 µ-law (PCMU), 8 kHz, 20 ms packets, the line mixed in at 8 kHz (the echo: the decoded RTP received, sent back)",
        bridge: SIP_BRIDGE,
        stop_measured: 'start of the caller\'s speech (the RTP packet with its first sample sent) to the agent\'s audio stopping in the RTP received',
      },
      lines: sipLines,
    },
  };
  writeResults(RESULTS, result);
  const f = (x: number) => (Number.isNaN(x) ? 'n/a' : `${Math.round(x)}`);
  const split = summaries
    .filter((r) => r.barge_in.to_worker_pause_ms.n > 0)
    .map((r) => `- ${r.corpus} / ${r.stt_mode} / ${r.name}: start -> worker pause ${f(r.barge_in.to_worker_pause_ms.median_any_n)} ms, pause -> stop at the client ${f(r.barge_in.worker_pause_to_stop_ms.median_any_n)} ms (medians, n=${r.barge_in.to_worker_pause_ms.n}; paused by the onset ${r.barge_in.paused_by.onset}, by agents-js ${r.barge_in.paused_by.agents_js})`);
  for (const [leg, rows] of [['web call', lines], ['SIP leg', sipLines]] as const) {
    for (const r of rows.filter((x) => x.barge_in.to_worker_pause_ms.n > 0)) {
      split.push(`- line ${r.condition}, ${leg}: start -> worker pause ${f(r.barge_in.to_worker_pause_ms.median_any_n)} ms, pause -> stop at the caller ${f(r.barge_in.worker_pause_to_stop_ms.median_any_n)} ms (medians, n=${r.barge_in.to_worker_pause_ms.n})`);
    }
  }
  const fl = result.barge_in_floor;
  if (fl.trials) split.push(`- floor (bare rtc-node participant): stop p50 ${f(fl.stop_ms.p50)} / p95 ${f(fl.stop_ms.p95)} ms (n=${fl.stop_ms.n}, max ${f(fl.stop_ms.max)}); start -> heard ${f(fl.heard_ms.median_any_n)} ms, drop -> stop at the client ${f(fl.drop_to_stop_ms.median_any_n)} ms (medians)`);
  const rows = summaries.filter((s) => !s.sweep_of);
  const swept = summaries.filter((s) => s.sweep_of || summaries.some((x) => x.sweep_of === s.name && x.corpus === s.corpus && x.stt_mode === s.stt_mode));
  console.log(
    [
      `\nTurn-taking (${result.wall_seconds} s; STT: ${args.stt.map((m) => (m === 'oracle' ? 'oracle (its figures are floors)' : m)).join(', ')}; * = fewer than 30 samples, a median only)`,
      rows.length ? `\nTurns\n\n${turnTable(rows)}` : '',
      summaries.length ? `\nFalse cut-offs by pause length (beside the share of pauses longer than the floor)\n\n${pauseLengthTable(summaries)}` : '',
      rows.length ? `\nBarge-ins and backchannels\n\n${interruptionTable(rows)}` : '',
      swept.length ? `\nSweep of ${SWEEP_CONFIG}'s delays (the budget figures above come from these points)\n\n${sweepTable(swept)}` : '',
      lines.length ? `\nDirty lines (${LINE_CONFIG})\n\n${lineTable(lines)}` : '',
      sipLines.length ? `\nDirty lines over a SIP leg (${LINE_CONFIG}; SIPp through the SIP bridge ${SIP_BRIDGE}, G.711 at 8 kHz)\n\n${lineTable(sipLines)}` : '',
      `\nBarge-ins, where the time went:\n${split.join('\n')}`,
      `\nBest (lowest EOU p50 cutting in no more than Silero): ${Object.entries(best).map(([k, v]) => `${k}: ${v ?? 'n/a'}`).join('; ')}. JSON: bench/results/${RESULTS}.json`,
    ]
      .filter(Boolean)
      .join('\n'),
  );
}

await main();
process.exit(0);
