// Standby agents (docs/decisions/030-standby-agents.md): the control plane keeps STANDBY_AGENTS rooms, each with an
// agent job already joined and waiting, so a web call takes one instead of waiting for LiveKit's dispatch (about
// 0.2 s of psrpc affinity wait on every job) and the agent's join; an inbound call takes one too, and its agent
// joins the caller's room from there (phone-numbers/inbound-standby.ts). A room's job waits on a held request
// (routes.ts); a call takes the room in its own transaction and a NOTIFY wakes the job, on whichever control plane
// holds its request. A job that does not claim the call in time is replaced by an ordinary dispatch into the same
// room, so a dead standby job costs the caller a few seconds, never the call.
import { randomUUID } from 'node:crypto';
import client from 'prom-client';
import type { Services, StandbyAgents } from '../../services.ts';
import type { Db } from '../../db/types.ts';
import { dispatchCallAgent, standbySecret } from '../calls/capability.ts';
import { getCallById } from '../calls/queries.ts';
import { liveWorkers } from '../workers/queries.ts';
import { claimTaken, countByState, dropWaiting, expireRooms, forgetRoom, releaseWorkerRooms, reserveRooms, takeReadyRoom } from './queries.ts';

export const STANDBY_CHANNEL = 'vap_standby';
/** A room whose job has not come to wait within this time is given up (the worker may be full or gone). */
const START_TIMEOUT_SECONDS = 60;
/** A taken room not claimed nor dispatched by now: the process that took it died; the call's reaper ends the call. */
const TAKEN_TIMEOUT_SECONDS = 120;
/** How often the pool is checked (and topped up after a failure); a take tops up at once. */
const TICK_MS = 5000;
/** A worker's heartbeat within this time counts as a worker that can take standby jobs. */
const WORKER_FRESH_SECONDS = 30;

export type StandbyMessage = { room: string; call_id: string } | { room: string; release: true };

export class StandbyPool implements StandbyAgents {
  #services: Services | null = null;
  readonly #waiters = new Map<string, (m: StandbyMessage | null) => void>();
  #unlisten: (() => Promise<void>) | null = null;
  #timer: NodeJS.Timeout | null = null;
  #topping: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  readonly #fallbacks = new Set<NodeJS.Timeout>();
  #takes: client.Counter<'result'> | null = null;

  get target(): number {
    return this.#services?.config.STANDBY_AGENTS ?? 0;
  }

