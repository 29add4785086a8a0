// A replay of the worker's end-of-turn decision over whole corpora (docs/benchmarks.md, "Turn-taking", the
// replay): no call, no clock, so it covers every pause of every corpus at every delay in seconds, where the live
// bench (run.ts) gets about a hundred pauses a configuration in half an hour. It is a model of the live path, not a
// measurement of it, and is labelled so wherever it is quoted:
//   - the speech: each corpus item's segments as synthesized (their times from the corpus cache, corpus.ts);
//   - the STT: the realistic stand-in's own draws (test/support/realistic-stt.ts: the final a drawn 100-400 ms after
//     the speech stops, its period from the words so far and that silence);
//   - the decision: the transcript rules (endOfTurnProbability) on the transcript so far at the final, or silence
//     alone (`vad`); the wait min_delay_ms after a likely end (or the adaptive wait, adaptive-wait.ts), max_delay_ms
//     after an unlikely one; the commit at the later of that wait, the final and the VAD's end of speech;
//   - a pause is cut off when the commit comes before the caller goes on (pauses after one are not scored, as in
//     cut-offs.ts); the latency at a true end is the commit's delay after the speech; v2v adds the stand-ins' LLM
//     (200 ms to the first token) and TTS (100 ms to the first byte) and nothing for the media path.
// Calls of 30 turns in a seeded order (the adaptive wait learns within a call). The end-of-turn model and Flux need
// their models and are measured live only.
// Usage: node bench/turn-taking/replay.ts [--corpus FILE]... (default: every committed corpus). BENCH_RESULTS names
// the results file (default turn-taking-replay).
import path from 'node:path';
import { percentile } from '../../shared/latency.ts';
import { AdaptiveWait } from '../../media-worker/src/session/adaptive-wait.ts';
import { VAD_END_LAG_MS, vadSilenceFor } from '../../media-worker/src/session/mappings.ts';
import { endOfTurnProbability } from '../../media-worker/src/session/transcript-turn-detector.ts';
import { REALISTIC_DEFAULTS, punctuated, realisticTranscript } from '../../test/support/realistic-stt.ts';
import { mixSeed, seededRandom } from '../../test/support/seeded-random.ts';
import { writeResults } from '../support/results.ts';
import { disposeRtc } from '../../test/support/rtc-client.ts';
import { CORPORA_DIR } from './corpus-file.ts';
import { loadCorpusFile, ms, type CorpusItem } from './corpus.ts';
import { PAUSE_BUCKETS, pauseBucket, type PauseBucket } from './cut-offs.ts';

export interface ReplayMode {
  name: string;
  detection: 'transcript' | 'vad';
  endpointing: 'fixed' | 'dynamic';
  min_delay_ms: number;
  max_delay_ms: number;
}

export interface ReplayPoint {
  mode: ReplayMode;
  corpus: string;
  pauses_scored: number;
  false_cut_offs: number;
  false_cut_off_rate: number;
  share_longer_than_floor: number;
  by_pause_ms: Record<PauseBucket, { scored: number; cut: number; rate: number }>;
  ends: number;
  mean_eou_ms: number;
  eou_p50_ms: number;
  eou_p95_ms: number;
  v2v_p50_ms: number;
}

const TURNS_PER_CALL = 30;
/** The live bench's stand-ins (rig.ts's LLM_TTFT_MS and TTS_TTFB_MS; not imported: rig.ts loads the media SDK). */
const LLM_TTFT_MS = 200;
const TTS_TTFB_MS = 100;
const ratio = (a: number, n: number) => (n ? Math.round((a / n) * 1e4) / 1e4 : NaN);

