// Call status transitions and the events each one emits, always in the transaction of the change.
//
//   queued ──► initiated ──► in_progress ──► completed
//     │            │                            ▲
//     │            └────────────────────────────┤   (stopped, or ended, before the agent started)
//     └──► failed ◄┘                            │
//     └─────────────────────────────────────────┘
//
// queued -> in_progress is allowed because a fast worker can report `started` before the request that
// dispatched it has marked the call `initiated`. `completed` and `failed` are final.
import type { Db } from '../../db/types.ts';
import type { PgBoss } from '../../jobs/boss.ts';
import { sendInTx } from '../../jobs/boss.ts';
import { emitEvent } from '../events/emit.ts';
import { fillConversation, setCompleted, setFailed, setInitiated, setInProgress, type CallRow } from './queries.ts';
import { recordCallEnded } from '../../metrics.ts';

export type CallStatus = CallRow['status'];

/** For each target status, the statuses it may be entered from. */
export const TRANSITIONS: Record<CallStatus, CallStatus[]> = {
  queued: [],
  initiated: ['queued'],
  in_progress: ['queued', 'initiated'],
  completed: ['queued', 'initiated', 'in_progress'],
  failed: ['queued', 'initiated'],
};

export const isFinal = (s: CallStatus) => s === 'completed' || s === 'failed';

export const ANALYZE_QUEUE = 'calls.analyze';
/** After a stop: completes the conversation without the worker's report if it has not come in time. */
export const FINALIZE_QUEUE = 'calls.finalize';

const messagesOf = (row: CallRow) => (row.messages ?? []).map((m) => ({ role: m.role, content: m.content }));

/** queued -> initiated, once the room exists and the agent is dispatched. No event: nothing connected yet. */
export async function markInitiated(db: Db, callId: string): Promise<void> {
  await setInitiated(db, callId);
}

/** -> in_progress and `call.started`. Returns false when the call was not in a state that can start. */
export async function markStarted(db: Db, call: CallRow, startedAt: string, roomName?: string): Promise<boolean> {
  const row = await setInProgress(db, call.id, startedAt, roomName ?? null, TRANSITIONS.in_progress);
  if (!row) return false;
  await emitEvent(db, {
    orgId: row.org_id,
    type: 'call.started',
    // The moment the call connected (the worker's report may arrive later): the call's started_at.
    createdAt: row.started_at ? row.started_at.toISOString() : startedAt,
    callId: row.id,
    agentId: row.agent_id,
    webhookUrl: row.webhook_url,
    payload: { call_id: row.id, agent_id: row.agent_id, to_number: row.to_number, from_number: row.from_number },
  });
  return true;
}

export interface Finish {
  endReason: string;
  endedAt: string;
  durationSeconds?: number;
  messages?: unknown[] | null;
  latency?: unknown;
  usage?: unknown;
}

export interface FinishOptions {
  /**
   * The call ends now but its worker has not reported the conversation yet (a stop): emit `call.ended` only,
   * and leave `transcript.final` and the analysis to the worker's report, or to `FINALIZE_QUEUE` after
   * `graceSeconds` if it never comes.
   */
  awaitReport?: { graceSeconds: number };
}

/**
 * -> completed: stores what the worker reported, emits `call.ended` then `transcript.final`, and enqueues the
 * post-call analysis, all in one transaction. An end reason already set (by the stop route) is kept.
 */
export async function finishCall(db: Db, boss: PgBoss, call: CallRow, f: Finish, opts: FinishOptions = {}): Promise<CallRow | null> {
  const started = call.started_at?.getTime();
  const duration =
    f.durationSeconds !== undefined ? Math.round(f.durationSeconds) : started ? Math.max(0, Math.round((Date.parse(f.endedAt) - started) / 1000)) : 0;
  const row = await setCompleted(db, call.id, { ...f, durationSeconds: duration, awaitingReport: opts.awaitReport !== undefined }, TRANSITIONS.completed);
  if (!row) return null;
  recordCallEnded(row);
  await emitEvent(db, {
    orgId: row.org_id,
    type: 'call.ended',
    callId: row.id,
    agentId: row.agent_id,
    webhookUrl: row.webhook_url,
    payload: {
      call_id: row.id,
      agent_id: row.agent_id,
      status: row.status,
      duration_seconds: row.duration_seconds,
      to_number: row.to_number,
      from_number: row.from_number,
      outcome: row.outcome,
      ai_summary: row.ai_summary,
      analysis: { summary: row.analysis_summary, outcome: row.outcome },
    },
  });
  if (opts.awaitReport) {
    await sendInTx(boss, db, FINALIZE_QUEUE, { call_id: row.id }, { startAfter: opts.awaitReport.graceSeconds, singletonKey: row.id });
    return row;
  }
  await conversationFinal(db, boss, row);
  return row;
}

/** `transcript.final`, then the post-call analysis: once the conversation of an ended call is complete. */
async function conversationFinal(db: Db, boss: PgBoss, row: CallRow): Promise<void> {
  await emitEvent(db, {
    orgId: row.org_id,
    type: 'transcript.final',
    callId: row.id,
    agentId: row.agent_id,
    webhookUrl: row.webhook_url,
    payload: { call_id: row.id, messages: messagesOf(row) },
  });
  // Retry policy comes from the queue (ANALYSIS_RETRY_LIMIT, ANALYSIS_RETRY_DELAY_SECONDS).
  await sendInTx(boss, db, ANALYZE_QUEUE, { call_id: row.id });
}

/**
 * The conversation of a call that a stop already ended: the worker's late report fills `messages`, `latency`
 * and `usage` (never the status, times, duration or end reason, which the stop fixed), or, without a report
 * (FINALIZE_QUEUE), what was reported so far stands. Only the first of the two does anything.
 */
export async function completeConversation(db: Db, boss: PgBoss, callId: string, r: Pick<Finish, 'messages' | 'latency' | 'usage'> = {}): Promise<CallRow | null> {
  const row = await fillConversation(db, callId, r);
  if (!row) return null;
  await conversationFinal(db, boss, row);
  return row;
}

/** -> failed and `call.failed` with a carrier-style reason. */
export async function failCall(db: Db, call: CallRow, reason: string, endReason: string): Promise<CallRow | null> {
  const row = await setFailed(db, call.id, endReason, TRANSITIONS.failed);
  if (!row) return null;
  recordCallEnded(row);
  await emitEvent(db, {
    orgId: row.org_id,
    type: 'call.failed',
    callId: row.id,
    agentId: row.agent_id,
    webhookUrl: row.webhook_url,
    payload: { call_id: row.id, agent_id: row.agent_id, to_number: row.to_number, from_number: row.from_number, reason },
  });
  return row;
}
