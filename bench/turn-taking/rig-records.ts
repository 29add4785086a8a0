// bench:turns: what the worker and the control plane recorded of the trials (the worker's per-turn timing and
// pause records, a call's record once ended, the LLM stand-in's wasted tokens). Split from rig.ts (re-exported there).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { RunningStack } from '../../scripts/stack/supervisor.ts';
import type { FakeOpenAI } from '../../test/support/fake-openai.ts';
import type { Commit } from './cut-offs.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What of the rig the records read: its stack and the API key. */
type Rig = { stack: RunningStack; key: string };

/** The control plane's API as the rig's key. */
export async function api<T = any>(rig: { stack: RunningStack; key: string }, method: string, route: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(rig.stack.controlPlaneUrl + route, {
    method,
    headers: { authorization: `Bearer ${rig.key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

export interface WorkerTurn {
  call_id: string;
  at: number;
  eou_delay_ms: number;
  vad_end_ms: number | null;
  stt_final_ms: number | null;
  eot_probability: number | null;
}

/** The worker's JSON log records with the message `msg` (the timing records are at debug level). */
function workerRecords(stack: RunningStack, msg: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of readFileSync(path.join(stack.logDir, 'worker.log'), 'utf8').split('\n')) {
    if (!line.includes(`"${msg}"`)) continue;
    try {
      out.push(JSON.parse(line.slice(line.indexOf('{'))) as Record<string, unknown>);
    } catch {
      // not a JSON line
    }
  }
  return out;
}

/** The worker's per-turn timing records (turn-trace.ts), with the call and the time logged. */
export function workerTurns(stack: RunningStack): WorkerTurn[] {
  return workerRecords(stack, 'user turn timing').map((rec) => ({
    call_id: String(rec.call_id),
    at: Date.parse(String(rec.time)),
    eou_delay_ms: Number(rec.eou_delay_ms),
    vad_end_ms: (rec.vad_end_ms as number | null) ?? null,
    stt_final_ms: (rec.stt_final_ms as number | null) ?? null,
    eot_probability: (rec.eot_probability as number | null) ?? null,
  }));
}

/** The worker's commits of user turns (their trace records), for cut-offs.ts. */
export function workerCommits(stack: RunningStack): Commit[] {
  return workerTurns(stack).map((t) => ({ call_id: t.call_id, at: t.at, eou_delay_ms: t.eou_delay_ms }));
}

/** When the worker paused the agent's reply (session/turn-handling.ts): by the onset of the sound, or by agents-js (the VAD's speech, or words). */
export interface WorkerPause {
  call_id: string;
  at: number;
  by: 'onset' | 'agents-js';
}

export function workerPauses(stack: RunningStack): WorkerPause[] {
  return workerRecords(stack, 'agent paused').map((rec) => ({ call_id: String(rec.call_id), at: Date.parse(String(rec.time)), by: rec.by === 'onset' ? 'onset' : 'agents-js' }));
}

/** The worker's EOU record of a turn: the first one of the call logged after the end of its speech. */
export function eouOf(turns: WorkerTurn[], callId: string, speechEndAt: number): WorkerTurn | undefined {
  // Logged at the commit, which follows the end of speech by the EOU delay; 5 s bounds the search.
  return turns.find((t) => t.call_id === callId && t.at >= speechEndAt - 100 && t.at <= speechEndAt + 5000);
}

/** The ended call's record (messages, latency), waiting for the worker's report. */
export async function endedCall(rig: Rig, callId: string, timeoutMs = 20_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const c = await api(rig, 'GET', `/v1/calls/${callId}`);
    if (c.body?.status === 'completed' && Array.isArray(c.body.messages)) return c.body;
    if (Date.now() > end) return c.body;
    await sleep(250);
  }
}

/**
 * Tokens the LLM stand-in streamed for replies that no call used: a reply is used when its tag is in an
 * agent message of a call's transcript (an interrupted reply keeps what was spoken, tag first).
 */
export function wastedTokens(llm: FakeOpenAI, fromIndex: number, agentMessages: string[]): { wasted: number; streamed: number; requests: number; unused: number } {
  const used = new Set<number>();
  for (const m of agentMessages) for (const hit of m.matchAll(/\bR(\d+)\b/g)) used.add(Number(hit[1]));
  let wasted = 0;
  let streamed = 0;
  let requests = 0;
  let unused = 0;
  for (const c of llm.completions) {
    if (c.index < fromIndex || !c.stream) continue;
    requests++;
    streamed += c.streamed;
    if (!used.has(c.index)) {
      wasted += c.streamed;
      unused++;
    }
  }
  return { wasted, streamed, requests, unused };
}
