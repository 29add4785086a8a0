// The worker's hang-up: deleting the room ends the call for every participant (a SIP leg hangs up too).
import type { RoomServiceClient } from 'livekit-server-sdk';
import type { Logger } from '../../../shared/logger.ts';
import type { MetricsSink } from './metrics-sink.ts';

/**
 * LiveKit answers 404 for a room that no longer exists: the caller hung up, or the control plane deleted the
 * room on POST /v1/calls/{id}/stop before the worker's own hang-up. The room is gone, as the hang-up wants.
 */
function roomAlreadyGone(err: unknown): boolean {
  return (err as { status?: number } | null)?.status === 404;
}

/**
 * Deletes the call's room. A failure is logged with the call id and counted
 * (voice_call_action_failures_total{action="hang_up"}), not thrown: the call has ended on our side, and the
 * control plane's reaper closes a room left behind. A room already gone is no failure. Resolves whether the
 * room is gone.
 */
export async function hangUpRoom(o: {
  rooms: Pick<RoomServiceClient, 'deleteRoom'>;
  room: string;
  callType: string;
  logger: Pick<Logger, 'error' | 'debug'>;
  metrics: MetricsSink;
}): Promise<boolean> {
  try {
    await o.rooms.deleteRoom(o.room);
    return true;
  } catch (err) {
    if (roomAlreadyGone(err)) {
      o.logger.debug({ room: o.room }, 'hang-up: the room was already gone');
      return true;
    }
    o.logger.error({ err, room: o.room }, 'hang-up failed: the room could not be deleted');
    o.metrics.actionFailed?.('hang_up', o.callType);
    return false;
  }
}