/** One corpus through one mode: every paused or complete utterance once, in calls of 30 turns. */
export function replay(items: CorpusItem[], mode: ReplayMode, seed = 1): ReplayPoint {
  const turns = items.filter((i) => i.category !== 'backchannel');
  const rnd = seededRandom(seed);
  const order = turns.map((item, i) => ({ item, i, r: rnd() })).sort((a, b) => a.r - b.r);
  const vadEnd = vadSilenceFor({ detection: mode.detection, min_delay_ms: mode.min_delay_ms }) + VAD_END_LAG_MS;
  const scored: { ms: number; cut: boolean }[] = [];
  const eous: number[] = [];
  let wait: AdaptiveWait | null = null;
  order.forEach(({ item, i }, n) => {
    if (n % TURNS_PER_CALL === 0) wait = mode.endpointing === 'dynamic' ? new AdaptiveWait({ minDelay: mode.min_delay_ms, maxDelay: mode.max_delay_ms, vadEndMs: vadEnd }) : null;
    const spans = item.segments_at.map((s) => ({ text: s.text, startMs: ms(item, s.start), endMs: ms(item, s.end) }));
    const t = realisticTranscript(spans, REALISTIC_DEFAULTS, mixSeed(seed, i));
    let cutBefore = false;
    let clock = 0;
    for (let k = 0; k < spans.length; k++) {
      const finalDelay = t.nextFinalDelay();
      const heard = t.words.filter((w) => w.segment <= k);
      const final = punctuated(heard, finalDelay, REALISTIC_DEFAULTS);
      const text = final.map((w) => w.text).join(' ');
      const likely = mode.detection === 'vad' || endOfTurnProbability(text) >= 0.5;
      const floor = wait ? wait.minDelay : mode.min_delay_ms;
      const commit = Math.max(likely ? floor : mode.max_delay_ms, finalDelay, vadEnd);
      const pause = k < spans.length - 1 ? spans[k + 1]!.startMs - spans[k]!.endMs : null;
      if (pause === null) {
        if (!cutBefore) eous.push(commit);
        break;
      }
      const cut = commit < pause;
      if (!cutBefore) scored.push({ ms: pause, cut });
      // The adaptive wait hears the pause when the VAD does, and learns it unless the agent spoke in it.
      const w = wait as AdaptiveWait | null;
      if (w && pause > vadEnd) {
        clock += 10_000;
        w.onSpeechEnd(clock + vadEnd);
        if (cut && commit + LLM_TTFT_MS + TTS_TTFB_MS < pause) w.onAgentSpeaking(clock + commit + LLM_TTFT_MS + TTS_TTFB_MS);
        w.onSpeechStart(clock + pause);
      }
      if (cut) cutBefore = true;
    }
    // The agent answers the turn: the silence before the caller's next turn is not a pause.
    (wait as AdaptiveWait | null)?.onAgentSpeaking(clock);
  });
  const cuts = scored.filter((s) => s.cut).length;
  const by_pause_ms = Object.fromEntries(
    PAUSE_BUCKETS.map((b) => {
      const inB = scored.filter((s) => pauseBucket(s.ms) === b);
      const c = inB.filter((s) => s.cut).length;
      return [b, { scored: inB.length, cut: c, rate: ratio(c, inB.length) }];
    }),
  ) as ReplayPoint['by_pause_ms'];
  const round = (x: number) => Math.round(x);
  return {
    mode,
    corpus: turns[0]?.corpus ?? '',
    pauses_scored: scored.length,
    false_cut_offs: cuts,
    false_cut_off_rate: ratio(cuts, scored.length),
    share_longer_than_floor: ratio(scored.filter((s) => s.ms > mode.min_delay_ms).length, scored.length),
    by_pause_ms,
    ends: eous.length,
    mean_eou_ms: round(eous.reduce((a, b) => a + b, 0) / Math.max(1, eous.length)),
    eou_p50_ms: round(percentile(eous, 50)),
    eou_p95_ms: round(percentile(eous, 95)),
    v2v_p50_ms: round(percentile(eous, 50) + LLM_TTFT_MS + TTS_TTFB_MS),
  };
}

/** The modes and their delays: each local detection mode's curve of false cut-offs against mean EOU. */
export function replayModes(): ReplayMode[] {
  const fixed = [150, 300, 450, 600, 800, 1000, 1200, 1500, 1600, 1700, 1800, 1900, 2000, 2500];
  return [
    ...fixed.map((f): ReplayMode => ({ name: `transcript ${f}/${Math.max(1500, f)}`, detection: 'transcript', endpointing: 'fixed', min_delay_ms: f, max_delay_ms: Math.max(1500, f) })),
    // A ceiling over the floor: a turn ending on an open word ("for", "um") waits longer than a finished-sounding one.
    ...[1000, 1200, 1500, 1600, 1700, 1800].map((f): ReplayMode => ({ name: `transcript ${f}/3000`, detection: 'transcript', endpointing: 'fixed', min_delay_ms: f, max_delay_ms: 3000 })),
    ...[300, 450, 600, 800, 1000].flatMap((f) => [2000, 2500, 3000].map((c): ReplayMode => ({ name: `transcript dynamic ${f}/${c}`, detection: 'transcript', endpointing: 'dynamic', min_delay_ms: f, max_delay_ms: c }))),
    ...[300, 500, 800, 1000, 1500, 2000, 2500].map((f): ReplayMode => ({ name: `vad ${f}`, detection: 'vad', endpointing: 'fixed', min_delay_ms: f, max_delay_ms: Math.max(f, 3000) })),
    ...[300, 500, 800].map((f): ReplayMode => ({ name: `vad dynamic ${f}/3000`, detection: 'vad', endpointing: 'dynamic', min_delay_ms: f, max_delay_ms: 3000 })),
  ];
}

