// Which jobs LiveKit offers this worker are accepted. A number's dispatch rule offers a job for every caller's
// room, but when a standby agent (or the fallback agent) already has the call, the control plane says so and
// the offer is rejected here, before a job process is spent on it: a process taken means a replacement forked
// on the cores the call's greeting is using (docs/decisions/030-standby-agents.md).
import type { JobRequest } from '@livekit/agents';
import type { InternalApiClient } from '../../shared/internal-api.ts';
import type { Logger } from '../../shared/logger.ts';
import { INBOUND_ROOM_PREFIX } from '../../schemas/internal.ts';
import { callIdFromMetadata } from './call/job-metadata.ts';
import { standbyRoomOf } from './call/standby.ts';
import type { AcceptedJobs } from './drain-after-launches.ts';

/** The offer is a number's rule's job for a caller's room (no call named in its metadata, not a standby job). */
export function isInboundRuleJob(room: string | undefined, jobMetadata: string | undefined): boolean {
  return !!room?.startsWith(INBOUND_ROOM_PREFIX) && !callIdFromMetadata(jobMetadata) && !standbyRoomOf(jobMetadata);
}

/**
 * agents-js's requestFunc: accepts every offer except a rule's job whose call already has its agent, and every offer
 * once the worker drains (drain-after-launches.ts). An accepted job's launch is tracked in `jobs`.
 */
export function jobRequestFunc(api: Pick<InternalApiClient, 'inboundRoomStatus'>, log: Logger, jobs?: AcceptedJobs) {
  return async (req: JobRequest): Promise<void> => {
    const room = req.room?.name;
    if (jobs?.draining) {
      log.info({ room, job_id: req.id }, 'draining: job offer rejected, LiveKit offers it to another worker');
      await req.reject();
      return;
    }
    if (room && isInboundRuleJob(room, req.job.metadata)) {
      try {
        if ((await api.inboundRoomStatus(room)).answered_elsewhere) {
          log.info({ room, job_id: req.id }, 'job not needed: the call already has its agent');
          await req.reject();
          return;
        }
      } catch (err) {
        // The job's own open decides then (it refuses a call answered elsewhere): better a spent process than a
        // caller nobody answers.
        log.warn({ room, err: (err as Error).message }, 'inbound room status unknown; accepting the job');
      }
    }
    jobs?.accepted(req.job.id);
    await req.accept();
  };
}
