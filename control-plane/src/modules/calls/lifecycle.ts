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
//
// The end of a completed call is three events, in the spec's order: call.ended, transcript.final (once the
// conversation is complete), call.analyzed (once the analysis is). call.ended waits for the analysis, up to
// CALL_ENDED_ANALYSIS_WAIT_SECONDS, so that it carries outcome and ai_summary: while it is held
// (`ended_event_pending`), transcript.final waits behind it. Whoever clears the flag emits what was waiting,
// in the same transaction (releaseEndedEvent): the analysis job when it is done, or END_EVENT_QUEUE's job at
// the bound, whichever comes first.
import type { Db } from '../../db/types.ts';
import type { PgBoss } from '../../jobs/boss.ts';
import type { Config } from '../../config.ts';
import { sendInTx } from '../../jobs/boss.ts';
import { emitEvent } from '../events/emit.ts';
import { fillConversation, setCompleted, setFailed, setInitiated, setInProgress, takeHeldEndedEvent, type CallRow } from './queries.ts';
import { recordCallEnded } from '../../metrics.ts';

/** What the end of a call needs: the job queue, and the analysis settings that say whether call.ended waits. */
export interface LifecycleDeps {
  boss: PgBoss;
  config: Pick<Config, 'ANALYSIS_MODE' | 'CALL_ENDED_ANALYSIS_WAIT_SECONDS'>;
}

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
/** The bound of call.ended's wait for the analysis: sends it (if still held) with what is known. */
export const END_EVENT_QUEUE = 'calls.end-event';

/** How long call.ended waits for the analysis; 0 when nothing will come (analysis off) or no wait is wanted. */
const endedEventWait = (config: LifecycleDeps['config']) => (config.ANALYSIS_MODE === 'off' ? 0 : config.CALL_ENDED_ANALYSIS_WAIT_SECONDS);

/**
 * A call's event, unless the call is a voice-mode agent test's (`test_run_id`): a test is not a call of the
 * organisation's, its webhooks hear only `test_run.completed` (docs/decisions/020-agent-tests.md).
 */
export async function emitCallEvent(db: Db, call: Pick<CallRow, 'test_run_id'>, e: Parameters<typeof emitEvent>[1]): Promise<void> {
  if (call.test_run_id) return;
  await emitEvent(db, e);
}

const messagesOf = (row: CallRow) => (row.messages ?? []).map((m) => ({ role: m.role, content: m.content }));

/** queued -> initiated, once the room exists and the agent is dispatched. No event: nothing connected yet. */
export async function markInitiated(db: Db, callId: string): Promise<void> {
  await setInitiated(db, callId);
}

