// bench:turns's figures for one configuration's trials (per corpus and STT mode), and the tables it prints
// (docs/benchmarks.md, "Turn-taking").
import { percentile } from '../../shared/latency.ts';
import type { SttMode } from './args.ts';
import type { BenchConfig } from './configs.ts';
import { PAUSE_BUCKETS, cutOffRateAtLatencyBudget, latencyAtCutOffBudget, operatingPoint, summarizeCutOffs, type OperatingPoint, type SpokenTurn } from './cut-offs.ts';
import type { LineSetup } from './dirty-line.ts';
import {
  LLM_TTFT_MS,
  TTS_TTFB_MS,
  endedCall,
  eouOf,
  wastedTokens,
  workerPauses,
  workerTurns,
  type BackchannelResult,
  type BargeInResult,
  type QuietResult,
  type Rig,
  type TaskResult,
  type TurnResult,
} from './rig.ts';

export interface ConfigRun {
  config: BenchConfig;
  corpus: string;
  /** The Deepgram stand-in's mode, or offline (the local STT). */
  stt: SttMode | 'offline';
  results: (TaskResult & { call_id: string })[];
  callIds: string[];
  errors: string[];
  llmFrom: number;
  wall_s: number;
}

// A p50 of fewer than 30 samples or a p95 of fewer than 100 is NaN (printed "n/a").
export const stats = (xs: number[]) => ({
  n: xs.length,
  p50: xs.length >= 30 ? +percentile(xs, 50).toFixed(1) : NaN,
  p95: xs.length >= 100 ? +percentile(xs, 95).toFixed(1) : NaN,
  median_any_n: xs.length ? +percentile(xs, 50).toFixed(1) : NaN,
  max: xs.length ? +Math.max(...xs).toFixed(1) : NaN,
});

export const known = (xs: (number | null)[]) => xs.filter((x): x is number => x !== null);

type With<T> = T & { call_id: string };
const of = <K extends TaskResult['kind']>(run: ConfigRun, kind: K) => run.results.filter((r): r is With<Extract<TaskResult, { kind: K }>> => r.kind === kind);

/** The barge-ins' stop times, and where each stopped one's time went (the worker's pause splits it). */
function bargeIns(rig: Rig, barge: With<BargeInResult>[]) {
  const valid = barge.filter((b) => b.valid);
  // The caller's start to the worker's pause (the audio in, and the onset or the VAD), then the pause to the stop
  // at the client (the audio already out, both ways of the transport).
  const pauses = workerPauses(rig.stack);
  const split = valid.flatMap((b) => {
    if (b.stop_at === null) return [];
    const p = pauses.find((x) => x.call_id === b.call_id && x.at >= b.start_at - 30 && x.at <= b.stop_at!);
    return p ? [{ to_pause: p.at - b.start_at, pause_to_stop: b.stop_at - p.at, by: p.by }] : [];
  });
  return {
    trials: barge.length,
    valid: valid.length,
    stopped: valid.filter((b) => b.stop_ms !== null).length,
    stop_ms: stats(known(valid.map((b) => b.stop_ms))),
    to_worker_pause_ms: stats(split.map((x) => x.to_pause)),
    worker_pause_to_stop_ms: stats(split.map((x) => x.pause_to_stop)),
    paused_by: { onset: split.filter((x) => x.by === 'onset').length, agents_js: split.filter((x) => x.by === 'agents-js').length },
    samples: valid.map((b) => b.stop_ms),
  };
}

/** The spoken turns as cut-offs.ts reads them. */
const spoken = (turns: With<TurnResult>[]): SpokenTurn[] =>
  turns.map((t) => ({ call_id: t.call_id, kind: t.category, speech_start_at: t.speech_start_at, speech_end_at: t.speech_end_at, pauses_at: t.pauses_at }));

