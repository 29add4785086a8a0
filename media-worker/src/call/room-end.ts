// The call's room closing under the job ends the call at once. The control plane deletes the room on
// POST /v1/calls/{id}/stop (and its reaper deletes rooms left behind); LiveKit then disconnects the agent, but no
// participant "leaves" as agents-js's RoomIO sees it, so the session never closes by itself. The job's entrypoint
// would wait on the call's end until agents-js gave up on it (15 s, "entrypoint did not exit in time"), holding the
// job process and the conversation's report (and so call.ended's analysis) all that time.
// The caller leaving ends the call at the moment they left: agents-js closes the session on it too, but reports the
// close only once the session's activity is torn down, and that moment is no measure of the call's length.
import { DisconnectReason, ParticipantKind, type RemoteParticipant, type Room, RoomEvent } from '@livekit/rtc-node';
import type { EndReason } from '../../../schemas/internal.ts';
import { isSupervisorIdentity } from '../../../schemas/supervision.ts';

/** Why the room closed, as the call's end. */
export interface RoomClosed {
  reason: EndReason;
  /** For `error`: what LiveKit said. */
  error?: string;
  /** When the room closed (ms since the epoch): the call's end. */
  at: number;
}

/** The call's end for a room that closed with `reason`. */
export function endOfRoom(reason: DisconnectReason | undefined, at = Date.now()): RoomClosed {
  // Deleted: a stop through the API (the control plane already fixed the end and its reason), or the reaper.
  if (reason === DisconnectReason.ROOM_DELETED) return { reason: 'api_stop', at };
  // Closed by LiveKit once every other participant had left: the caller has gone.
  if (reason === DisconnectReason.ROOM_CLOSED) return { reason: 'user_hangup', at };
  const name = reason === undefined ? 'UNKNOWN_REASON' : (DisconnectReason[reason] ?? String(reason));
  return { reason: 'error', error: `the call's room connection was lost (${name})`, at };
}

/**
 * Whatever ends the job under its call: a room the call runs in disconnecting (at once if it already has), or
 * agents-js asking the job process to shut down (the worker closing, or LiveKit terminating the job). agents-js
 * waits on the entrypoint in both cases; the entrypoint must end its call then, not wait for it.
 */
export class CallEndWatch {
  readonly closed: Promise<RoomClosed>;
  /** Set once the room has closed. */
  state: RoomClosed | null = null;
  #resolve!: (c: RoomClosed) => void;
  #rooms: { room: Room; off: () => void }[] = [];
  #offs: (() => void)[] = [];

  constructor() {
    this.closed = new Promise((r) => (this.#resolve = r));
  }

  /** Watches `room` from now on: it has connected (a room not connected now is taken as closed). */
  watch(room: Room): void {
    if (this.#rooms.some((w) => w.room === room)) return;
    const onDisconnected = (reason?: DisconnectReason) => this.#close(endOfRoom(reason));
    room.once(RoomEvent.Disconnected, onDisconnected);
    this.#rooms.push({ room, off: () => room.off(RoomEvent.Disconnected, onDisconnected) });
    if (!room.isConnected) this.#close(endOfRoom(undefined));
  }

  /**
   * The job process's shutdown request from the worker (agents-js's IPC message, which the entrypoint is not told
   * of otherwise): the call ends as a worker shutdown.
   */
  watchShutdownRequest(proc: NodeJS.Process = process): void {
    const onMessage = (msg: unknown) => {
      if ((msg as { case?: unknown } | null)?.case === 'shutdownRequest') this.#close({ reason: 'worker_shutdown', at: Date.now() });
    };
    proc.on('message', onMessage);
    this.#offs.push(() => proc.off('message', onMessage));
  }

  /**
   * The control plane refused the call's start because the call had already ended: it was stopped before its
   * session started, maybe before this job joined its room (which LiveKit then made anew, empty).
   */
  endedByControlPlane(at = Date.now()): void {
    this.#close({ reason: 'api_stop', at });
  }

  /** Stops watching: the job leaves its rooms itself from here (its own disconnect is no end). */
  dispose(): void {
    for (const w of this.#rooms) w.off();
    this.#rooms = [];
    for (const off of this.#offs.splice(0)) off();
  }

  #close(c: RoomClosed): void {
    if (this.state) return;
    this.state = c;
    this.#resolve(c);
  }
}

/**
 * The leaves agents-js's RoomIO ends a session on (its CLOSE_ON_DISCONNECT_REASONS) but the room's deletion, which
 * is the room's close (a stop), not the caller's: a network blip is no hang-up either.
 */
const HANG_UP_REASONS: (DisconnectReason | undefined)[] = [DisconnectReason.CLIENT_INITIATED, DisconnectReason.USER_REJECTED];
const CALLER_KINDS: (ParticipantKind | undefined)[] = [ParticipantKind.STANDARD, ParticipantKind.SIP];
/** Who can be the caller: a standard or SIP participant that is no supervisor (a person who took the call over is one). */
const callerLike = (p: RemoteParticipant) => CALLER_KINDS.includes(p.kind) && !isSupervisorIdentity(p.identity);

/**
 * Calls `onLeft(at)` when the call's caller leaves the room: `caller()` names them (the participant the session
 * listens to, once it does); before that, the last caller-like participant leaving is the caller. A supervisor (a
 * person who took the call over) is never the caller: their leaving ends nothing, and they do not stand in for one. Registered
 * before the session starts, so it sees the leave before agents-js's RoomIO forgets who it listened to.
 */
export function onCallerLeft(room: Room, caller: () => string | undefined, onLeft: (at: number) => void): () => void {
  const listener = (p: RemoteParticipant) => {
    const at = Date.now();
    if (!callerLike(p) || !HANG_UP_REASONS.includes(p.disconnectReason)) return;
    const linked = caller();
    const others = [...room.remoteParticipants.values()].filter((o) => o.identity !== p.identity && callerLike(o));
    if (linked ? linked === p.identity : others.length === 0) onLeft(at);
  };
  room.on(RoomEvent.ParticipantDisconnected, listener);
  return () => room.off(RoomEvent.ParticipantDisconnected, listener);
}
