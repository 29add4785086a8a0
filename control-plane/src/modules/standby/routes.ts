// Internal API: a standby agent's job waits here for its call (docs/internal-api.md, "Standby agents").
import { defineRoute, reply } from '../../http/route.ts';
import { notFound } from '../../http/errors.ts';
import { StandbyParams, StandbyWaitRequest, StandbyWaitResult } from '../../../../schemas/internal.ts';
import { mintCapability, verifyStandbySecret } from '../calls/capability.ts';
import { claimConfig } from '../calls/config-once.ts';
import { getCallById } from '../calls/queries.ts';
import { resolveCallConfig } from '../calls/service.ts';
import type { Services } from '../../services.ts';
import { claimTaken, getStandby, markReady } from './queries.ts';

/** How long one request is held; the job asks again at once (a control plane that restarts loses nothing). */
export const STANDBY_HOLD_MS = 25_000;

/**
 * The room's call, claimed for its job: the call, its capability and its config, and for a call in another room
 * (inbound: the SIP bridge made the caller's room) a token to join it; or a release if the fallback won.
 */
async function claimFor(services: Services, room: string) {
  const callId = await claimTaken(services.sql, room);
  if (!callId) return { release: true };
  services.standby.claimed();
  // The config is handed out here, once (calls/config-once.ts): a dispatch ticket for the same call opens nothing more.
  await claimConfig(services.sql, callId);
  const [config, call] = await Promise.all([resolveCallConfig(services, services.sql, callId), getCallById(services.sql, callId)]);
  const callRoom = call?.room_name;
  const join =
    callRoom && callRoom !== room
      ? { room_name: callRoom, token: await services.livekit.agentToken(callRoom, `agent-${room.slice('standby-'.length)}`) }
      : undefined;
  const capability = mintCapability(services, callId);
  return { call_id: callId, capability, config: { ...config, capability }, ...(join ? { join } : {}) };
}

export const standbyRoutes = [
  defineRoute({
    method: 'post',
    path: '/internal/v1/standby/:room_name/wait',
    root: true,
    internal: true,
    auth: 'worker',
    operationId: 'internalStandbyWait',
    tag: 'calls',
    summary: "A standby agent's job waits for its call",
    description:
      'Held up to 25 s. 200 `{call_id, capability, config}`: the call given to this room (the job serves it, as if dispatched for it); ' +
      'with `join` `{room_name, token}` when the call is in another room (an inbound call): the job joins it and serves the call there; ' +
      '200 `{release: true}`: the room is no longer wanted (the worker drains, the room expired, or the call was dispatched elsewhere), the job ' +
      "leaves; 204: nothing yet, ask again; 404: not a standby room, or the request lacks the room's secret (X-Standby-Secret, from the " +
      "room's dispatch metadata `secret`) (the job leaves).",
    params: StandbyParams,
    body: StandbyWaitRequest,
    transaction: false,
    responses: { 200: { description: 'The call, or a release', schema: StandbyWaitResult }, 204: { description: 'Nothing yet: ask again' } },
    handler: async ({ params, body, services, ctx }) => {
      const room = params.room_name;
      // The room's secret (from its dispatch): a room's name is in logs and LiveKit's room list, and a wait that
      // knew only the name would be given the next web call of any organisation. Unknown and unproven alike: 404.
      if (!verifyStandbySecret(services, room, ctx.get('x-standby-secret') || undefined)) throw notFound('Standby room');
      const row = await getStandby(services.sql, room);
      if (!row) throw notFound('Standby room');
      if (row.state === 'taken') return claimFor(services, room);
      // The request's end (the job or its worker went away) aborts the wait and makes the room untakeable.
      const gone = new AbortController();
      // (The response's close, not the request's: an IncomingMessage closes once its body has been read.)
      ctx.res.once('close', () => gone.abort());
      const message = services.standby.waitFor(room, STANDBY_HOLD_MS, gone.signal);
      if (!(await markReady(services.sql, room, body.worker_id))) {
        // Taken between the read and now, or removed.
        gone.abort();
        await message;
        const now = await getStandby(services.sql, room);
        if (now?.state === 'taken') return claimFor(services, room);
        throw notFound('Standby room');
      }
      const m = await message;
      if (gone.signal.aborted || ctx.res.destroyed) {
        // Nobody to answer: the room leaves the pool (its job, if alive, gets a 404 when it asks again and leaves),
        // and a call taken meanwhile is left to the fallback dispatch rather than claimed for a job that cannot hear it.
        await services.standby.dropRoom(room);
        return reply(204);
      }
      if (!m) return reply(204);
      if ('release' in m) return { release: true };
      return claimFor(services, room);
    },
  }),
];
