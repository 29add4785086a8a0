// What the session's actions do in the call's room: hang up (the room deleted), a SIP transfer of the caller, a
// warm transfer (session/warm-transfer.ts) after which the legs talk on without the agent, and DTMF digits.
import type { llm, voice } from '@livekit/agents';
import { ParticipantKind, type RemoteParticipant, type Room } from '@livekit/rtc-node';
import { RoomServiceClient } from 'livekit-server-sdk';
import type { Logger } from '../../../shared/logger.ts';
import type { CallSessionOptions } from '../session/call-context.ts';
import { hangUpRoom } from '../session/hang-up.ts';
import { warmTransfer } from '../session/warm-transfer.ts';
import { TransferNotPlaced } from '../session/tools.ts';
import type { CallDeps } from './open.ts';
import { PHONE_SAMPLE_RATE } from './models.ts';

const DTMF_CODES: Record<string, number> = { '*': 10, '#': 11, A: 12, B: 13, C: 14, D: 15 };

export interface RoomActionsOptions {
  callId: string;
  callType: string;
  /** The call's room: read when an action runs (a standby agent's call room is joined after they are made). */
  room: () => Room;
  /** The caller's (or answered callee's) SIP participant, where the call start knows it. */
  participant: RemoteParticipant | null;
  /** The session whose agent a warm transfer puts on hold and briefs from. */
  session: () => voice.AgentSession;
  /** The model that writes a warm transfer's brief (none with a realtime model: a fixed sentence). */
  model: llm.LLM | null;
  logger: Logger;
  deps: Pick<CallDeps, 'api' | 'metrics' | 'livekit'>;
}

export function roomActions(o: RoomActionsOptions): NonNullable<CallSessionOptions['actions']> {
  const { callId, logger, deps } = o;
  const { api, metrics, livekit } = deps;
  const sipParticipant = () => o.participant ?? [...o.room().remoteParticipants.values()].find((x) => x.kind === ParticipantKind.SIP);
  // Set once a warm transfer joined the legs: the call goes on without the agent, so ending the session must not hang up.
  let joinedTransfer = false;
  return {
    hangUp: async () => {
      if (joinedTransfer) return; // the legs talk on; the job's shutdown takes the agent out of the room
      await hangUpRoom({
        rooms: new RoomServiceClient(livekit.url, livekit.key, livekit.secret),
        room: o.room().name ?? '',
        callType: o.callType,
        logger,
        metrics,
      });
    },
    // A blind transfer is the control plane's to place (issue 50): it checks the destination policy and the
    // day's spend, records and prices the transfer, and sends the REFER itself.
    transfer: async (destination) => {
      if (!sipParticipant()) throw new TransferNotPlaced('There is no phone line to transfer.');
      const r = await api.startTransfer(callId, { destination, mode: 'blind' });
      if (r.status !== 'transferred') throw new TransferNotPlaced(r.message ?? 'The transfer did not go through.');
    },
    warmTransfer: async (destination) => {
      const caller = sipParticipant();
      if (!caller) return { ok: false, message: 'There is no phone line to transfer.' };
      const rooms = new RoomServiceClient(livekit.url, livekit.key, livekit.secret);
      const room = o.room();
      const r = await warmTransfer(
        {
          room,
          caller,
          session: o.session(),
          model: o.model,
          updateSubscriptions: (identity, sids, subscribe) => rooms.updateSubscriptions(room.name ?? '', identity, sids, subscribe),
          dial: (to) => api.startTransfer(callId, { destination: to, mode: 'warm' }),
          report: async (transferId, state) => {
            await api.updateTransfer(callId, transferId, { state });
          },
          logger,
          sampleRate: PHONE_SAMPLE_RATE,
        },
        destination,
      );
      if (r.ok) joinedTransfer = true;
      return r;
    },
    sendDtmf: async (digits) => {
      for (const d of digits) {
        await o.room().localParticipant!.publishDtmf(DTMF_CODES[d] ?? Number(d), d);
        await new Promise((r) => setTimeout(r, 300));
      }
    },
  };
}
