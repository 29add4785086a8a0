// Inbound calls no agent takes. The SIP bridge puts a caller in a room made by the number's dispatch rule, and
// LiveKit offers the agent worker a job for it. With no worker running, or every worker full, LiveKit drops
// that dispatch for good, and the caller would ring until the trunk's ringing timeout. So the control plane
// watches each inbound room (LiveKit's participant_joined webhook) and, INBOUND_ANSWER_WAIT_SECONDS later:
//   1. a worker accepted the dispatch (a job in the dispatch's state, an agent in the room, or the call is
//      open): nothing to do;
//   2. else, when the number has a fallback (an agent, or a squad), the control plane opens the call for it itself and
//      dispatches the worker with the call's id, then looks again INBOUND_FALLBACK_WAIT_SECONDS later;
//   3. else (or when the fallback is not taken either), the number's voicemail_message is played without a
//      worker (announcer.ts), and the call fails: `call.failed` with reason `agent_unavailable`. Deleting the
//      room then hangs up on the caller (BYE), or refuses the INVITE still ringing (486) when there was no message.
// A crash between steps leaves a call row that never started: the reaper fails it after DISPATCH_TIMEOUT_SECONDS.
import { randomUUID } from 'node:crypto';
import type { Job } from 'pg-boss';
import type { ParticipantInfo } from 'livekit-server-sdk';
import type { QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import { dispatchCallAgent } from '../calls/capability.ts';
import { failCall, isFinal, markInitiated, noWorker } from '../calls/lifecycle.ts';
import { callIdInRoom, getCallById, mergeCallMetadata, setPartialMessages, type CallRow } from '../calls/queries.ts';
import { announce, synthesizeMessage } from './announcer.ts';
import { countDailyCall, fallbackTarget, insertInboundCall, legOf, numberOfLeg, primaryTarget, type InboundLeg } from './inbound.ts';
import type { SquadRow } from '../squads/queries.ts';
import type { PhoneNumberRow } from './queries.ts';
import { INBOUND_ROOM_PREFIX } from './wiring.ts';

export const INBOUND_WATCH_QUEUE = 'calls.inbound-watch';

export interface WatchJob {
  room: string;
  stage: 'primary' | 'fallback';
  /** The fallback's call (stage 'fallback'). */
  call_id?: string;
}

export type WatchOutcome = 'opened' | 'taken' | 'gone' | 'refused' | 'fallback' | 'unavailable';

// ParticipantInfo_Kind (the enum lives in @livekit/protocol, which the SDK does not re-export).
export const SIP_KIND = 3;
const AGENT_KIND = 4;
/** JobStatus.JS_FAILED: a job that failed does not count as taking the call. */
const JOB_FAILED = 3;
const ANNOUNCER_IDENTITY = 'vap-announcer';

/** LiveKit's participant_joined for a caller in a number's room: watch it. */
export async function watchInboundRoom(services: Services, room: string, participant: ParticipantInfo | undefined): Promise<void> {
  if (!room.startsWith(INBOUND_ROOM_PREFIX) || participant?.kind !== SIP_KIND) return;
  await services.boss.send(INBOUND_WATCH_QUEUE, { room, stage: 'primary' } satisfies WatchJob, {
    startAfter: services.config.INBOUND_ANSWER_WAIT_SECONDS,
    singletonKey: `${room}:primary`,
  });
}

const isNotFound = (err: unknown) => (err as { status?: number }).status === 404 || (err as { code?: string }).code === 'not_found';

/** The room's participants; null when the room is gone. */
async function participantsOf(services: Services, room: string): Promise<ParticipantInfo[] | null> {
  try {
    return await services.livekit.rooms.listParticipants(room);
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

/** A worker took the room: an agent joined, or a dispatch has a job that did not fail. */
async function takenByWorker(services: Services, room: string, participants: ParticipantInfo[]): Promise<boolean> {
  if (participants.some((p) => p.kind === AGENT_KIND)) return true;
  const dispatches = await services.livekit.dispatch.listDispatch(room);
  return dispatches.some((d) => (d.state?.jobs ?? []).some((j) => j.state?.status !== JOB_FAILED));
}

/** Cancels the room's dispatches, so that a worker freed later cannot take a call given to someone else. */
async function cancelDispatches(services: Services, room: string): Promise<void> {
  for (const d of await services.livekit.dispatch.listDispatch(room)) {
    await services.livekit.dispatch.deleteDispatch(d.id, room).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  }
}

const deleteRoom = (services: Services, room: string) => services.livekit.rooms.deleteRoom(room).catch(() => {});

export async function watchInbound(services: Services, job: WatchJob): Promise<WatchOutcome> {
  const log = services.log.child({ room: job.room, stage: job.stage });
  const fallbackCall = job.call_id ? await getCallById(services.sql, job.call_id) : undefined;
  if (job.stage === 'primary') {
    // The worker opened the call (the usual case), or a retried job already acted.
    if (await callIdInRoom(services.sql, job.room)) return 'opened';
  } else if (!fallbackCall || fallbackCall.status !== 'initiated') {
    return 'opened'; // started, or already ended
  }
  const participants = await participantsOf(services, job.room);
  const caller = participants?.find((p) => p.kind === SIP_KIND);
  if (!participants || !caller) {
    // The caller hung up while ringing: the fallback's call ends with them.
    if (fallbackCall) await failUnanswered(services, fallbackCall, false);
    return 'gone';
  }
  if (await takenByWorker(services, job.room, participants)) return 'taken';

  const leg = legOf(job.room, caller);
  let number: PhoneNumberRow;
  try {
    number = await numberOfLeg(services, leg);
  } catch (err) {
    log.warn({ err: (err as Error).message }, "unanswered inbound room is not a number's call; refused");
    await deleteRoom(services, job.room);
    return 'refused';
  }
  await cancelDispatches(services, job.room);
  if (job.stage === 'primary') {
    const primaryTo = await primaryTarget(services.sql, number);
    const primary: OpenTarget = primaryTo
      ? { agentId: primaryTo.agent.id, squad: primaryTo.squad }
      : { agentId: number.inbound_routing?.agent_id ?? number.agent_id, squad: null };
    const fallbackTo = await fallbackTarget(services.sql, number);
    if (fallbackTo && number.status === 'active') {
      const fallback = fallbackTo.agent.id;
      const call = await openFor(services, number, leg, { agentId: fallback, squad: fallbackTo.squad }, 'fallback', [primary.agentId]);
      if (!call) return 'opened';
      await dispatchCallAgent(services, job.room, call.id);
      await services.boss.send(INBOUND_WATCH_QUEUE, { room: job.room, stage: 'fallback', call_id: call.id } satisfies WatchJob, {
        startAfter: services.config.INBOUND_FALLBACK_WAIT_SECONDS,
        singletonKey: `${job.room}:fallback`,
      });
      log.warn(
        { call_id: call.id, phone_number_id: number.id, agent_id: fallback },
        'inbound call: no worker took the primary agent; dispatched the fallback agent',
      );
      return 'fallback';
    }
    const call = await openFor(services, number, leg, primary, 'primary', [primary.agentId]);
    if (!call) return 'opened';
    await leaveMessage(services, number, call);
    return 'unavailable';
  }
  // Stage 'fallback': not taken either.
  await mergeCallMetadata(services.sql, fallbackCall!.id, { unanswered_by: [...unansweredBy(fallbackCall!), fallbackCall!.agent_id] });
  await leaveMessage(services, number, (await getCallById(services.sql, fallbackCall!.id))!);
  return 'unavailable';
}

const unansweredBy = (call: CallRow) => (Array.isArray(call.metadata?.unanswered_by) ? (call.metadata.unanswered_by as string[]) : []);

/** Who a call the control plane opens itself talks to: an agent, or a squad's entry agent with the squad. */
interface OpenTarget {
  agentId: string;
  squad: SquadRow | null;
}

/** The call row of a call the control plane handles itself; null when a worker opened the room's call first. */
async function openFor(
  services: Services,
  number: PhoneNumberRow,
  leg: InboundLeg,
  target: OpenTarget,
  via: 'primary' | 'fallback',
  unanswered: string[],
): Promise<CallRow | null> {
  try {
    return await services.sql.begin(async (tx) => {
      const call = await insertInboundCall(services, tx, number, leg, {
        id: randomUUID(),
        agentId: target.agentId,
        squad: target.squad,
        routedVia: via,
        metadata: { unanswered_by: via === 'fallback' ? unanswered : [target.agentId] },
      });
      // The fallback is the overflow line: admitted past the limits, and counted (inbound.ts routeInbound).
      if (via === 'fallback') await countDailyCall(tx, number.org_id);
      await markInitiated(tx, call.id);
      return call;
    });
  } catch (err) {
    // calls_room_idx: the worker's open won the race for this room.
    if ((err as { code?: string }).code === '23505') return null;
    throw err;
  }
}

/** The number's voicemail_message, played without a worker, then the call fails as agent_unavailable. */
async function leaveMessage(services: Services, number: PhoneNumberRow, call: CallRow): Promise<void> {
  const log = services.log.child({ call_id: call.id, room: call.room_name });
  const message = number.inbound_routing?.voicemail_message?.trim();
  let played = false;
  if (message && call.room_name) {
    try {
      const pcm = await synthesizeMessage(message);
      const token = await services.livekit.participantToken(call.room_name, ANNOUNCER_IDENTITY, { name: 'Voicemail' });
      played = await announce({ url: services.livekit.serverUrl, token, pcm, logger: log });
    } catch (err) {
      log.error({ err: (err as Error).message }, 'voicemail message of an unanswered inbound call failed');
    }
  }
  if (played) await setPartialMessages(services.sql, call.id, [{ role: 'agent', content: message! }]);
  await failUnanswered(services, call, played);
  log.warn({ phone_number_id: number.id, voicemail_played: played }, 'inbound call: no agent took it');
}

async function failUnanswered(services: Services, call: CallRow, played: boolean): Promise<void> {
  await services.sql.begin(async (tx) => {
    const locked = await getCallById(tx, call.id, { lock: true });
    if (!locked || isFinal(locked.status)) return;
    if (played) await mergeCallMetadata(tx, call.id, { voicemail_played: true });
    await failCall(tx, locked, 'agent_unavailable', 'dispatch_timeout', noWorker(services.config.INBOUND_ANSWER_WAIT_SECONDS));
  });
  if (call.room_name) await deleteRoom(services, call.room_name);
}

export function inboundWatchQueues(services: Services, watch: (job: WatchJob) => Promise<WatchOutcome> = (job) => watchInbound(services, job)): QueueDef<never>[] {
  return [
    {
      name: INBOUND_WATCH_QUEUE,
      // Delayed jobs: NOTIFY fires at insert, before they are due, so poll for them (the default is 30 s).
      // One job per fetch, INBOUND_WATCH_CONCURRENCY at once: a check that plays a voicemail message holds its slot
      // for as long as the message (minutes, for a tenant's long one), and a batch would hold every other call of
      // its batch behind it; pg-boss's default (one at a time) held every organisation's unanswered calls.
      work: { pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 1, batchSize: 1, localConcurrency: services.config.INBOUND_WATCH_CONCURRENCY },
      options: { retryLimit: 2, retryDelay: 1 },
      handler: async (jobs: Job<WatchJob>[]) => {
        await Promise.all(
          jobs.map(async (job) => {
            const outcome = await watch(job.data);
            if (outcome !== 'opened' && outcome !== 'taken') services.log.info({ room: job.data.room, stage: job.data.stage, outcome }, 'inbound room watched');
          }),
        );
      },
    },
  ];
}
