// A supervisor taking the call over and handing it back (docs/decisions/supervise-control-channel.md, "Take over
// and hand back"). Whether a takeover is active is read from the call's own supervision[] inside record()'s locked
// transaction, so two takeovers racing each other cannot both win, and a hand_back always names the person it ends.
import { randomUUID } from 'node:crypto';
import type { Services } from '../../services.ts';
import { conflict, type HttpError } from '../../http/errors.ts';
import { supervisionInRoom } from './queries-supervision.ts';
import { SUPERVISOR_IDENTITY_PREFIX, type SupervisionAction, type SupervisionEntry, type TakeoverToken } from '../../../../schemas/supervision.ts';

/** agents-js's RoomIO links no participant whose attribute names the agent (the attribute avatar workers use). */
export const PUBLISH_ON_BEHALF = 'lk.publish_on_behalf';

/** The person in charge of the call now: the last `takeover` with no `hand_back` after it. */
export function activeTakeover(entries: readonly SupervisionEntry[]): { identity: string } | null {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.action === 'hand_back') return null;
    if (e.action === 'takeover') return { identity: String(e.details.identity) };
  }
  return null;
}

/**
 * What a takeover in force means for `action`, checked under the call's lock: a refusal (409), or for `hand_back`
 * the identity it hands back from. `say` is refused while a person speaks: the agent's voice would cut across theirs.
 */
export function takeoverRule(action: SupervisionAction, entries: readonly SupervisionEntry[]): HttpError | { identity: string } | null {
  const taken = activeTakeover(entries);
  if (action === 'takeover' && taken) return conflict('The call is already taken over: hand it back first');
  if (action === 'hand_back') return taken ?? conflict('The call is not taken over');
  if (action === 'say' && taken) return conflict('The call is taken over: the agent says nothing until hand_back');
  return null;
}

/** A new person's participant identity and when its token stops joining. */
export function newTakeover(services: Services): { identity: string; expires_at: string } {
  const ttl = services.config.TAKEOVER_TOKEN_TTL_SECONDS;
  return { identity: `${SUPERVISOR_IDENTITY_PREFIX}${randomUUID()}`, expires_at: new Date(Date.now() + ttl * 1000).toISOString() };
}

/** The room's agent participants (the worker's), by identity. */
export async function agentIdentities(services: Services, room: string): Promise<string[]> {
  return (await services.livekit.rooms.listParticipants(room)).filter((p) => p.kind === 4 /* ParticipantInfo_Kind.AGENT */).map((p) => p.identity);
}

/** The person's token: microphone and subscribe only, marked as speaking for the call's agent. */
export async function takeoverToken(services: Services, room: string, person: { identity: string; expires_at: string }): Promise<TakeoverToken> {
  const agents = await agentIdentities(services, room).catch(() => []);
  const attributes: Record<string, string> = agents[0] ? { [PUBLISH_ON_BEHALF]: agents[0] } : {};
  const token = await services.livekit.takeoverToken(room, person.identity, services.config.TAKEOVER_TOKEN_TTL_SECONDS, attributes);
  return { server_url: services.livekit.publicUrl, participant_token: token, identity: person.identity, expires_at: person.expires_at };
}

/** Whether the call was handed back from `identity`: that person's token may still join (a LiveKit token cannot be revoked). */
export function handedBackFrom(entries: readonly SupervisionEntry[], identity: string): boolean {
  return entries.some((e) => e.action === 'hand_back' && e.details.identity === identity);
}

/**
 * LiveKit's participant_joined for a `supervisor-` identity: a person the call was handed back from who joins again
 * with their unexpired token is taken out at once (their voice would reach the caller beside the agent's). Listeners
 * and the person in charge now are left alone. True when removed.
 */
export async function removeIfHandedBack(services: Services, room: string, identity: string | undefined): Promise<boolean> {
  if (!identity?.startsWith(SUPERVISOR_IDENTITY_PREFIX)) return false;
  const call = await supervisionInRoom(services.sql, room);
  if (!call || !handedBackFrom(call.supervision, identity)) return false;
  services.log.warn({ call_id: call.id, room, identity }, 'a person the call was handed back from joined again: removed');
  await removePerson(services, room, identity);
  return true;
}

/** Takes the person out of the room, so their microphone no longer reaches the caller. They may have left already. */
export async function removePerson(services: Services, room: string, identity: string): Promise<void> {
  await services.livekit.rooms.removeParticipant(room, identity).catch((err: unknown) => {
    services.log.info({ err: (err as Error).message, room }, 'takeover participant not removed (gone already?)');
  });
}