export async function summarize(rig: Rig, run: ConfigRun) {
  const records = await Promise.all(run.callIds.map((id) => endedCall(rig, id)));
  const agentMessages = records.flatMap((r) => (r?.messages ?? []).filter((m: { role: string }) => m.role === 'agent').map((m: { content: string }) => m.content ?? ''));
  const userTurns = records.reduce((n, r) => n + (r?.messages ?? []).filter((m: { role: string }) => m.role === 'user').length, 0);
  const trace = workerTurns(rig.stack);
  const turns = of(run, 'turn');
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
  const back = of(run, 'backchannel');
  const backValid = back.filter((b) => b.valid);
  const waste = wastedTokens(rig.llm, run.llmFrom, agentMessages);
  const committed = Math.max(1, userTurns);
  const tt = run.config.turnTaking;
  const cutOffs = summarizeCutOffs(spoken(turns), trace, tt?.min_delay_ms ?? null);
  const point = operatingPoint(run.config.name, tt ? { min_delay_ms: tt.min_delay_ms, max_delay_ms: tt.max_delay_ms } : null, cutOffs);
  return {
    name: run.config.name,
    label: run.config.label,
    corpus: run.corpus,
    stt: run.config.stt,
    /** realistic, oracle (its figures are floors), or offline. */
    stt_mode: run.stt,
    floor: run.stt === 'oracle',
    sweep_of: run.config.sweepOf ?? null,
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
    /** From the worker's commits: false cut-offs at mid-turn pauses, premature commits, the latency at true ends. */
    cut_offs: cutOffs,
    operating_point: point,
    /** The eot-bench budget figures; from this point alone until a sweep of this configuration fills them (budgets()). */
    budget: budgetOf([point], 'this configuration alone: its own point is inside the budget or not'),
    barge_in: bargeIns(rig, of(run, 'barge_in')),
    backchannel: {
      trials: back.length,
      valid: backValid.length,
      false_stops: backValid.filter((b: BackchannelResult) => b.stopped).length,
      gaps_over_400: backValid.filter((b) => b.gap_over_400).length,
      longest_gap_ms: stats(backValid.map((b) => b.longest_gap_ms)),
    },
    llm: { ...waste, committed_user_turns: userTurns, wasted_tokens_per_turn: +(waste.wasted / committed).toFixed(2) },
    call_latency_eou_p50_ms: records.map((r) => r?.latency?.eou_delay?.p50_ms ?? null),
    samples: run.results,
    worker_trace: traced,
  };
}

export type Summary = Awaited<ReturnType<typeof summarize>>;

export function budgetOf(points: OperatingPoint[], from: string) {
  return {
    from,
    points: points.map((p) => p.name),
    cut_off_rate_at_300ms: cutOffRateAtLatencyBudget(points),
    latency_ms_at_5pct_cut_offs: latencyAtCutOffBudget(points),
  };
}

/** Fills the swept configurations' budget figures from all their points (the configuration's and its sweep's). */
export function budgets(summaries: Summary[]): void {
  for (const s of summaries) {
    if (s.sweep_of) continue;
    const points = summaries.filter((x) => x.corpus === s.corpus && x.stt_mode === s.stt_mode && x.sweep_of === s.name);
    if (!points.length) continue;
    const all = [s, ...points].map((x) => x.operating_point);
    s.budget = budgetOf(all, `a sweep of the delays: ${all.map((p) => `${p.min_delay_ms}/${p.max_delay_ms}`).join(', ')} ms`);
    for (const p of points) p.budget = s.budget;
  }
}

