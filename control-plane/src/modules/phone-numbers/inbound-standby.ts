// Inbound calls answered by standby agents (docs/decisions/030-standby-agents.md). The SIP bridge puts the caller in
// a room the number's dispatch rule makes, and that rule's dispatch reaches a worker only after LiveKit's affinity
// wait (~0.2 s) and the job's own join. When LiveKit reports the caller (participant_joined), the control plane
// opens the call itself and gives it to a waiting standby agent, which joins the caller's room from its standby
// room. The rule's dispatch stays as the path when no standby agent is ready: its job finds the call answered
// elsewhere (the worker rejects it before spending a process on it, or the open refuses it) and leaves.
import { randomUUID } from 'node:crypto';
import type { ParticipantInfo } from 'livekit-server-sdk';
import type { Services } from '../../services.ts';
import { markInitiated } from '../calls/lifecycle.ts';
import { insertInboundCall, legOf, numberOfLeg, routeInbound } from './inbound.ts';
import { SIP_KIND } from './unanswered.ts';
import { INBOUND_ROOM_PREFIX } from './wiring.ts';

/** Undoes the transaction: the call is left to the number's rule (refused, or no standby agent ready). */
class LeaveToRule extends Error {}

/**
 * The caller's room, given to a ready standby agent: the call id, or null when the call is left to the number's
 * dispatch rule (no agent ready, a refusal the worker's open records, not a number's room, or the rule's job
 * opened it first).
 */
export async function answerFromStandby(services: Services, room: string, caller: ParticipantInfo | undefined): Promise<string | null> {
  if (services.config.STANDBY_AGENTS <= 0 || !room.startsWith(INBOUND_ROOM_PREFIX) || caller?.kind !== SIP_KIND) return null;
  const leg = legOf(room, caller);
  let number;
  try {
    number = await numberOfLeg(services, leg);
  } catch {
    return null; // not the number's own route: the rule's job is refused and deletes the room
  }
  if (number.status !== 'active') return null;
  const id = randomUUID();
  let taken: string;
  try {
    taken = await services.sql.begin(async (tx) => {
      const route = await routeInbound(tx, number, { overflowPercent: services.config.INBOUND_FALLBACK_OVERFLOW_PERCENT });
      if (!route.target) throw new LeaveToRule();
      const standbyRoom = await services.standby.take(tx, id);
      if (!standbyRoom) throw new LeaveToRule();
      await insertInboundCall(services, tx, number, leg, {
        id,
        agentId: route.target.agent.id,
        squad: route.target.squad,
        routedVia: route.via,
        // Read by the open of the rule's job (and by the worker before it accepts it): the call has its agent.
        metadata: { standby_agent: true },
      });
      await markInitiated(tx, id);
      return standbyRoom;
    });
  } catch (err) {
    if (err instanceof LeaveToRule) return null;
    // calls_room_idx: the rule's job opened the room's call first.
    if ((err as { code?: string }).code === '23505') return null;
    throw err;
  }
  services.standby.afterTake(taken);
  services.log.info({ call_id: id, room, standby_room: taken, phone_number_id: number.id }, 'inbound call given to a standby agent');
  return id;
}
