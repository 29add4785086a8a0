// Background work on calls (pg-boss):
//  - calls.analyze: after a call ends, an LLM writes `ai_summary` and `analysis {outcome, summary}`, then
//    `call.analyzed` fires, after call.ended if that was held for it. Retried with backoff; a final failure is
//    recorded on the call, never thrown away, and sends a held call.ended at once.
//  - calls.end-event: the bound of call.ended's wait for the analysis (CALL_ENDED_ANALYSIS_WAIT_SECONDS).
//  - calls.reap: finishes a call whose worker is gone (room closed or no agent in it) with `worker_lost`,
//    fails one whose worker left before its start report with `worker_lost` too, and one no worker picked up in
//    time with `dispatch_timeout`. Run by a sweep every minute and by
//    LiveKit webhooks (room finished, agent left).
import type { Job, QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import { analyseCall, AnalysisError, type AnalysisResult } from './analysis.ts';
import { getCallById, markAnalysisFailed, markAnalysisRunning, markAnalysisSkipped, reapCandidates, retentionOfCall, saveAnalysis, touchWorker } from './queries.ts';
import { retainMessages, retainText } from '../../../../shared/privacy.ts';
import { capText, SUMMARY_MAX } from '../../../../shared/text-caps.ts';
import { ANALYZE_QUEUE, completeConversation, emitAnalyzed, END_EVENT_QUEUE, FINALIZE_QUEUE, failCall, finishCall, noWorker, releaseEndedEvent, WORKER_LOST_BEFORE_START } from './lifecycle.ts';
import { purgeIdempotencyKeys } from './outbound.ts';
import { reapJoined } from './transfers.ts';

export const REAP_QUEUE = 'calls.reap';
export const REAP_SWEEP_QUEUE = 'calls.reap-sweep';

export { normaliseOutcome } from './analysis.ts';

export async function runAnalysis(services: Services, job: Job<{ call_id: string }>): Promise<void> {
  const call = await getCallById(services.sql, job.data.call_id);
  if (!call || call.status !== 'completed' || call.analysis_status === 'completed' || call.analysis_status === 'skipped') return;
  const mode = await retentionOfCall(services.sql, call.id);
  const skip =
    services.config.ANALYSIS_MODE === 'off'
      ? 'post-call analysis is turned off (ANALYSIS_MODE=off)'
      : // No text is kept, so none is sent to a model, and no summary is written.
        mode === 'no_content'
        ? 'the call keeps no content (data_retention no_content)'
        : null;
  if (skip) {
    // Not silently missing: the call says the analysis was not made, and why. Nothing left to wait for.
    await services.sql.begin(async (tx) => {
      await markAnalysisSkipped(tx, call.id, skip);
      await releaseEndedEvent(tx, call.id);
    });
    return;
  }
  await markAnalysisRunning(services.sql, call.id);
  let result: AnalysisResult;
  try {
    // Stored messages already follow the mode; applied again in case it was changed since they were stored.
    result = await analyseCall(services, { ...call, messages: retainMessages(mode, call.messages ?? []) });
  } catch (err) {
    const final = job.retryCount >= services.config.ANALYSIS_RETRY_LIMIT;
    services.log.warn({ err, call_id: call.id, attempt: job.retryCount + 1, final }, 'call analysis failed');
    await services.sql.begin(async (tx) => {
      await markAnalysisFailed(tx, call.id, final, (err as Error).message, err instanceof AnalysisError ? { method: err.method, model: err.model } : null);
      // No analysis will come: a held call.ended goes now. (A retry may still land within the bound: wait for it.)
      if (final) await releaseEndedEvent(tx, call.id);
    });
    if (final) return; // recorded on the call; nothing more to try
    throw err; // pg-boss retries with backoff
  }
  // The model read redacted messages, but may still write personal data (a name spelled into a date, a number
  // it reconstructed): its summary is redacted in turn, once cut to its cap (analysis.ts cuts it already; any
  // other source of a summary is bounded here too, before the redaction reads it).
  result = { ...result, summary: retainText(mode, capText(result.summary, SUMMARY_MAX)) };
  await services.sql.begin(async (tx) => {
    const row = await saveAnalysis(tx, call.id, result);
    if (!row) return;
    // A held call.ended goes now, with the result, followed by transcript.final and call.analyzed; if the bound
    // already sent it, call.analyzed alone follows.
    if (!(await releaseEndedEvent(tx, call.id))) await emitAnalyzed(tx, row);
  });
}

/** Whether a worker is still holding the call's room. */
async function workerPresent(services: Services, room: string): Promise<'present' | 'absent' | 'room_gone'> {
  if (!(await services.livekit.roomExists(room))) return 'room_gone';
  const participants = await services.livekit.rooms.listParticipants(room);
  return participants.some((p) => p.kind === 4 /* ParticipantInfo_Kind.AGENT */) ? 'present' : 'absent';
}

export async function reapCall(services: Services, callId: string): Promise<'alive' | 'reaped' | 'skipped'> {
  const call = await getCallById(services.sql, callId);
  if (!call || call.status === 'completed' || call.status === 'failed') return 'skipped';
  // A warm transfer's joined legs hold the call without a worker (transfers.ts).
  const joined = await reapJoined(services, call);
  if (joined) return joined;
  const state = call.room_name ? await workerPresent(services, call.room_name).catch(() => 'unknown' as const) : 'room_gone';
  if (state === 'unknown') return 'skipped'; // LiveKit unreachable: decide on a later sweep
  if (state === 'present') {
    await touchWorker(services.sql, call.id);
    return 'alive';
  }
  const now = new Date().toISOString();
  const done = await services.sql.begin(async (tx) => {
    const locked = await getCallById(tx, callId, { lock: true });
    if (!locked || locked.status === 'completed' || locked.status === 'failed') return null;
    if (locked.status === 'in_progress') {
      return finishCall(tx, services, locked, { endReason: 'worker_lost', endedAt: now });
    }
    // Never started: no worker took the dispatch in time, or the room closed before it did.
    const age = (Date.now() - locked.created_at.getTime()) / 1000;
    if (state === 'absent' && age < services.config.DISPATCH_TIMEOUT_SECONDS) return null;
    // A worker took it (it was given the config) and is gone before its start report: lost, not never dispatched.
    if (locked.config_served_at) return failCall(tx, locked, 'agent_unavailable', 'worker_lost', WORKER_LOST_BEFORE_START);
    return failCall(tx, locked, 'agent_unavailable', 'dispatch_timeout', noWorker(services.config.DISPATCH_TIMEOUT_SECONDS));
  });
  if (done && call.room_name) await services.livekit.rooms.deleteRoom(call.room_name).catch(() => {});
  return done ? 'reaped' : 'skipped';
}

/** Candidates: in-progress calls whose worker has been quiet, and calls never started after the dispatch timeout. */
export async function sweep(services: Services): Promise<number> {
  const quiet = Math.max(15, Math.floor(services.config.WORKER_SILENCE_SECONDS / 3));
  const ids = await reapCandidates(services.sql, quiet, services.config.DISPATCH_TIMEOUT_SECONDS, services.config.OUTBOUND_RING_TIMEOUT_SECONDS);
  let reaped = 0;
  for (const id of ids) if ((await reapCall(services, id)) === 'reaped') reaped++;
  return reaped;
}

export function callQueues(services: Services): QueueDef<never>[] {
  return [
    {
      name: ANALYZE_QUEUE,
      options: { retryLimit: services.config.ANALYSIS_RETRY_LIMIT, retryDelay: services.config.ANALYSIS_RETRY_DELAY_SECONDS, retryBackoff: true },
      work: { batchSize: 1 },
      handler: async (jobs: Job<{ call_id: string }>[]) => {
        for (const job of jobs) await runAnalysis(services, job);
      },
    },
    {
      name: FINALIZE_QUEUE,
      // Delayed jobs: NOTIFY fires at insert, before they are due, so poll for them (the default is 30 s).
      work: { pollingIntervalSeconds: 2, notifyPollingIntervalSeconds: 2 },
      handler: async (jobs: Job<{ call_id: string }>[]) => {
        for (const job of jobs) await services.sql.begin((tx) => completeConversation(tx, services, job.data.call_id));
      },
    },
    {
      name: END_EVENT_QUEUE,
      // Retried like any job if a process dies with it; the flag makes a second run a no-op.
      options: { retryLimit: 10, retryDelay: 5, retryBackoff: true },
      // Delayed jobs: NOTIFY fires at insert, before they are due, so poll for them (the default is 30 s).
      work: { pollingIntervalSeconds: 2, notifyPollingIntervalSeconds: 2 },
      handler: async (jobs: Job<{ call_id: string }>[]) => {
        for (const job of jobs) await services.sql.begin((tx) => releaseEndedEvent(tx, job.data.call_id));
      },
    },
    {
      name: REAP_QUEUE,
      // Reap jobs are delayed (startAfter): their NOTIFY fires at insert, before they are due, so on a
      // notify-enabled queue the worker would only find them at pg-boss's 30 s backstop poll. A 2 s poll
      // (one indexed query) starts them within 2 s of being due.
      work: { notifyPollingIntervalSeconds: 2 },
      handler: async (jobs: Job<{ call_id: string }>[]) => {
        for (const job of jobs) await reapCall(services, job.data.call_id);
      },
    },
    {
      name: REAP_SWEEP_QUEUE,
      schedule: '* * * * *',
      handler: async () => {
        await sweep(services);
        await purgeIdempotencyKeys(services.sql);
      },
    },
  ];
}
