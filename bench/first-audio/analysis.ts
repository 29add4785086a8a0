// A counted call's result, and the summaries of the calls: percentiles, the job's start timelines, the bridge's steps.
import { readFileSync } from 'node:fs';
import { percentile } from '../../shared/latency.ts';
import type { BridgeTimes } from './bridge-log.ts';

export const round = (x: number) => +x.toFixed(1);
export const stats = (v: number[]) =>
  v.length === 0
    ? { n: 0, p50: null, p95: null, max: null }
    : { n: v.length, p50: round(percentile(v, 50)), p95: v.length >= 100 ? round(percentile(v, 95)) : null, max: round(Math.max(...v)) };
export const fmt = (s: ReturnType<typeof stats>) => `p50 ${s.p50 ?? 'n/a'} ms, p95 ${s.p95 ?? 'n/a'} ms, max ${s.max ?? 'n/a'} ms (n=${s.n})`;

/** How a web call ends: the caller leaves, then the stop (a hang-up); or the stop with the caller still there. */
export type EndOrder = 'leave_then_stop' | 'stop_with_caller';

export interface CallResult {
  id: string;
  /** Wall-clock ms (nowMs) of the POST or the INVITE. */
  t0: number;
  first_audio_ms: number;
  /** POST sent -> 201 received. */
  create_ms: number;
  /** The end (stop sent, or hang-up) -> the call's job process exited. */
  freed_ms: number | null;
  /** A web call's end order. */
  end_order?: EndOrder;
  /** The call's agent was a standby agent (a web call took its room; a phone call's agent joined from it), not dispatched. */
  standby?: boolean;
  /** CPU ms per kind of process over the call's first 3 s (job processes as `job:<pid>` until the run's end). */
  cpu?: Record<string, number>;
  /** Over the same window, each job process's CPU ms by thread group (`job:<pid>` -> group -> ms). */
  job_threads?: Record<string, Record<string, number>>;
  /** How long the benchmark waited for the worker to be quiet before the call (workerQuiet). */
  quiet_wait_ms?: number;
  /** A phone call's caller number (each call dials from its own): its key in the SIP bridge's log. */
  from?: string;
}

export interface Timeline {
  call_id: string;
  started_at_ms: number;
  call_type: string;
  /** The job process (the logger's base). */
  pid?: number;
  steps: Record<string, number>;
  /**
   * busy_ms: of the stall, the time the job's loop was not waiting in its poll; cpu_ms and runq_ms: the time its
   * thread ran on a core and waited for one (start-timeline.ts). Absent from older workers.
   */
  loop_blocks: { at_ms: number; ms: number; busy_ms?: number; cpu_ms?: number; runq_ms?: number }[];
}

/** The job processes' "call start timeline" lines in a worker's log. */
export function timelines(log: string): Timeline[] {
  const out: Timeline[] = [];
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    if (!line.includes('call start timeline')) continue;
    try {
      out.push(JSON.parse(line) as Timeline);
    } catch {
      // not a JSON line
    }
  }
  return out;
}

/** Each counted call with its job's timeline (calls whose job logged none are left out). */
export function joinTimelines(calls: CallResult[], lines: Timeline[]): { c: CallResult; t: Timeline }[] {
  const byId = new Map(lines.map((t) => [t.call_id, t]));
  return calls.flatMap((c) => {
    const t = byId.get(c.id);
    return t ? [{ c, t }] : [];
  });
}

/**
 * Phone calls' bridge steps from the INVITE (bridge-log.ts), and the agent's lag behind the bridge: its job's
 * `audio_subscribed` (the step that lets the greeting play) less the bridge's receipt of the agent's track.
 */
export function bridgeSteps(rows: { c: CallResult; t: Timeline }[], times: Map<string, BridgeTimes>) {
  const answered: number[] = [];
  const subscribed: number[] = [];
  const lag: number[] = [];
  for (const { c, t } of rows) {
    const b = c.from ? times.get(c.from) : undefined;
    if (!b) continue;
    if (b.answeredAt !== undefined) answered.push(b.answeredAt - c.t0);
    if (b.subscribedAt === undefined) continue;
    subscribed.push(b.subscribedAt - c.t0);
    const learnt = t.steps.audio_subscribed;
    if (learnt !== undefined) lag.push(t.started_at_ms + learnt - b.subscribedAt);
  }
  return { answered: stats(answered), agent_track_received: stats(subscribed), agent_learnt_after: stats(lag) };
}

/** POST -> the job's entry and each step's end, over the calls. */
export function stepStats(rows: { c: CallResult; t: Timeline }[]): Record<string, ReturnType<typeof stats>> {
  const names = [...new Set(rows.flatMap(({ t }) => Object.keys(t.steps)))];
  const entry = (r: { c: CallResult; t: Timeline }) => r.t.started_at_ms - r.c.t0;
  const out: Record<string, ReturnType<typeof stats>> = { job_entry: stats(rows.map(entry)) };
  for (const n of names) out[n] = stats(rows.flatMap((r) => (r.t.steps[n] === undefined ? [] : [entry(r) + r.t.steps[n]!])));
  out.created = stats(rows.map(({ c }) => c.create_ms));
  out.heard = stats(rows.map(({ c }) => c.first_audio_ms));
  return out;
}

/** The end-to-exit times of the calls whose job process was seen exiting. */
export const exits = (calls: CallResult[]) => calls.flatMap((c) => (c.freed_ms === null ? [] : [c.freed_ms]));