async function main() {
  const args = process.argv.slice(2);
  const files: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--corpus') files.push(path.resolve(args[++i]!));
    else throw new Error(`usage: node bench/turn-taking/replay.ts [--corpus FILE]...`);
  }
  if (!files.length) for (const f of ['builtin', 'callers', 'tuning-long', 'heldout-a']) files.push(path.join(CORPORA_DIR, `${f}.json`));
  const points: ReplayPoint[] = [];
  for (const f of files) {
    const { items } = await loadCorpusFile(f, { onProgress: (m) => process.stderr.write(`${m}\n`) });
    for (const mode of replayModes()) points.push(replay(items, mode));
  }
  // eot-bench's pair per corpus and mode family: false cut-offs within 300 ms of mean latency, latency within 5 %.
  const families = [...new Set(points.map((p) => `${p.corpus}|${p.mode.detection} ${p.mode.endpointing}`))];
  const pairs = families.map((f) => {
    const [corpus, family] = f.split('|') as [string, string];
    const ps = points.filter((p) => p.corpus === corpus && `${p.mode.detection} ${p.mode.endpointing}` === family);
    const fast = ps.filter((p) => p.mean_eou_ms <= 300).sort((a, b) => a.false_cut_off_rate - b.false_cut_off_rate)[0];
    const safe = ps.filter((p) => p.false_cut_off_rate <= 0.05).sort((a, b) => a.mean_eou_ms - b.mean_eou_ms)[0];
    return { corpus, family, cut_off_rate_at_300ms: fast ? { value: fast.false_cut_off_rate, at: fast.mode.name } : null, latency_ms_at_5pct_cut_offs: safe ? { value: safe.mean_eou_ms, at: safe.mode.name } : null };
  });
  const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
  const lines = points.map(
    (p) =>
      `| ${p.corpus} | ${p.mode.name} | ${p.false_cut_offs}/${p.pauses_scored} (${pct(p.false_cut_off_rate)}) | ${pct(p.share_longer_than_floor)} | ${PAUSE_BUCKETS.map((b) => `${p.by_pause_ms[b].cut}/${p.by_pause_ms[b].scored}`).join(' | ')} | ${p.mean_eou_ms} | ${p.eou_p50_ms} / ${p.eou_p95_ms} (n=${p.ends}) | ${p.v2v_p50_ms} |`,
  );
  console.log(
    [
      `| Corpus | Mode | false cut-offs | pauses > floor | ${PAUSE_BUCKETS.map((b) => `${b} ms`).join(' | ')} | mean EOU at true ends | EOU p50 / p95 | v2v p50 (stand-ins) |`,
      `|${'---|'.repeat(10)}`,
      ...lines,
      '',
      '| Corpus | Mode | false cut-offs @ 300 ms | mean EOU @ 5 % false cut-offs |',
      '|---|---|---|---|',
      ...pairs.map((p) => `| ${p.corpus} | ${p.family} | ${p.cut_off_rate_at_300ms ? `${pct(p.cut_off_rate_at_300ms.value)} (${p.cut_off_rate_at_300ms.at})` : 'none within'} | ${p.latency_ms_at_5pct_cut_offs ? `${p.latency_ms_at_5pct_cut_offs.value} ms (${p.latency_ms_at_5pct_cut_offs.at})` : 'none within'} |`),
    ].join('\n'),
  );
  writeResults(process.env.BENCH_RESULTS ?? 'turn-taking-replay', {
    what: 'a replay of the worker end-of-turn decision over whole corpora with the realistic stand-in draws: a model of the live path, not a live measurement (bench/turn-taking/replay.ts)',
    realistic: REALISTIC_DEFAULTS,
    turns_per_call: TURNS_PER_CALL,
    v2v: `EOU + LLM ${LLM_TTFT_MS} ms + TTS ${TTS_TTFB_MS} ms; no media path`,
    eot_bench_pairs: pairs,
    points,
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    await main();
  } finally {
    // Synthesizing a corpus resamples through rtc-node, whose native runtime keeps the process alive until disposed.
    await disposeRtc();
  }
}
