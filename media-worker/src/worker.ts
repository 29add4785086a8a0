// The job side of the worker: one call per job (agents-js runs each job in its own process). The job waits as a
// standby agent where it was dispatched as one, then runs its call in named steps (media-worker/src/call/): open
// (which call, its room and config), start (models, session, recorder), run (until the call ends) and end (what
// must reach the control plane before the process exits). See docs/internal-api.md.
import { type JobContext, type JobProcess, defineAgent, inference, telemetry } from '@livekit/agents';
import { InternalApiClient, InternalApiError } from '../../shared/internal-api.ts';
import { createLogger } from '../../shared/logger.ts';
import { loadWorkerConfig } from './config.ts';
import { PushMetricsSink } from './metrics.ts';
import { type MetricsSink, nullSink } from './session/metrics-sink.ts';
import { type StandbyCall, standByInRoom, standbyRoomOf } from './call/standby.ts';
import { LocalSTT } from '../../shared/speech/local-stt.ts';
import { SpanKind, contextFrom, inSpan, initTracing } from '../../shared/tracing.ts';
import { StartTimeline } from './session/start-timeline.ts';
import { keepFfiLogsNative } from '../../shared/ffi-logs.ts';
import { installEarlyTrack, publishEarlyTrack } from './session/early-track.ts';
import { settleHeap } from './session/settle-heap.ts';
import { type CallDeps, openCall } from './call/open.ts';
import { startCall } from './call/start.ts';
import { runCall } from './call/run.ts';
import { endCall } from './call/end.ts';
import { CallEndWatch } from './call/room-end.ts';

const log = createLogger('media-worker');

/** `traceparent` of the dispatch (or room) metadata: the control plane's `call.dispatch` span. */
function traceParentOf(...sources: (string | undefined | null)[]): Record<string, unknown> | null {
  for (const raw of sources) {
    try {
      const v = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
      if (typeof v?.traceparent === 'string') return v;
    } catch {
      // not JSON
    }
  }
  return null;
}

/**
 * The job, in a `call.job` span that continues the control plane's trace, so agents-js's own spans (session,
 * turns, STT/LLM/TTS, tool calls) and the reports back to the control plane all join the call's trace.
 */
async function entry(ctx: JobContext): Promise<void> {
  const tracing = initTracing('vap-media-worker');
  if (tracing.provider) telemetry.setTracerProvider(tracing.provider);
  const parent = contextFrom(traceParentOf(ctx.job.metadata, ctx.job.room?.metadata));
  // The process's own exit, logged as it happens (pino writes stdout synchronously): when the job's process is
  // free is read from this line (tests, bench:firstaudio), not from a gauge or a report that precede it.
  let callId: string | null = null;
  process.once('exit', (code) => log.info({ job_id: ctx.job.id, call_id: callId, exit_code: code, uptime_ms: Math.round(process.uptime() * 1000) }, 'job process exit'));
  let reason = 'call ended';
  try {
    reason = await inSpan(
      'call.job',
      { kind: SpanKind.CONSUMER, parent, attributes: { 'livekit.job_id': ctx.job.id, 'livekit.room': ctx.job.room?.name ?? '' } },
      (span) =>
        runJob(ctx, (id) => {
          callId = id;
          span.setAttribute('vap.call_id', id);
        }),
    );
  } finally {
    await tracing.flush().catch(() => {});
  }
  ctx.shutdown(reason);
}

/** The job: a standby agent's wait (where it is one), then its call. */
async function runJob(ctx: JobContext, onCallId: (callId: string) => void): Promise<string> {
  const cfg = loadWorkerConfig();
  // The call's room closing, the job asked to shut down, or the control plane saying the call has ended, ends the
  // call at once, at any step (call/room-end.ts).
  const closing = new CallEndWatch();
  const api = new InternalApiClient({
    baseUrl: cfg.controlPlaneUrl,
    token: cfg.workerToken,
    workerId: ctx.workerId,
    onReportFailed: ({ callId, kind, seq, error }) => {
      // The start of a call the control plane has already ended (stopped before its session started): 409.
      if (kind === 'started' && error instanceof InternalApiError && error.status === 409) {
        log.info({ call_id: callId }, 'the call ended before its session started');
        closing.endedByControlPlane();
        return;
      }
      log.error({ call_id: callId, kind, seq, err: (error as Error)?.message }, 'report failed');
    },
  });
  const metrics = process.env.VAP_METRICS_PUSH_URL ? new PushMetricsSink(process.env.VAP_METRICS_PUSH_URL) : nullSink;
  // A standby agent joins its room and waits there for a call (standby.ts); the call's clock starts when it comes.
  const standbyRoom = standbyRoomOf(ctx.job.metadata);
  const standbyCall = standbyRoom ? await standBy(ctx, api, metrics, standbyRoom) : null;
  if (standbyRoom && !standbyCall) return 'standby released';
  // The call's first seconds, logged once (with the call id) when they have passed or the call ended first.
  const timeline = new StartTimeline();
  try {
    const livekit = { url: cfg.livekitUrl.replace(/^ws/, 'http'), key: cfg.livekitApiKey, secret: cfg.livekitApiSecret };
    closing.watchShutdownRequest();
    return await runTimedCall(ctx, onCallId, timeline, { api, metrics, livekit, standbyCall, log }, closing);
  } finally {
    closing.dispose();
    timeline.finish();
  }
}

/** Joins the standby room and waits for its call; null when the room is released or closes first. */
async function standBy(ctx: JobContext, api: InternalApiClient, metrics: MetricsSink, room: string): Promise<StandbyCall | null> {
  const logger = log.child({ room });
  try {
    return await standByInRoom(ctx, api, room, {
      logger,
      // The agent's audio track, published now: the caller subscribes as they join (session/early-track.ts).
      onJoined: async () => {
        await publishEarlyTrack(ctx.room).catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'early audio track not published'));
        metrics.standby?.(ctx.job.id, true);
        // The join's garbage collected now, not in the call's first seconds (session/settle-heap.ts).
        settleHeap();
        logger.info('standby agent waiting for a call');
      },
    });
  } finally {
    metrics.standby?.(ctx.job.id, false);
  }
}

/** A call's path through the job: each step in its own module, each returning to this one. */
async function runTimedCall(ctx: JobContext, onCallId: (callId: string) => void, timeline: StartTimeline, deps: CallDeps, closing: CallEndWatch): Promise<string> {
  const opened = await openCall(ctx, timeline, deps, onCallId, closing);
  if ('stopped' in opened) return opened.stopped;
  const started = await startCall(ctx, opened, timeline, deps, closing);
  await runCall(started);
  return endCall(started, deps.metrics);
}

export default defineAgent({
  prewarm: async (proc: JobProcess) => {
    // Before any room: the media SDK's native logs stay out of the job's loop (ffi-logs.ts).
    if (!keepFfiLogsNative()) log.warn('the media SDK started before its logs could be left native: they are decoded on the loop');
    // Loads the Silero model once per process, before a call arrives.
    proc.userData.vad = new inference.VAD({ minSilenceDuration: 250 });
    // The local STT's recogniser, loaded while the process waits rather than beside the call's greeting.
    if (loadWorkerConfig().prewarmLocalStt) LocalSTT.prewarm({ language: 'en-US' });
    // Every call's room output, not only a standby agent's: the patch's start ends when agents-js cancels it, where
    // agents-js's own waits for a subscriber who may never come (a stop as the agent joins) (session/early-track.ts).
    installEarlyTrack();
    // What loading left collected now, while the process waits (session/settle-heap.ts).
    settleHeap();
  },
  entry,
});