/** The dirty-line trials of one condition: barge-ins on it, and the agent's reply with only the line under it. */
export function summarizeLine(rig: Rig, run: ConfigRun, setup: LineSetup) {
  const quiet = of(run, 'quiet').filter((q: With<QuietResult>) => q.valid);
  const pauses = workerPauses(rig.stack);
  const paused = quiet.filter((q) => pauses.some((p) => p.call_id === q.call_id && p.at >= q.began_at && p.at <= q.natural_end_at));
  return {
    condition: setup.condition,
    line: setup.describe,
    configuration: run.config.name,
    corpus: run.corpus,
    stt_mode: run.stt,
    wall_seconds: run.wall_s,
    errors: run.errors,
    barge_in: bargeIns(rig, of(run, 'barge_in')),
    quiet: {
      trials: of(run, 'quiet').length,
      valid: quiet.length,
      /** The worker paused the reply (its `agent paused` record) with nobody speaking: the line alone did it. */
      false_pauses: paused.length,
      false_pauses_by: { onset: quiet.filter((q) => pauses.some((p) => p.call_id === q.call_id && p.by === 'onset' && p.at >= q.began_at && p.at <= q.natural_end_at)).length },
      /** The reply was not heard to its end at the client. */
      stopped: quiet.filter((q) => q.stopped).length,
      gaps_over_400: quiet.filter((q) => q.longest_gap_ms >= 400).length,
      longest_gap_ms: stats(quiet.map((q) => q.longest_gap_ms)),
    },
  };
}

export type LineSummary = ReturnType<typeof summarizeLine>;

// ---- the printed tables ----

