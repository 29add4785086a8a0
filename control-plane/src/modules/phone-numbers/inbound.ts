// Inbound calls: the worker in a room made by a dispatch rule asks the control plane to open the call
// (POST /internal/v1/calls/inbound). Routing, in order:
//   1. the number's inbound_routing agent_id or squad_id, else the number's own squad or agent: the primary
//      target (a squad's call starts on its entry agent and carries the squad, as a web call on a squad does);
//   2. inbound_routing.fallback (an agent or a squad) when the primary target has been deleted, or the organisation is at its daily call cap or its concurrent-call limit (the overflow line: admitted past
//      those limits, by at most INBOUND_FALLBACK_OVERFLOW_PERCENT of each);
//   3. the workspace's default_agent_id when there is no live primary and no fallback (limits apply);
//   4. otherwise the call is refused: a `failed` call record and `call.failed`, and the worker deletes the room
//      so the SIP bridge answers the INVITE with a final 486.
// An unknown or inactive number is refused the same way but creates no call (404), and so is a request whose
// room, trunk and dispatch rule are not the number's own (route_mismatch): only a call that came in through
// the number's trunk (the carrier's addresses) and was put in a room by the number's rule
// opens a call, whatever number the INVITE's To names; and, where the carrier names its account in a header,
// only one from the platform's own account (carriers/account.ts).
import { randomUUID } from 'node:crypto';
import type { ParticipantInfo } from 'livekit-server-sdk';
import type { Services } from '../../services.ts';
import type { Db } from '../../db/types.ts';
import { HttpError } from '../../http/errors.ts';
import type { InboundOpenRequest } from '../../../../schemas/internal.ts';
import { insertCall, type CallRow } from '../calls/queries.ts';
import { pinCall } from '../agent-versions/queries.ts';
import { admitCall } from '../calls/limits.ts';
import { callLimitsOf, lockAdmission } from '../calls/queries-admission.ts';
import { failCall, markInitiated } from '../calls/lifecycle.ts';
import { carrierFor } from './carriers/index.ts';
import { callRateCents, rateTableFor } from './rates.ts';
import { findLiveByNumber, type PhoneNumberRow } from './queries.ts';
import { inboundRoomPrefix } from './wiring.ts';
import { accountMatches, CARRIER_ACCOUNT_ATTRIBUTE, inboundAccountCheck } from './carriers/account.ts';
import { findCallTarget, setCallSquad, type CallTarget } from '../squads/target.ts';
import type { SquadRow } from '../squads/queries.ts';

/** A phone number as E.164, or null when it is not one (an anonymous caller, a SIP user name). */
export function toE164(raw: string | null | undefined): string | null {
  if (!raw) return null;
  const s = raw
    .trim()
    .replace(/^(tel:|sip:)/, '')
    .replace(/@.*$/, '')
    .replace(/[\s().-]/g, '');
  if (/^\+[1-9]\d{1,14}$/.test(s)) return s;
  if (/^00[1-9]\d{1,14}$/.test(s)) return `+${s.slice(2)}`;
  if (/^[1-9]\d{1,14}$/.test(s)) return `+${s}`;
  return null;
}

export type Rejection =
  | 'number_not_found'
  | 'number_inactive'
  | 'route_mismatch'
  | 'carrier_account_mismatch'
  | 'no_agent'
  | 'daily_cap_reached'
  | 'concurrency_limit_reached'
  | 'answered_elsewhere'
  | 'already_opened';

export const refused = (status: 404 | 409, reason: Rejection, detail: string, callId?: string) =>
  new HttpError(status, status === 404 ? 'not_found' : 'conflict', detail, { extra: { reason, ...(callId ? { call_id: callId } : {}) } });

type Admission = 'ok' | 'daily_cap_reached' | 'concurrency_limit_reached';

/** How far past its limits the overflow line may take an org's calls (INBOUND_FALLBACK_OVERFLOW_PERCENT). */
export const DEFAULT_OVERFLOW_PERCENT = 50;

/** A slot under the org's limits (calls/limits.ts: the one admission of every call type, race-free). */
async function admit(db: Db, orgId: string): Promise<Admission> {
  const a = await admitCall(db, orgId);
  if (a.ok) return 'ok';
  return a.reason === 'daily_cap' ? 'daily_cap_reached' : 'concurrency_limit_reached';
}

