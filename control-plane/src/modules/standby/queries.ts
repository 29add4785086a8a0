// The standby rooms table (migration 096): what the pool keeps, takes and gives up. Every change of state is one
// statement guarded by the state it expects, so two control planes (or a claim racing the fallback) cannot both win.
import type { Db } from '../../db/types.ts';

export type StandbyState = 'starting' | 'ready' | 'taken';

export interface StandbyRow {
  room_name: string;
  agent_name: string;
  state: StandbyState;
  worker_id: string | null;
  call_id: string | null;
  state_at: Date;
}

/** Serialises the pool's top-ups across control-plane processes (one transaction at a time counts and inserts). */
const POOL_LOCK = 'vap.standby_pool';

/**
 * Rooms to add so that `target` are starting or ready for `agentName`, inserted as `starting` under an advisory
 * lock (so two processes topping up at once do not both add). Returns the new rooms' names.
 */
export async function reserveRooms(db: Db, agentName: string, target: number, newName: () => string): Promise<string[]> {
  await db`select pg_advisory_xact_lock(hashtext(${POOL_LOCK}))`;
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from standby_rooms where agent_name = ${agentName} and state in ('starting', 'ready')`;
  const names = Array.from({ length: Math.max(0, target - row!.n) }, newName);
  for (const name of names) await db`insert into standby_rooms (room_name, agent_name, state) values (${name}, ${agentName}, 'starting')`;
  return names;
}

export async function getStandby(db: Db, room: string): Promise<StandbyRow | undefined> {
  const [row] = await db<StandbyRow[]>`select room_name, agent_name, state, worker_id, call_id, state_at from standby_rooms where room_name = ${room}`;
  return row;
}

/** The room's job waits for a call: it may be taken from now on. False when the row is gone or already taken. */
export async function markReady(db: Db, room: string, workerId: string): Promise<boolean> {
  const rows = await db`
    update standby_rooms set state = 'ready', worker_id = ${workerId}, state_at = now()
    where room_name = ${room} and state in ('starting', 'ready') returning room_name`;
  return rows.length > 0;
}

/**
 * Its job stopped waiting (its request closed unanswered: the job, its process or its worker went away): the room is
 * removed from the pool at once, so it is neither taken nor counted while the pool refills. True when it was.
 */
export async function dropWaiting(db: Db, room: string): Promise<boolean> {
  const rows = await db`delete from standby_rooms where room_name = ${room} and state = 'ready' returning room_name`;
  return rows.length > 0;
}

/**
 * Takes the oldest ready room of `agentName` for a call, in the call's transaction (SKIP LOCKED: concurrent calls
 * take different rooms, none waits for another). The notification reaches the waiting job when the transaction
 * commits, so the job never reads a call that is not there yet. Null when none is ready.
 */
export async function takeReadyRoom(db: Db, agentName: string, callId: string, channel: string): Promise<string | null> {
  const [row] = await db<{ room_name: string }[]>`
    update standby_rooms set state = 'taken', call_id = ${callId}, state_at = now()
    where room_name = (
      select room_name from standby_rooms where agent_name = ${agentName} and state = 'ready'
      order by state_at limit 1 for update skip locked)
    returning room_name`;
  if (!row) return null;
  await db`select pg_notify(${channel}, ${JSON.stringify({ room: row.room_name, call_id: callId })})`;
  return row.room_name;
}

/**
 * The taken room's call, for whoever deletes the row first: the room's job (its claim) or the control plane's
 * fallback dispatch when the job did not claim in time. Null when the other one won (or the room was not taken).
 */
export async function claimTaken(db: Db, room: string): Promise<string | null> {
  const [row] = await db<{ call_id: string }[]>`delete from standby_rooms where room_name = ${room} and state = 'taken' returning call_id`;
  return row?.call_id ?? null;
}

/** A draining worker's waiting rooms, removed (their jobs are told to leave). */
export async function releaseWorkerRooms(db: Db, workerId: string, channel: string): Promise<string[]> {
  const rows = await db<{ room_name: string }[]>`
    delete from standby_rooms where worker_id = ${workerId} and state in ('starting', 'ready') returning room_name`;
  for (const r of rows) await db`select pg_notify(${channel}, ${JSON.stringify({ room: r.room_name, release: true })})`;
  return rows.map((r) => r.room_name);
}

/**
 * Rooms given up: starting for longer than `startSeconds` (no job came, or it stopped waiting), and taken for
 * longer than `takenSeconds` (the process that took it died before its fallback ran; the call's own reaper ends
 * the call). Removed; their names returned so the rooms can be deleted.
 */
export async function expireRooms(db: Db, startSeconds: number, takenSeconds: number, channel: string): Promise<string[]> {
  const rows = await db<{ room_name: string }[]>`
    delete from standby_rooms
    where (state = 'starting' and state_at < now() - make_interval(secs => ${startSeconds}))
       or (state = 'taken' and state_at < now() - make_interval(secs => ${takenSeconds}))
    returning room_name`;
  for (const r of rows) await db`select pg_notify(${channel}, ${JSON.stringify({ room: r.room_name, release: true })})`;
  return rows.map((r) => r.room_name);
}

export async function forgetRoom(db: Db, room: string): Promise<void> {
  await db`delete from standby_rooms where room_name = ${room} and state <> 'taken'`;
}

export async function countByState(db: Db): Promise<Record<StandbyState, number>> {
  const rows = await db<{ state: StandbyState; n: number }[]>`select state, count(*)::int as n from standby_rooms group by state`;
  const out: Record<StandbyState, number> = { starting: 0, ready: 0, taken: 0 };
  for (const r of rows) out[r.state] = r.n;
  return out;
}
