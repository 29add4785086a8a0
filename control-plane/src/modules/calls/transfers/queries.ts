// The SQL of warm transfers (../transfers.ts): the call_transfers rows (migration 104).
import type { Db } from '../../../db/types.ts';
import type { TransferStatus } from '../../../../../schemas/calls.ts';
import type { EndedReport } from '../../../../../schemas/internal.ts';

export interface TransferRow {
  id: string;
  call_id: string;
  org_id: string;
  mode: 'warm' | 'blind';
  destination: string;
  status: TransferStatus;
  participant_identity: string | null;
  sip_status: number | null;
  sip_call_id: string | null;
  reason: string | null;
  started_at: Date;
  answered_at: Date | null;
  joined_at: Date | null;
  ended_at: Date | null;
  duration_seconds: number | null;
  /** The carrier's outbound rate to the destination, captured when dialled (null: the carrier gives none). */
  rate_cents_per_minute: string | null;
  cost_cents: number | null;
  held_report: (EndedReport & { seq?: number }) | null;
}

/** The second leg's time: from its answer to now (null when it never answered). */
const legSeconds = (db: Db) => db`case when answered_at is null then null else greatest(0, round(extract(epoch from now() - answered_at)))::int end`;
/** The second leg's cost as it ends: its rate times its billed minutes (whole minutes rounded up, as phone-numbers/rates.ts). */
const legCost = (db: Db) =>
  db`case when rate_cents_per_minute is null or answered_at is null then null
          else ceil(rate_cents_per_minute * ceil(greatest(0, round(extract(epoch from now() - answered_at))) / 60))::int end`;

export async function transferRows(db: Db, callIds: string[]): Promise<TransferRow[]> {
  return db<TransferRow[]>`select * from call_transfers where call_id = any(${callIds}::uuid[]) order by started_at, id`;
}

/** The call's transfer in flight (ringing, answered or joined), if any. */
export async function liveTransfer(db: Db, callId: string, opts: { lock?: boolean } = {}): Promise<TransferRow | undefined> {
  const [row] = await db<TransferRow[]>`
    select * from call_transfers where call_id = ${callId} and status in ('ringing', 'answered', 'joined') ${opts.lock ? db`for update` : db``}`;
  return row;
}

export async function transferById(db: Db, callId: string, transferId: string, opts: { lock?: boolean } = {}): Promise<TransferRow | undefined> {
  const [row] = await db<TransferRow[]>`
    select * from call_transfers where id = ${transferId} and call_id = ${callId} ${opts.lock ? db`for update` : db``}`;
  return row;
}

/** A new transfer: `ringing`, or already over (`refused`, `failed`) with its reason. Throws 23505 when one is in flight. */
export async function insertTransfer(
  db: Db,
  t: {
    callId: string;
    orgId: string;
    mode?: 'warm' | 'blind';
    destination: string;
    status: 'ringing' | 'refused' | 'failed';
    reason: string | null;
    rateCentsPerMinute?: number | null;
  },
): Promise<TransferRow> {
  const [row] = await db<TransferRow[]>`
    insert into call_transfers (call_id, org_id, mode, destination, status, reason, ended_at, rate_cents_per_minute)
    values (${t.callId}, ${t.orgId}, ${t.mode ?? 'warm'}, ${t.destination}, ${t.status}, ${t.reason}, ${t.status === 'ringing' ? null : db`now()`}, ${t.rateCentsPerMinute ?? null})
    returning *`;
  return row!;
}

export async function setParticipant(db: Db, id: string, identity: string): Promise<void> {
  await db`update call_transfers set participant_identity = ${identity} where id = ${id}`;
}

/** ringing -> answered; undefined when it was no longer ringing (the call ended meanwhile). */
export async function markAnswered(db: Db, id: string, sipCallId: string | null): Promise<TransferRow | undefined> {
  const [row] = await db<TransferRow[]>`
    update call_transfers set status = 'answered', answered_at = now(), sip_call_id = ${sipCallId}
    where id = ${id} and status = 'ringing' returning *`;
  return row;
}