/** -> in_progress and `call.started`. Returns false when the call was not in a state that can start. */
export async function markStarted(db: Db, call: CallRow, startedAt: string, roomName?: string): Promise<boolean> {
  const row = await setInProgress(db, call.id, startedAt, roomName ?? null, TRANSITIONS.in_progress);
  if (!row) return false;
  await emitCallEvent(db, row, {
    orgId: row.org_id,
    type: 'call.started',
    // The moment the call connected (the worker's report may arrive later): the call's started_at.
    createdAt: row.started_at ? row.started_at.toISOString() : startedAt,
    callId: row.id,
    agentId: row.agent_id,
    webhookUrl: row.webhook_url,
    payload: { call_id: row.id, agent_id: row.agent_id, agent_version: row.agent_version ?? null, to_number: row.to_number, from_number: row.from_number },
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
   * The call ends now but its worker has not reported the conversation yet (a stop): transcript.final and the
   * analysis wait for the worker's report, or for `FINALIZE_QUEUE` after `graceSeconds` if it never comes.
   */
  awaitReport?: { graceSeconds: number };
}

/**
 * -> completed: stores what the worker reported and enqueues the post-call analysis, in one transaction. call.ended
 * (then transcript.final) is emitted now when there is nothing to wait for, else held for the analysis with a
 * job at the bound. An end reason already set (by the stop route) is kept.
 */
export async function finishCall(db: Db, deps: LifecycleDeps, call: CallRow, f: Finish, opts: FinishOptions = {}): Promise<CallRow | null> {
  const started = call.started_at?.getTime();
  const duration =
    f.durationSeconds !== undefined ? Math.round(f.durationSeconds) : started ? Math.max(0, Math.round((Date.parse(f.endedAt) - started) / 1000)) : 0;
  const wait = endedEventWait(deps.config);
  const row = await setCompleted(
    db,
    call.id,
    { ...f, durationSeconds: duration, awaitingReport: opts.awaitReport !== undefined, holdEndedEvent: wait > 0 },
    TRANSITIONS.completed,
  );
  if (!row) return null;
  recordCallEnded(row);
  if (wait > 0) {
    // The flag, not the job, makes call.ended happen once: the job only bounds the wait (and survives a crash).
    await sendInTx(deps.boss, db, END_EVENT_QUEUE, { call_id: row.id }, { startAfter: wait, singletonKey: row.id });
  } else {
    await emitEnded(db, row);
  }
  if (opts.awaitReport) {
    await sendInTx(deps.boss, db, FINALIZE_QUEUE, { call_id: row.id }, { startAfter: opts.awaitReport.graceSeconds, singletonKey: row.id });
    return row;
  }
  await conversationFinal(db, deps, row);
  return row;
}

/** The conversation of an ended call is complete: `transcript.final` (unless it waits behind a held call.ended), then the analysis. */
async function conversationFinal(db: Db, deps: LifecycleDeps, row: CallRow): Promise<void> {
  if (!row.ended_event_pending) await emitTranscriptFinal(db, row);
  // A test call's outcome is labelled by its run (agent-tests/runner.ts), with the judge's model.
  if (row.test_run_id) return;
  // Retry policy comes from the queue (ANALYSIS_RETRY_LIMIT, ANALYSIS_RETRY_DELAY_SECONDS).
  await sendInTx(deps.boss, db, ANALYZE_QUEUE, { call_id: row.id });
}

/**
 * The conversation of a call that a stop already ended: the worker's late report fills `messages`, `latency`
 * and `usage` (never the status, times, duration or end reason, which the stop fixed), or, without a report
 * (FINALIZE_QUEUE), what was reported so far stands. Only the first of the two does anything.
 */
export async function completeConversation(db: Db, deps: LifecycleDeps, callId: string, r: Pick<Finish, 'messages' | 'latency' | 'usage'> = {}): Promise<CallRow | null> {
  const row = await fillConversation(db, callId, r);
  if (!row) return null;
  await conversationFinal(db, deps, row);
  return row;
}

/**
 * Emits a held call.ended, then what waited behind it: transcript.final if the conversation is complete, and
 * call.analyzed if the analysis is done. Exactly once per call: the statement that clears the flag also locks
 * the row, and the events are written in the caller's transaction. False when it was not held (any more).
 */
export async function releaseEndedEvent(db: Db, callId: string): Promise<boolean> {
  const row = await takeHeldEndedEvent(db, callId);
  if (!row) return false;
  await emitEnded(db, row);
  if (!row.awaiting_report) await emitTranscriptFinal(db, row);
  if (row.analysis_status === 'completed') await emitAnalyzed(db, row);
  return true;
}

/** `call.ended`, with the outcome and summary known now; dated when the call ended, not when it was sent. */
async function emitEnded(db: Db, row: CallRow): Promise<void> {
  await emitCallEvent(db, row, {
    orgId: row.org_id,
    type: 'call.ended',
    ...(row.ended_at ? { createdAt: row.ended_at.toISOString() } : {}),
    callId: row.id,
    agentId: row.agent_id,
    webhookUrl: row.webhook_url,
    payload: {
      call_id: row.id,
      agent_id: row.agent_id,
      agent_version: row.agent_version ?? null,
      status: row.status,
      duration_seconds: row.duration_seconds,
      to_number: row.to_number,
      from_number: row.from_number,
      outcome: row.outcome,
      ai_summary: row.ai_summary,
      analysis: analysisOf(row),
    },
  });
}

async function emitTranscriptFinal(db: Db, row: CallRow): Promise<void> {
  await emitCallEvent(db, row, {
    orgId: row.org_id,
    type: 'transcript.final',
    callId: row.id,
    agentId: row.agent_id,
    webhookUrl: row.webhook_url,
    payload: { call_id: row.id, messages: messagesOf(row) },
  });
}

/** `call.analyzed`: after call.ended and transcript.final, on the same ordered stream. */
export async function emitAnalyzed(db: Db, row: CallRow): Promise<void> {
  await emitCallEvent(db, row, {
    orgId: row.org_id,
    type: 'call.analyzed',
    callId: row.id,
    agentId: row.agent_id,
    webhookUrl: row.webhook_url,
    payload: {
      call_id: row.id,
      agent_id: row.agent_id,
      agent_version: row.agent_version ?? null,
      outcome: row.outcome,
      ai_summary: row.ai_summary,
      analysis: analysisOf(row),
    },
  });
}

/**
 * The analysis as the Call resource shows it: `status` and `method` say why `outcome` or `summary` is null (off,
 * failed, not finished yet, or extractive: a summary without a label). schemas/events.ts EventAnalysis.
 */
function analysisOf(row: CallRow) {
  return { summary: row.analysis_summary, outcome: row.outcome, status: row.analysis_status, method: row.analysis_method ?? null };
}

/** Why a call failed, on the call (`error`) and in `call.failed`: a stable code and the cause and fix in words. */
export interface CallFailure {
  code: string;
  message: string;
}

/** `dispatch_timeout`: no worker took the call (none running, none registered, all full). */
export const noWorker = (seconds: number): CallFailure => ({
  code: 'no_worker',
  message: `No media worker took the call within ${seconds} s: check that a worker runs and is registered with LiveKit (GET /health/ready reports "workers"; npm start runs one) and that it is not full`,
});
/** `worker_lost` before the start: a worker took the call (its config was served), then left before reporting it started. */
export const WORKER_LOST_BEFORE_START: CallFailure = {
  code: 'worker_lost',
  message:
    "A media worker took the call but stopped before reporting that it started (it crashed, was killed or lost its connection; the caller may have heard the greeting): check the workers' logs and restarts at the call's time",
};
/** `dispatch_failed`: the room or the dispatch could not be created. */
export const LIVEKIT_UNREACHABLE: CallFailure = {
  code: 'livekit_unreachable',
  message: 'The media server (LiveKit) could not be reached when the call was created: check that it runs and that LIVEKIT_URL points at it',
};

/** -> failed and `call.failed` with a carrier-style reason (and, when known, the `error` that says why). */
export async function failCall(db: Db, call: CallRow, reason: string, endReason: string, error: CallFailure | null = null): Promise<CallRow | null> {
  const row = await setFailed(db, call.id, endReason, TRANSITIONS.failed, error);
  if (!row) return null;
  recordCallEnded(row);
  await emitCallEvent(db, row, {
    orgId: row.org_id,
    type: 'call.failed',
    callId: row.id,
    agentId: row.agent_id,
    webhookUrl: row.webhook_url,
    payload: {
      call_id: row.id,
      agent_id: row.agent_id,
      agent_version: row.agent_version ?? null,
      to_number: row.to_number,
      from_number: row.from_number,
      reason,
      error: row.error_code ? { code: row.error_code, message: row.error_message ?? '' } : null,
    },
  });
  return row;
}
