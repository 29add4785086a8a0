// Phone numbers: the resource view, purchase (one unit of work, undone completely on failure), release, and
// the mapping of carrier failures to API errors.
import { randomUUID } from 'node:crypto';
import type { Services } from '../../services.ts';
import type { Auth } from '../../auth/service.ts';
import { conflict, HttpError, ValidationFailure } from '../../http/errors.ts';
import { checkReferences, referenceError, type Reference } from '../../http/references.ts';
import type { Db } from '../../db/types.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { findCallTarget, targetProblems, type TargetIds } from '../squads/target.ts';
import { writeAudit } from '../audit-events/queries.ts';
import type { InboundRouting, InboundRoutingInput, PurchasePhoneNumber } from '../../../../schemas/phone-numbers.ts';
import { CarrierError, carrierFor } from './carriers/index.ts';
import { insertPurchasing, setWiring, type PhoneNumberRow } from './queries.ts';
import { unwireNumber, wireNumber } from './wiring.ts';
import { checkPin } from '../agent-versions/call-version.ts';

export function phoneNumberView(row: PhoneNumberRow) {
  return {
    id: row.id,
    phone_number: row.phone_number,
    friendly_name: row.friendly_name,
    provider: row.provider,
    agent_id: row.agent_id,
    agent_version: row.agent_version ?? null,
    squad_id: row.squad_id ?? null,
    status: row.status,
    inbound_trunk_id: row.inbound_trunk_id,
    outbound_trunk_id: row.outbound_trunk_id,
    dispatch_rule_id: row.dispatch_rule_id,
    inbound_routing: row.inbound_routing ? { ...row.inbound_routing, squad_id: row.inbound_routing.squad_id ?? null } : null,
    sms_capable: row.sms_capable,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Carrier failures as API errors: never a 500 (see docs/decisions/016-phone-numbers-and-inbound-calls.md). */
export function carrierHttpError(err: CarrierError, phoneNumber?: string | null): HttpError | ValidationFailure {
  switch (err.code) {
    case 'number_unavailable':
      return conflict(phoneNumber ? `${phoneNumber} is not available; search for another number` : 'No available number matches; widen the search', {
        reason: 'number_unavailable',
      });
    case 'invalid_request':
      return new ValidationFailure([{ loc: ['body', phoneNumber ? 'phone_number' : 'country'], msg: `The carrier refused the request: ${err.message}`, type: 'carrier_rejected' }]);
    case 'rate_limited':
      return new HttpError(503, 'service_unavailable', 'The phone carrier is busy; try again shortly', {
        headers: { 'Retry-After': String(err.retryAfterSeconds ?? 5) },
        extra: { reason: 'carrier_rate_limited', retry_after_seconds: err.retryAfterSeconds ?? 5 },
      });
    case 'unauthorized':
    case 'unavailable':
    default:
      return new HttpError(503, 'service_unavailable', 'The phone carrier is unavailable; nothing was bought, try again later', {
        headers: { 'Retry-After': '30' },
        extra: { reason: 'carrier_unavailable' },
      });
  }
}

/** Routing input -> stored routing (every key present, nulls for the unset). Setting one target clears the other. */
export function normaliseRouting(input: InboundRoutingInput | null | undefined, cur: InboundRouting | null = null): InboundRouting | null {
  if (input === undefined) return cur;
  if (input === null) return null;
  const keep = <K extends 'agent_id' | 'squad_id' | 'fallback' | 'voicemail_message'>(k: K) => (input[k] !== undefined ? input[k] : (cur?.[k] ?? null)) as InboundRouting[K];
  const next: InboundRouting = {
    agent_id: input.squad_id ? null : keep('agent_id'),
    squad_id: input.agent_id ? null : keep('squad_id'),
    // Stored with the one target it names.
    fallback: input.fallback ? (input.fallback.squad_id ? { squad_id: input.fallback.squad_id } : { agent_id: input.fallback.agent_id! }) : keep('fallback'),
    voicemail_message: keep('voicemail_message'),
  };
  return next.agent_id === null && next.squad_id === null && next.fallback === null && next.voicemail_message === null ? null : next;
}

/** Problems of routing input the schema cannot say: both targets at once; a fallback with neither or both. */
export function routingProblems(routing: InboundRoutingInput | null | undefined, at: (string | number)[]): ValidationErrorItem[] {
  if (!routing) return [];
  return [...targetProblems(routing, at, false), ...(routing.fallback ? targetProblems(routing.fallback, [...at, 'fallback'], true) : [])];
}

/** The agents and squads a target's ids name (checked as the organisation's, live). */
export function targetReferences(ids: TargetIds, at: (string | number)[]): Reference[] {
  const refs: Reference[] = [];
  if (ids.agent_id) refs.push({ loc: [...at, 'agent_id'], table: 'agents', what: 'agent', ids: ids.agent_id });
  if (ids.squad_id) refs.push({ loc: [...at, 'squad_id'], table: 'squads', what: 'squad', ids: ids.squad_id });
  return refs;
}

export function routingReferences(routing: InboundRoutingInput | null | undefined, at: (string | number)[]): Reference[] {
  if (!routing) return [];
  return [...targetReferences(routing, at), ...(routing.fallback ? targetReferences(routing.fallback, [...at, 'fallback']) : [])];
}

/**
 * The number's own target from a body's `agent_id` xor `squad_id`: the agent, or the squad and its entry agent
 * (a squad's number keeps its entry agent in `agent_id`). Another organisation's is a 422 at the field.
 */
export async function numberTarget(db: Db, orgId: string, ids: TargetIds): Promise<{ agent_id: string; squad_id: string | null }> {
  const target = await findCallTarget(db, orgId, ids);
  if (!target) {
    const field = ids.agent_id ? 'agent_id' : 'squad_id';
    throw new ValidationFailure([referenceError(['body', field], field === 'agent_id' ? 'agent' : 'squad', ids[field])]);
  }
  return { agent_id: target.agent.id, squad_id: target.squad?.id ?? null };
}

/**
 * POST /v1/phone-numbers. The row is recorded first ('purchasing', so a crash can never leave a number bought
 * but unrecorded), then the carrier sells it, then LiveKit is wired. Any failure undoes every step done.
 */
export async function purchaseNumber(services: Services, auth: Auth, body: PurchasePhoneNumber, meta: { requestId: string; ip: string | null }) {
  const carrier = carrierFor(services);
  const country = (body.country ?? 'US').toUpperCase();
  if (body.area_code && country !== 'US' && country !== 'CA') {
    throw new ValidationFailure([{ loc: ['body', 'area_code'], msg: 'area_code applies to US and CA numbers only', type: 'value_error', input: body.area_code }]);
  }
  const problems = [...targetProblems(body, ['body'], true), ...routingProblems(body.inbound_routing, ['body', 'inbound_routing'])];
  if (problems.length) throw new ValidationFailure(problems);
  await checkReferences(services.sql, auth.orgId, [...targetReferences(body, ['body']), ...routingReferences(body.inbound_routing, ['body', 'inbound_routing'])]);
  const target = await numberTarget(services.sql, auth.orgId, body);

  let phoneNumber = body.phone_number ?? null;
  if (!phoneNumber) {
    let found;
    try {
      found = await carrier.search({ country, area_code: body.area_code ?? null, contains: body.contains ?? null, limit: 1 });
    } catch (err) {
      if (err instanceof CarrierError) throw carrierHttpError(err);
      throw err;
    }
    if (!found[0]) throw conflict('No available number matches country, area_code and contains; widen the search', { reason: 'number_unavailable' });
    phoneNumber = found[0].phone_number;
  }

  const id = randomUUID();
  const row = await insertPurchasing(services.sql, {
    id,
    org_id: auth.orgId,
    phone_number: phoneNumber,
    friendly_name: body.friendly_name ?? null,
    provider: carrier.name,
    agent_id: target.agent_id,
    squad_id: target.squad_id,
    inbound_routing: normaliseRouting(body.inbound_routing),
    country,
  });
  if (!row) throw conflict(`${phoneNumber} is already taken`, { reason: 'number_unavailable' });

  let wired: PhoneNumberRow;
  try {
    const bought = await carrier.purchase(phoneNumber, { friendlyName: body.friendly_name ?? null });
    const withCarrier = await setWiring(services.sql, id, { carrier_number_id: bought.carrier_number_id, sms_capable: bought.sms_capable, wiring_state: 'wiring' });
    wired = await wireNumber(services, withCarrier, carrier);
  } catch (err) {
    services.log.warn({ err, phone_number_id: id, phone_number: phoneNumber }, 'purchase failed; undoing');
    await setWiring(services.sql, id, { wiring_error: String((err as Error)?.message ?? err).slice(0, 500) }).catch(() => {});
    try {
      await unwireNumber(services, id, carrier);
    } catch (undoErr) {
      // Left 'releasing': the repair job finishes the undo.
      services.log.error({ err: undoErr, phone_number_id: id }, 'undoing a failed purchase failed; the repair job will finish it');
    }
    if (err instanceof CarrierError) throw carrierHttpError(err, body.phone_number ?? phoneNumber);
    throw new HttpError(503, 'service_unavailable', 'The telephony service is unavailable; nothing was bought, try again later', {
      headers: { 'Retry-After': '30' },
      extra: { reason: 'sip_unavailable' },
    });
  }
  await writeAudit(services.sql, {
    orgId: auth.orgId,
    actorType: auth.actorType,
    actorId: auth.actorId,
    action: 'phone_number.purchase',
    resourceType: 'phone_number',
    resourceId: id,
    requestId: meta.requestId,
    ip: meta.ip,
    details: { phone_number: phoneNumber, agent_id: target.agent_id, ...(target.squad_id ? { squad_id: target.squad_id } : {}) },
  });
  services.log.info({ phone_number_id: id, phone_number: phoneNumber }, 'phone number purchased and wired');
  return wired;
}

/** DELETE: the number leaves the API at once; LiveKit objects and the carrier are released now, or by the repair job. */
export async function releaseNumber(services: Services, row: PhoneNumberRow): Promise<void> {
  try {
    await unwireNumber(services, row.id);
  } catch (err) {
    services.log.warn({ err, phone_number_id: row.id }, 'release unfinished; the repair job retries it');
  }
}

/**
 * The number's version pin after a PATCH: a given pin must be a version of the number's agent (after the PATCH)
 * and the number must route to that one agent, not a squad (422 at agent_version); a new target without a pin
 * clears it (the old pin named a version of another agent). Empty when nothing changes.
 */
export async function numberPin(
  db: Db,
  orgId: string,
  cur: PhoneNumberRow,
  target: { agent_id?: string; squad_id?: string | null },
  version: number | null | undefined,
): Promise<{ agent_version?: number | null }> {
  const retargeted = target.agent_id !== undefined;
  if (version === undefined) return retargeted && cur.agent_version != null ? { agent_version: null } : {};
  if (version === null) return { agent_version: null };
  const squad = retargeted ? target.squad_id : cur.squad_id;
  if (squad) throw new ValidationFailure([{ loc: ['body', 'agent_version'], msg: "A squad's number follows its agents' published versions; a version is pinned on a number routed to one agent", type: 'value_error', input: version }]);
  await checkPin(db, orgId, target.agent_id ?? cur.agent_id, version, ['body', 'agent_version']);
  return { agent_version: version };
}
