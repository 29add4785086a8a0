// Standby agents (docs/decisions/030-standby-agents.md): a job the control plane dispatched into a standby room
// (dispatch metadata `{"standby": "<room>"}`) joins it and waits for the call the control plane gives the room,
// on a request the control plane holds (POST /internal/v1/standby/{room}/wait). The caller then joins a room the
// agent is already in: no dispatch and no join on the call's path. An inbound call's caller is in a room the SIP
// bridge made: the agent joins it from here (a join, but no dispatch, on the call's path).
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobContext } from '@livekit/agents';
import { Room, RoomEvent } from '@livekit/rtc-node';
import { InternalApiError, type InternalApiClient } from '../../../shared/internal-api.ts';
import { type CallConfig, STANDBY_ROOM_PATTERN } from '../../../schemas/internal.ts';
import type { Logger } from '../../../shared/logger.ts';

/** The control plane's own name for standby rooms (the route's pattern). */
const STANDBY_ROOM = new RegExp(STANDBY_ROOM_PATTERN);
/** After a failed request (a control plane restarting), the next one waits this long. */
const RETRY_MS = 1000;

/** The standby room named in the dispatch metadata, or null for a call's own dispatch. */
export function standbyRoomOf(jobMetadata: string | undefined | null): string | null {
  if (!jobMetadata) return null;
  try {
    const v = JSON.parse(jobMetadata) as { standby?: unknown };
    return typeof v?.standby === 'string' && STANDBY_ROOM.test(v.standby) ? v.standby : null;
  } catch {
    return null;
  }
}

/** The standby room's secret from the dispatch metadata (`{"standby": "<room>", "secret": "..."}`), if any. */
export function standbySecretOf(jobMetadata: string | undefined | null): string | null {
  if (!jobMetadata) return null;
  try {
    const v = JSON.parse(jobMetadata) as { secret?: unknown };
    return typeof v?.secret === 'string' && v.secret ? v.secret : null;
  } catch {
    return null;
  }
}

export interface StandbyCall {
  call_id: string;
  capability: string;
  config: CallConfig;
  /** The call is in another room (inbound): joined with this token. */
  join?: { room_name: string; token: string };
}

/**
 * Asks until the room's call comes (its capability is then kept by `api`); null when the control plane releases
 * the room (its worker drains, it expired, its call was dispatched elsewhere), does not know it (404), or `signal`
 * aborts (the room closed under the job).
 */
export async function waitForStandbyCall(
  api: InternalApiClient,
  room: string,
  workerId: string,
  opts: { signal: AbortSignal; logger: Logger; secret?: string | null },
): Promise<StandbyCall | null> {
  for (;;) {
    if (opts.signal.aborted) return null;
    try {
      const r = await api.waitForStandbyCall(room, workerId, opts.signal, opts.secret);
      if (!r) continue;
      if (r.release || !r.call_id || !r.capability || !r.config) return null;
      return { call_id: r.call_id, capability: r.capability, config: r.config, ...(r.join ? { join: r.join } : {}) };
    } catch (err) {
      if (opts.signal.aborted) return null;
      if (err instanceof InternalApiError && err.status !== null && !err.retryable) {
        opts.logger.info({ room, status: err.status }, 'standby room refused: leaving');
        return null;
      }
      opts.logger.warn({ room, err: (err as Error).message }, 'standby wait failed; asking again');
      await sleep(RETRY_MS, undefined, { signal: opts.signal }).catch(() => {});
    }
  }
}

/**
 * A standby job's whole wait: joins its room, runs `onJoined` (the agent publishes its audio track there), and
 * waits for the call; null when the room is released, unknown, or closes under the job.
 */
export async function standByInRoom(
  ctx: JobContext,
  api: InternalApiClient,
  room: string,
  opts: { logger: Logger; onJoined?: () => Promise<void> },
): Promise<StandbyCall | null> {
  await ctx.connect();
  await opts.onJoined?.();
  const closed = new AbortController();
  const onClosed = () => closed.abort();
  ctx.room.once(RoomEvent.Disconnected, onClosed);
  try {
    return await waitForStandbyCall(api, room, ctx.workerId, { signal: closed.signal, logger: opts.logger, secret: standbySecretOf(ctx.job.metadata) });
  } finally {
    ctx.room.off(RoomEvent.Disconnected, onClosed);
  }
}

/**
 * An inbound call's room, joined from the standby room as agents-js joins a job's room. The job stays in its
 * standby room (agents-js ends a job whose own room disconnects) and leaves both when it shuts down.
 */
export async function joinCallRoom(ctx: JobContext, join: { room_name: string; token: string }): Promise<Room> {
  const room = new Room();
  await room.connect(ctx.info.url, join.token, { autoSubscribe: true, dynacast: false });
  ctx.addShutdownCallback(async () => {
    await room.disconnect();
  });
  return room;
}