export async function markNotAnswered(db: Db, id: string, f: { status: TransferStatus; sipStatus: number | null; reason: string }): Promise<void> {
  await db`
    update call_transfers set status = ${f.status}, sip_status = ${f.sipStatus}, reason = ${f.reason}, ended_at = now()
    where id = ${id} and status = 'ringing'`;
}

export async function markJoined(db: Db, id: string): Promise<TransferRow> {
  const [row] = await db<TransferRow[]>`update call_transfers set status = 'joined', joined_at = now() where id = ${id} returning *`;
  return row!;
}

/** -> ended now, with the second leg's time. */
export async function markEnded(db: Db, id: string): Promise<TransferRow> {
  const [row] = await db<TransferRow[]>`
    update call_transfers set status = 'ended', ended_at = now(), duration_seconds = ${legSeconds(db)}, cost_cents = ${legCost(db)} where id = ${id} returning *`;
  return row!;
}

/** The answered (not yet joined) transfer of a call ends: its person hung up during the briefing. */
export async function endAnswered(db: Db, callId: string): Promise<void> {
  await db`
    update call_transfers set status = 'ended', ended_at = now(), duration_seconds = ${legSeconds(db)}, cost_cents = ${legCost(db)}
    where call_id = ${callId} and status = 'answered'`;
}

/** Every transfer in flight ends with its call: a ringing one `failed`, an answered or joined one `ended`. */
export async function endInFlight(db: Db, callId: string, reason: string): Promise<void> {
  await db`
    update call_transfers set
      status = case when status = 'ringing' then 'failed' else 'ended' end,
      reason = case when status = 'ringing' then ${reason} else reason end,
      ended_at = now(),
      duration_seconds = ${legSeconds(db)},
      cost_cents = ${legCost(db)}
    where call_id = ${callId} and status in ('ringing', 'answered', 'joined')`;
}

export async function holdReport(db: Db, id: string, report: unknown): Promise<void> {
  await db`update call_transfers set held_report = ${db.json(report as never)} where id = ${id}`;
}

/** The live call in a room with an answered or joined transfer, if any. */
export async function transferInRoom(db: Db, room: string): Promise<{ call_id: string; participant_identity: string | null; status: TransferStatus } | undefined> {
  const [row] = await db<{ call_id: string; participant_identity: string | null; status: TransferStatus }[]>`
    select t.call_id, t.participant_identity, t.status from call_transfers t join calls c on c.id = t.call_id
    where c.room_name = ${room} and c.status = 'in_progress' and t.status in ('answered', 'joined')`;
  return row;
}

/**
 * Whether a call has run past its maximum duration (the call's override, else its agent's, else the agents'
 * default of 1800 s): a joined call has no agent left to end it at max_duration.
 */
export async function pastMaxDuration(db: Db, callId: string): Promise<boolean> {
  const [row] = await db<{ over: boolean }[]>`
    select c.started_at < now() - make_interval(secs => coalesce((c.overrides ->> 'max_duration_seconds')::int, a.max_duration_seconds, 1800)) as over
    from calls c left join agents a on a.id = c.agent_id
    where c.id = ${callId} and c.started_at is not null`;
  return row?.over ?? false;
}

/** A blind transfer's REFER was accepted: ended now, priced at its rate times the reserved minutes. */
export async function markReferred(db: Db, id: string, reservedMinutes: number): Promise<TransferRow | undefined> {
  const [row] = await db<TransferRow[]>`
    update call_transfers set status = 'ended', answered_at = now(), ended_at = now(),
      cost_cents = case when rate_cents_per_minute is null then null else ceil(rate_cents_per_minute * ${reservedMinutes})::int end
    where id = ${id} and status = 'ringing' returning *`;
  return row;
}