/** The overflow line still counts toward the day's calls, past the cap. */
export async function countDailyCall(db: Db, orgId: string): Promise<void> {
  await db`
    insert into org_daily_calls as d (org_id, day, calls) values (${orgId}, (now() at time zone 'utc')::date, 1)
    on conflict (org_id, day) do update set calls = d.calls + 1`;
}

/** The number's target: its routing override (agent or squad), else its own squad, else its own agent. */
export async function primaryTarget(db: Db, number: PhoneNumberRow): Promise<CallTarget | null> {
  const own = number.squad_id ? { squad_id: number.squad_id } : { agent_id: number.agent_id };
  return (await findCallTarget(db, number.org_id, number.inbound_routing ?? {})) ?? (await findCallTarget(db, number.org_id, own));
}

export const fallbackTarget = (db: Db, number: PhoneNumberRow): Promise<CallTarget | null> =>
  findCallTarget(db, number.org_id, number.inbound_routing?.fallback ?? {});

export interface Route {
  target: CallTarget | null;
  /** How the target was chosen: primary, fallback, default; or the rejection. */
  via: 'primary' | 'fallback' | 'default' | Rejection;
}

/**
 * The overflow line's ceiling (issue 50): calls the fallback takes past the org's limits are bounded too, at
 * `overflowPercent` of each limit (at least one call): live overflow calls against max_concurrent_calls, the
 * day's against max_calls_per_day. So a flood of calls to a number with a fallback cannot run without bound.
 * Under the admission lock (a concurrent overflow waits for this one's insert); counts the day's call.
 */
async function admitOverflow(db: Db, orgId: string, overflowPercent: number): Promise<Admission> {
  await lockAdmission(db, orgId);
  const limits = await callLimitsOf(db, orgId);
  if (!limits) return 'concurrency_limit_reached';
  const headroom = (limit: number) => Math.max(1, Math.ceil((limit * overflowPercent) / 100));
  const [n] = await db<{ live: number; today: number }[]>`
    select count(*) filter (where status in ('queued', 'initiated', 'in_progress'))::int as live, count(*)::int as today
    from calls
    where org_id = ${orgId} and type = 'inbound' and metadata->>'routed_via' = 'fallback'
      and created_at >= (date_trunc('day', now() at time zone 'utc') at time zone 'utc')`;
  if (n!.live >= headroom(limits.max_concurrent_calls)) return 'concurrency_limit_reached';
  if (n!.today >= headroom(limits.max_calls_per_day)) return 'daily_cap_reached';
  await countDailyCall(db, orgId);
  return 'ok';
}

/** Chooses the agent or squad (and takes the limit slot) inside the caller's transaction. */
export async function routeInbound(db: Db, number: PhoneNumberRow, opts: { overflowPercent?: number } = {}): Promise<Route> {
  const primary = await primaryTarget(db, number);
  const fallback = await fallbackTarget(db, number);
  const overflowPercent = opts.overflowPercent ?? DEFAULT_OVERFLOW_PERCENT;
  if (primary) {
    const admission = await admit(db, number.org_id);
    if (admission === 'ok') return { target: primary, via: 'primary' };
    if (fallback) {
      const overflow = await admitOverflow(db, number.org_id, overflowPercent);
      return overflow === 'ok' ? { target: fallback, via: 'fallback' } : { target: null, via: overflow };
    }
    return { target: null, via: admission };
  }
  if (fallback) {
    // The primary is gone: the fallback is the number's line, with the overflow line's headroom past the limits.
    const admission = await admit(db, number.org_id);
    const overflow = admission === 'ok' ? 'ok' : await admitOverflow(db, number.org_id, overflowPercent);
    return overflow === 'ok' ? { target: fallback, via: 'fallback' } : { target: null, via: overflow };
  }
  const [org] = await db<{ default_agent_id: string | null }[]>`select default_agent_id from orgs where id = ${number.org_id}`;
  const def = await findCallTarget(db, number.org_id, { agent_id: org?.default_agent_id });
  if (!def) return { target: null, via: 'no_agent' };
  const admission = await admit(db, number.org_id);
  return admission === 'ok' ? { target: def, via: 'default' } : { target: null, via: admission };
}