const f = (x: number | null | undefined) => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : `${Math.round(x)}`);
const pct = (a: number, n: number) => (n ? `${a}/${n} (${Math.round((100 * a) / n)} %)` : 'n/a');
const rate = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)} %` : 'n/a');
const sttName = (s: Summary | LineSummary) => (s.stt_mode === 'offline' ? 'offline (pocketsphinx)' : s.stt_mode === 'oracle' ? 'oracle stand-in (floor)' : 'realistic stand-in');

const fixed2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

function budgetCells(s: Summary): [string, string] {
  const b = s.budget;
  const alone = b.points.length === 1;
  const fco = b.cut_off_rate_at_300ms;
  const lat = b.latency_ms_at_5pct_cut_offs;
  // A point with no scored pause or no clean end has no place on the plane.
  const p = s.operating_point;
  if (alone && !(Number.isFinite(p.false_cut_off_rate) && Number.isFinite(p.mean_latency_ms))) return ['n/a', 'n/a'];
  return [
    fco ? `${rate(fco.value)}${alone ? '' : ` (${fco.at})`}` : alone ? `over (mean ${f(s.operating_point.mean_latency_ms)} ms)` : 'none within',
    lat ? `${f(lat.value)} ms${alone ? '' : ` (${lat.at})`}` : alone ? `over (${rate(s.operating_point.false_cut_off_rate)})` : 'none within',
  ];
}

export function turnTable(rows: Summary[]): string {
  const head =
    '| Corpus | STT | Configuration | EOU p50 / p95 (ms) | v2v p50 / p95 (ms) | false cut-offs (pauses committed in) | false cut-offs @ 300 ms | EOU @ 5 % false cut-offs | premature commits / utterance | audible cut-ins, paused |';
  const lines = rows.map((r) => {
    const c = r.cut_offs;
    const [fco, lat] = budgetCells(r);
    return `| ${r.corpus} | ${sttName(r)} | ${r.label} | ${f(r.eou_delay_ms.all.p50)} / ${f(r.eou_delay_ms.all.p95)} (n=${r.eou_delay_ms.all.n}) | ${f(r.voice_to_voice_ms.p50)} / ${f(r.voice_to_voice_ms.p95)} (n=${r.voice_to_voice_ms.n}) | ${pct(c.false_cut_offs, c.pauses_scored)} | ${fco} | ${lat} | ${fixed2(c.premature_commits.per_utterance)} (${c.premature_commits.commits}/${c.premature_commits.utterances}) | ${pct(r.cut_ins.pause.cut_in, r.cut_ins.pause.n)} |`;
  });
  return [head, '|---|---|---|---|---|---|---|---|---|---|', ...lines].join('\n');
}

export function interruptionTable(rows: Summary[]): string {
  const head = '| Corpus | STT | Configuration | barge-in stop p50 / p95 (ms), stopped | backchannel false stops; longest gap p50 (ms) | wasted tokens / turn |';
  const lines = rows.map(
    (r) =>
      `| ${r.corpus} | ${sttName(r)} | ${r.label} | ${f(r.barge_in.stop_ms.median_any_n)}${r.barge_in.stop_ms.n < 30 ? '*' : ''} / ${f(r.barge_in.stop_ms.p95)}, ${r.barge_in.stopped}/${r.barge_in.valid} | ${pct(r.backchannel.false_stops, r.backchannel.valid)}; ${f(r.backchannel.longest_gap_ms.median_any_n)} | ${r.llm.wasted_tokens_per_turn} |`,
  );
  return [head, '|---|---|---|---|---|---|', ...lines].join('\n');
}

export function sweepTable(rows: Summary[]): string {
  const head = '| Corpus | STT | Configuration | min / max delay (ms) | false cut-offs | mean EOU at true ends (ms) | EOU p50 (ms) | premature commits / utterance |';
  const lines = rows.map((r) => {
    const c = r.cut_offs;
    const tt = r.turn_taking;
    return `| ${r.corpus} | ${sttName(r)} | ${r.sweep_of ?? r.name} | ${tt?.min_delay_ms ?? '-'} / ${tt?.max_delay_ms ?? '-'} | ${pct(c.false_cut_offs, c.pauses_scored)} | ${f(c.end_latency_ms.mean)} (n=${c.end_latency_ms.n}) | ${f(c.end_latency_ms.median_any_n)} | ${fixed2(c.premature_commits.per_utterance)} |`;
  });
  return [head, '|---|---|---|---|---|---|---|---|', ...lines].join('\n');
}

/** Every configuration's false cut-offs beside the share of pauses longer than its floor, and by pause length. */
export function pauseLengthTable(rows: Summary[]): string {
  const head = `| Corpus | STT | Configuration | false cut-offs | pauses > floor | ${PAUSE_BUCKETS.map((b) => `${b} ms`).join(' | ')} |`;
  const lines = rows.map((r) => {
    const c = r.cut_offs;
    const share = c.share_longer_than_floor === null ? 'n/a' : `${rate(c.share_longer_than_floor)} (floor ${r.turn_taking?.min_delay_ms ?? '-'} ms)`;
    const cells = PAUSE_BUCKETS.map((b) => pct(c.by_pause_ms[b].cut, c.by_pause_ms[b].scored));
    return `| ${r.corpus} | ${sttName(r)} | ${r.name} | ${pct(c.false_cut_offs, c.pauses_scored)} | ${share} | ${cells.join(' | ')} |`;
  });
  return [head, `|${'---|'.repeat(5 + PAUSE_BUCKETS.length)}`, ...lines].join('\n');
}

export function lineTable(rows: LineSummary[]): string {
  const head = '| Line | STT | Configuration | barge-in stop p50 / p95 (ms), stopped | false pauses (no speech; by the onset) | replies stopped by the line alone | longest gap p50 (ms) |';
  const lines = rows.map((r) => {
    const what = [r.condition, r.line.snr_db !== undefined ? `${String(r.line.snr_db)} dB SNR` : '', r.line.delay_ms !== undefined ? `${String(r.line.delay_ms)} ms, ${String(r.line.gain_db)} dB` : ''].filter(Boolean).join(', ');
    return `| ${what} | ${sttName(r)} | ${r.configuration} | ${f(r.barge_in.stop_ms.median_any_n)}${r.barge_in.stop_ms.n < 30 ? '*' : ''} / ${f(r.barge_in.stop_ms.p95)}, ${r.barge_in.stopped}/${r.barge_in.valid} | ${pct(r.quiet.false_pauses, r.quiet.valid)}; ${r.quiet.false_pauses_by.onset} | ${pct(r.quiet.stopped, r.quiet.valid)} | ${f(r.quiet.longest_gap_ms.median_any_n)} |`;
  });
  return [head, '|---|---|---|---|---|---|---|', ...lines].join('\n');
}
