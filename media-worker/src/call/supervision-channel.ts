// How a supervisor's actions reach the call (docs/decisions/supervise-control-channel.md). The control plane sends the
// agent participant a data message on SUPERVISION_TOPIC, from the server itself: it says only that actions wait. The
// worker then takes them from the internal API (with the call's capability) and carries them out in order.
//
// Only a message from the server counts: rtc-node gives no participant for it. The caller is in the same room and
// may publish data; a message of theirs on the topic is dropped here, and could bring no action anyway (the actions
// come from the control plane, never from the message).
import { RoomEvent, type RemoteParticipant, type Room } from '@livekit/rtc-node';
import { SUPERVISION_TOPIC } from '../../../schemas/supervision.ts';
import type { InternalApiClient } from '../../../shared/internal-api.ts';
import type { Logger } from '../../../shared/logger.ts';
import type { Supervision } from '../session/supervision.ts';

/** Whether a data message is the control plane's nudge: on the topic, sent by the server (no participant). */
export function isServerNudge(participant: RemoteParticipant | undefined, topic: string | undefined): boolean {
  return topic === SUPERVISION_TOPIC && participant === undefined;
}

export function watchSupervision(opts: { room: Room; callId: string; api: InternalApiClient; supervision: Supervision; logger: Logger }): () => void {
  const { room, callId, api, supervision, logger } = opts;
  // One take at a time, and one more if a nudge came meanwhile: the actions run in the order they were given.
  let running: Promise<void> | null = null;
  let again = false;
  const take = async (): Promise<void> => {
    do {
      again = false;
      const { items } = await api.takeSupervision(callId).catch((err: unknown) => {
        logger.warn({ err: (err as Error).message }, 'supervisor actions could not be fetched');
        return { items: [] };
      });
      for (const item of items) await supervision.apply(item);
    } while (again);
  };
  const onData = (_payload: Uint8Array, participant?: RemoteParticipant, _kind?: unknown, topic?: string) => {
    if (topic !== SUPERVISION_TOPIC) return;
    if (!isServerNudge(participant, topic)) {
      logger.warn({ from: participant?.identity }, 'supervision message from a participant ignored');
      return;
    }
    if (running) {
      again = true;
      return;
    }
    running = take().finally(() => (running = null));
  };
  room.on(RoomEvent.DataReceived, onData);
  return () => room.off(RoomEvent.DataReceived, onData);
}