const REJECTION_DETAIL: Record<Rejection, string> = {
  number_not_found: 'The dialled number is not a number of this platform',
  number_inactive: 'The dialled number is inactive',
  route_mismatch: "The call did not come through the number's trunk, dispatch rule and room",
  carrier_account_mismatch: "The call did not come from the platform's carrier account",
  no_agent: 'No agent can take calls for this number',
  daily_cap_reached: 'The organisation reached its daily call cap',
  concurrency_limit_reached: 'The organisation reached its concurrent-call limit',
  answered_elsewhere: 'The call already has its agent: a standby agent, or the fallback agent after this dispatch went unanswered',
  already_opened: "The room's call was opened before: its config and capability are handed out once",
};

/** The room, trunk and rule the SIP bridge reported are the number's own (its rule names rooms `pn-<id>_…`). */
export function routeIsTheNumbers(number: PhoneNumberRow, req: Pick<InboundOpenRequest, 'room_name' | 'trunk_id' | 'dispatch_rule_id'>): boolean {
  return (
    !!number.inbound_trunk_id &&
    !!number.dispatch_rule_id &&
    req.trunk_id === number.inbound_trunk_id &&
    req.dispatch_rule_id === number.dispatch_rule_id &&
    req.room_name.startsWith(`${inboundRoomPrefix(number.id)}_`)
  );
}

/** The SIP participant's view of an inbound call, as the bridge reports it (its attributes). */
export type InboundLeg = Pick<InboundOpenRequest, 'to_number' | 'from_number' | 'room_name' | 'sip_call_id' | 'trunk_id' | 'dispatch_rule_id' | 'carrier_account'>;

/** The leg as LiveKit reports the caller's participant (its attributes, set by the SIP bridge). */
export function legOf(room: string, caller: Pick<ParticipantInfo, 'attributes'>): InboundLeg {
  const a = caller.attributes ?? {};
  return {
    room_name: room,
    to_number: a['sip.trunkPhoneNumber'] ?? '',
    from_number: a['sip.phoneNumber'] ?? null,
    sip_call_id: a['sip.callIDFull'] ?? a['sip.callID'] ?? null,
    trunk_id: a['sip.trunkID'] ?? '',
    dispatch_rule_id: a['sip.ruleID'] ?? '',
    carrier_account: a[CARRIER_ACCOUNT_ATTRIBUTE] ?? null,
  };
}

/**
 * The dialled number, when the call came through its own trunk, rule and room; otherwise the refusal. Checked
 * before anything else (the retry lookup too), so a forged request learns nothing and opens nothing.
 */
export async function numberOfLeg(services: Services, leg: InboundLeg): Promise<PhoneNumberRow> {
  const to = toE164(leg.to_number);
  const number = to ? await findLiveByNumber(services.sql, to) : undefined;
  if (!number) throw refused(404, 'number_not_found', REJECTION_DETAIL.number_not_found);
  if (!routeIsTheNumbers(number, leg)) {
    services.log.warn(
      { phone_number_id: number.id, room: leg.room_name, trunk_id: leg.trunk_id, dispatch_rule_id: leg.dispatch_rule_id },
      "inbound call refused: not the number's trunk, rule and room",
    );
    throw refused(404, 'route_mismatch', REJECTION_DETAIL.route_mismatch);
  }
  // From the carrier's addresses, but maybe another customer's account of the same carrier (issue 50, item 9).
  if (!accountMatches(inboundAccountCheck(services.config), leg.carrier_account)) {
    services.log.warn({ phone_number_id: number.id, room: leg.room_name }, "inbound call refused: not the platform's carrier account");
    throw refused(404, 'carrier_account_mismatch', REJECTION_DETAIL.carrier_account_mismatch);
  }
  return number;
}