  /**
   * Listens for takes and releases (every process: any of them may hold a waiting job's request); keeps the pool
   * where `maintain` (the processes that run jobs).
   */
  async start(services: Services, maintain: boolean): Promise<void> {
    this.#services = services;
    const { sql, metrics } = services;
    this.#takes = new client.Counter({
      name: 'vap_standby_takes_total',
      help: 'Web and inbound calls by how their agent came: claimed (a standby agent took it), fallback (the standby agent did not claim it in time: dispatched), none (no standby agent was ready: dispatched)',
      labelNames: ['result'],
      registers: [metrics.registry],
    });
    const gauge = new client.Gauge({
      name: 'vap_standby_rooms',
      help: 'Standby rooms by state (starting, ready, taken)',
      labelNames: ['state'],
      registers: [metrics.registry],
    });
    metrics.addCollector(async () => {
      for (const [state, n] of Object.entries(await countByState(sql))) gauge.set({ state }, n);
    });
    const sub = await sql.listen(STANDBY_CHANNEL, (payload) => this.#deliver(payload));
    this.#unlisten = () => sub.unlisten();
    if (maintain && this.target > 0) {
      this.#timer = setInterval(() => this.topUpSoon(), TICK_MS);
      this.#timer.unref();
      this.topUpSoon();
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    for (const t of this.#fallbacks) clearTimeout(t);
    // Held requests answer "nothing yet": their jobs ask again, of another control plane.
    for (const resolve of this.#waiters.values()) resolve(null);
    this.#waiters.clear();
    await this.#unlisten?.().catch(() => {});
    await this.#topping?.catch(() => {});
  }

  #deliver(payload: string): void {
    let m: StandbyMessage;
    try {
      m = JSON.parse(payload) as StandbyMessage;
    } catch {
      return;
    }
    const resolve = this.#waiters.get(m.room);
    if (!resolve) return;
    this.#waiters.delete(m.room);
    resolve(m);
  }

  /**
   * Waits for the room's call or release: the message, or null after `timeoutMs` or when `signal` aborts. Register
   * before marking the room ready, so a take that follows at once is not missed.
   */
  waitFor(room: string, timeoutMs: number, signal: AbortSignal): Promise<StandbyMessage | null> {
    this.#waiters.get(room)?.(null); // a newer request of the same job supersedes the older
    return new Promise((resolve) => {
      const done = (m: StandbyMessage | null) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', aborted);
        if (this.#waiters.get(room) === done) this.#waiters.delete(room);
        resolve(m);
      };
      const aborted = () => done(null);
      const timer = setTimeout(() => done(null), timeoutMs);
      signal.addEventListener('abort', aborted, { once: true });
      this.#waiters.set(room, done);
      if (this.#stopped) done(null);
    });
  }

  /**
   * In the call's transaction: the oldest ready room, taken for `callId`; null when the pool is off or empty (the
   * call is dispatched as before). Follow a room with afterTake once the transaction has committed.
   */
  async take(tx: Db, callId: string): Promise<string | null> {
    const services = this.#services;
    if (!services || this.target <= 0) return null;
    const room = await takeReadyRoom(tx, services.livekit.agentName, callId, STANDBY_CHANNEL);
    if (!room) this.#takes?.inc({ result: 'none' });
    return room;
  }

  /** After the take committed: the fallback dispatch if the job does not claim in time, and a top-up. */
  afterTake(room: string): void {
    const services = this.#services!;
    const t = setTimeout(() => {
      this.#fallbacks.delete(t);
      void this.#fallback(room).catch((err: unknown) => services.log.error({ err, room }, 'standby fallback dispatch failed'));
    }, services.config.STANDBY_CLAIM_TIMEOUT_MS);
    t.unref();
    this.#fallbacks.add(t);
    this.topUpSoon();
  }

  /** The job claimed its call (routes.ts). */
  claimed(): void {
    this.#takes?.inc({ result: 'claimed' });
  }

  async #fallback(room: string): Promise<void> {
    const services = this.#services!;
    const callId = await claimTaken(services.sql, room);
    if (!callId) return; // claimed by its job
    this.#takes?.inc({ result: 'fallback' });
    // A web call's room is the standby room; an inbound call's is the caller's, where the agent is dispatched
    // instead (and the standby room, whose job is gone, is deleted).
    const callRoom = (await getCallById(services.sql, callId))?.room_name ?? room;
    services.log.warn({ room, call_room: callRoom, call_id: callId }, 'standby agent did not claim its call; dispatching an agent');
    if (callRoom !== room) await services.livekit.rooms.deleteRoom(room).catch(() => {});
    await dispatchCallAgent(services, callRoom, callId);
  }

  /** A draining worker's standby rooms: released and deleted, so its drain does not wait on them. */
  async releaseWorker(workerId: string): Promise<void> {
    if (!this.#services) return;
    const rooms = await releaseWorkerRooms(this.#services.sql, workerId, STANDBY_CHANNEL);
    for (const r of rooms) await this.#services?.livekit.rooms.deleteRoom(r).catch(() => {});
    if (rooms.length) this.topUpSoon();
  }

  /** A ready room whose job stopped waiting: out of the pool, its room deleted, a replacement started. */
  async dropRoom(room: string): Promise<void> {
    const services = this.#services;
    if (!services || !(await dropWaiting(services.sql, room))) return;
    await services.livekit.rooms.deleteRoom(room).catch(() => {});
    this.topUpSoon();
  }

  /** Runs a top-up now, or once more after the one running (coalesced). */
  topUpSoon(): void {
    if (this.#stopped || !this.#services || this.target <= 0) return;
    if (this.#topping) {
      this.#again = true;
      return;
    }
    this.#topping = this.topUp()
      .catch((err: unknown) => this.#services?.log.warn({ err }, 'standby pool top-up failed'))
      .finally(() => {
        this.#topping = null;
        if (this.#again && !this.#stopped) {
          this.#again = false;
          this.topUpSoon();
        }
      });
  }

  /** Gives up expired rooms and adds rooms up to the target (when a worker has reported lately). */
  async topUp(): Promise<void> {
    const services = this.#services!;
    const { sql, livekit, log } = services;
    for (const r of await expireRooms(sql, START_TIMEOUT_SECONDS, TAKEN_TIMEOUT_SECONDS, STANDBY_CHANNEL)) await livekit.rooms.deleteRoom(r).catch(() => {});
    // Without a worker the dispatches would wait in LiveKit and the rooms expire: keep none until one reports.
    if ((await liveWorkers(sql, livekit.agentName, WORKER_FRESH_SECONDS)) === 0) return;
    const rooms = await sql.begin((tx) => reserveRooms(tx, livekit.agentName, this.target, () => `standby-${randomUUID()}`));
    for (const room of rooms) {
      try {
        // Room metadata is readable by everyone in the room: it says only that the room is a standby room.
        await livekit.rooms.createRoom({ name: room, metadata: JSON.stringify({ standby: true }), emptyTimeout: 120, departureTimeout: 15 });
        // The room's secret goes with its dispatch: only a wait that presents it is held for the room's call.
        await livekit.dispatch.createDispatch(room, livekit.agentName, { metadata: JSON.stringify({ standby: room, secret: standbySecret(services, room) }) });
      } catch (err) {
        log.warn({ err, room }, 'standby room could not be made');
        await forgetRoom(sql, room);
        await livekit.rooms.deleteRoom(room).catch(() => {});
      }
    }
  }
}
