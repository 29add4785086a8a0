// A call's last step in the worker: what must leave the job process before it exits. The ended report reaches
// the control plane first; the recording follows it. A worker shutting down mid-call ends the call the same way.
import type { JobContext } from '@livekit/agents';
import type { CallReporter } from '../../../shared/internal-api.ts';
import type { RoomRecorder } from '../recording/room-recorder.ts';
import type { CallSession } from '../session/call-session.ts';
import type { MetricsSink } from '../session/metrics-sink.ts';

/** What a call leaves to send when it ends. */
export interface CallEnding {
  call: CallSession;
  reporter: CallReporter;
  /** The room's recording: started, to start on the caller's consent, or none. */
  recorder: Promise<RoomRecorder | null>;
}

/** The job's shutdown (the worker stopping) ends a call still running, and sends what it leaves. */
export function endOnShutdown(ctx: JobContext, ending: CallEnding): void {
  const { call, reporter, recorder } = ending;
  ctx.addShutdownCallback(async () => {
    if (!call.endReason) await call.end('worker_shutdown');
    await call.ended;
    await reporter.flush();
    await (await recorder)?.finish();
  });
}

/** The call has ended: its metrics, its ended report, then its recording, before the job process exits. */
export async function endCall(ending: CallEnding, metrics: MetricsSink): Promise<string> {
  const { reporter, recorder } = ending;
  await metrics.flush?.();
  // The ended report must reach the control plane before the job process exits; the recording follows it.
  await reporter.flush();
  await (await recorder)?.finish();
  return 'call ended';
}