/** Inserts the inbound call row (with its carrier's rate) inside the caller's transaction. */
export async function insertInboundCall(
  services: Services,
  tx: Db,
  number: PhoneNumberRow,
  leg: InboundLeg,
  c: { id: string; agentId: string; squad?: SquadRow | null; routedVia: string; metadata?: Record<string, unknown> },
): Promise<CallRow> {
  const voicemail = number.inbound_routing?.voicemail_message;
  const call = await insertCall(tx, {
    id: c.id,
    org_id: number.org_id,
    agent_id: c.agentId,
    type: 'inbound',
    direction: 'inbound',
    to_number: number.phone_number,
    from_number: toE164(leg.from_number),
    room_name: leg.room_name,
    variables: {},
    metadata: { phone_number_id: number.id, routed_via: c.routedVia, ...c.metadata },
    overrides: voicemail ? { voicemail_message: voicemail } : {},
    webhook_url: null,
  });
  const carrier = carrierFor(services);
  await tx`
    update calls set carrier_call_sid = ${leg.sip_call_id}, rate_cents_per_minute = ${callRateCents(carrier, 'inbound', number.phone_number, rateTableFor(services.config))}
    where id = ${c.id}`;
  // The number's pinned version applies to its own agent answering (not a routing override, fallback or default).
  if (number.agent_version != null && !c.squad && c.agentId === number.agent_id) await pinCall(tx, c.id, number.agent_version);
  return setCallSquad(tx, call, c.squad ?? null);
}

/** The room's call got its agent from the control plane (a standby agent, or the fallback), not from the number's rule. */
export const answeredElsewhere = (call: Pick<CallRow, 'metadata'>): boolean => !!(call.metadata?.unanswered_by || call.metadata?.standby_agent);

/** GET /internal/v1/calls/inbound/rooms/{room}: whether a job the number's rule offers for the room is needed. */
export async function inboundRoomAnsweredElsewhere(services: Services, room: string): Promise<boolean> {
  const [call] = await services.sql<Pick<CallRow, 'metadata'>[]>`select metadata from calls where room_name = ${room}`;
  return !!call && answeredElsewhere(call);
}

/** POST /internal/v1/calls/inbound. Idempotent per room: a retried request answers the call already opened. */
export async function openInboundCall(services: Services, req: InboundOpenRequest): Promise<{ call_id: string }> {
  const { sql } = services;
  const number = await numberOfLeg(services, req);
  const [existing] = await sql<CallRow[]>`select * from calls where room_name = ${req.room_name}`;
  if (existing) {
    if (existing.status === 'failed') throw refused(409, (existing.end_reason as Rejection) ?? 'no_agent', 'The call was refused', existing.id);
    // The control plane gave the call to a standby agent (inbound-standby.ts), or to the fallback agent after this
    // dispatch went unanswered (unanswered.ts): the job the number's rule dispatched leaves the room to it.
    if (answeredElsewhere(existing)) throw refused(409, 'answered_elsewhere', REJECTION_DETAIL.answered_elsewhere, existing.id);
    // Opened before (a replay with the worker token and a logged room, or a retry whose answer was lost): the
    // config, with the organisation's provider keys, and a capability went out once and do not go out again.
    throw refused(409, 'already_opened', REJECTION_DETAIL.already_opened, existing.id);
  }
  if (number.status !== 'active') throw refused(404, 'number_inactive', REJECTION_DETAIL.number_inactive);

  const id = randomUUID();
  const result = await sql.begin(async (tx) => {
    const route = await routeInbound(tx, number, { overflowPercent: services.config.INBOUND_FALLBACK_OVERFLOW_PERCENT });
    // A refused call is recorded against the agent the number names (agents are soft-deleted, so it exists); a
    // refused call started on no squad.
    const call = await insertInboundCall(services, tx, number, req, {
      id,
      agentId: route.target?.agent.id ?? number.inbound_routing?.agent_id ?? number.agent_id,
      squad: route.target?.squad ?? null,
      routedVia: route.via,
    });
    if (!route.target) {
      await failCall(tx, call, route.via, route.via);
      return { refused: route.via as Rejection };
    }
    await markInitiated(tx, id);
    return { refused: null };
  });
  services.log.info({ call_id: id, phone_number_id: number.id, room: req.room_name, routed: result.refused ?? 'accepted' }, 'inbound call');
  if (result.refused) throw refused(409, result.refused, REJECTION_DETAIL[result.refused], id);
  return { call_id: id };
}
