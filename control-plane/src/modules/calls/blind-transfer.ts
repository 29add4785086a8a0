// Blind transfers (issue 50, item 3). A blind transfer_call used to be a REFER the worker sent on its own: no
// record, no price, no spend cap, so an agent talked into transferring was an unmetered outbound path. Now the
// worker asks here, like a warm transfer: the destination policy (the worker checked it too, but a worker is
// not trusted), the day's spend against daily_spend_cap_cents, a call_transfers row (mode `blind`), the REFER
// sent from here through LiveKit's SIP transfer, and a price. Once the carrier accepts the REFER its new leg
// is out of sight, so the price is a reservation: the destination's outbound rate times
// BLIND_TRANSFER_RESERVED_MINUTES (docs/decisions/sec1-blind-transfers.md).
import { SipCallError } from 'livekit-server-sdk';
import type { Services } from '../../services.ts';
import type { TransferResult } from '../../../../schemas/internal.ts';
import { checkDestination } from '../../../../shared/destination-policy.ts';
import { conflict, notFound } from '../../http/errors.ts';
import { getCallById } from './queries.ts';
import { callLimitsOf, spendTodayCents } from './queries-admission.ts';
import { callerNumber } from './queries-outbound.ts';
import { callRateCents, rateTableFor } from '../phone-numbers/rates.ts';
import { countRefusal, policyOptionsFor } from './destinations.ts';
import { carrierFor } from '../phone-numbers/carriers/index.ts';
import { destinationPolicyFor } from '../workspace/destination-policy.ts';
import { insertTransfer, markNotAnswered, markReferred } from './transfers/queries.ts';
import { transferIdentity } from './transfers.ts';

const refused = (message: string, transferId: string | null = null): TransferResult => ({ transfer_id: transferId, status: 'refused', participant_identity: null, message });

/** POST /internal/v1/calls/{id}/transfers with mode `blind`: checks, records, sends the REFER, prices it. */
export async function startBlindTransfer(services: Services, callId: string, destination: string): Promise<TransferResult> {
  const { sql, livekit, log, config } = services;
  const call = await getCallById(sql, callId);
  if (!call) throw notFound('Call');
  if (call.status !== 'in_progress' || !call.room_name) throw conflict('The call is not in progress');
  if (call.type === 'web') return refused('a web call has no phone line to transfer');

  const carrier = carrierFor(services);
  const decision = checkDestination(await destinationPolicyFor(sql, call.org_id, policyOptionsFor(carrier)), destination);
  if (!decision.ok) {
    countRefusal(services, decision.reason, 'transfer');
    const row = await insertTransfer(sql, { callId: call.id, orgId: call.org_id, mode: 'blind', destination, status: 'refused', reason: decision.reason });
    log.info({ call_id: call.id, org_id: call.org_id, reason: decision.reason }, 'blind transfer refused by the destination policy');
    return refused(decision.message, row.id);
  }
  const limits = await callLimitsOf(sql, call.org_id);
  if (limits && (await spendTodayCents(sql, call.org_id)) >= limits.daily_spend_cap_cents) {
    countRefusal(services, 'daily_spend_cap', 'transfer');
    return refused("the organisation's daily spending limit is reached");
  }
  // The carrier places the new leg on the platform's account (the REFER's target is dialled by the carrier):
  // the number's outbound rate, or the number in a sip: URI's user part; a SIP host alone has no rate here.
  const number = await callerNumber(sql, call.org_id, { number: (call.type === 'inbound' ? call.to_number : call.from_number) ?? '' });
  const ratedNumber = decision.number;
  const rate = ratedNumber && number && number.provider === carrier.name ? callRateCents(carrier, 'outbound', ratedNumber, rateTableFor(config)) : null;

  let row;
  try {
    row = await insertTransfer(sql, { callId: call.id, orgId: call.org_id, mode: 'blind', destination, status: 'ringing', reason: null, rateCentsPerMinute: rate });
  } catch (err) {
    if ((err as { code?: string }).code === '23505') return refused('a transfer is already under way');
    throw err;
  }
  // The caller: the room's SIP participant that is not a warm transfer's leg. Chosen here, not named by the worker.
  const participants = await livekit.rooms.listParticipants(call.room_name).catch(() => null);
  const caller = participants?.find((p) => p.kind === 3 /* ParticipantInfo_Kind.SIP */ && !p.identity.startsWith(transferIdentity('')));
  if (!caller) {
    await markNotAnswered(sql, row.id, { status: 'failed', sipStatus: null, reason: 'no_sip_participant' });
    return { transfer_id: row.id, status: 'failed', participant_identity: null, message: 'There is no phone line to transfer.' };
  }
  const to = /^(tel|sips?):/i.test(destination) ? destination : `tel:${destination}`;
  try {
    await livekit.sip.transferSipParticipant(call.room_name, caller.identity, to, { playDialtone: false });
  } catch (err) {
    const sipStatus = err instanceof SipCallError ? (err.sipStatusCode ?? null) : null;
    log.info({ call_id: call.id, transfer_id: row.id, sip_status: sipStatus, err: (err as Error).message }, 'blind transfer not accepted');
    await markNotAnswered(sql, row.id, { status: 'failed', sipStatus, reason: 'refer_failed' });
    return { transfer_id: row.id, status: 'failed', participant_identity: null, message: 'The transfer did not go through.' };
  }
  await markReferred(sql, row.id, config.BLIND_TRANSFER_RESERVED_MINUTES);
  log.info({ call_id: call.id, transfer_id: row.id }, 'blind transfer accepted');
  return { transfer_id: row.id, status: 'transferred', participant_identity: caller.identity, message: null };
}
