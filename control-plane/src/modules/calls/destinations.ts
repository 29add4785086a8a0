// The destination policy applied to an outbound call (POST /v1/calls, and again when its dial job runs: the
// policy may have changed since a scheduled call was created). The decision is shared/destination-policy.ts,
// the same one the worker applies to transfers.
import client from 'prom-client';
import type { Db } from '../../db/types.ts';
import type { Services } from '../../services.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { checkDestination } from '../../../../shared/destination-policy.ts';
import type { CarrierAdapter } from '../phone-numbers/carriers/types.ts';
import { destinationPolicyFor } from '../workspace/destination-policy.ts';
import { listedAmong } from '../do-not-call/queries.ts';

/** The simulated carrier's fictional ranges are real destinations only when it places the calls. */
export const policyOptionsFor = (carrier: Pick<CarrierAdapter, 'name'>) => ({ fictionalNumbers: carrier.name === 'simulated' });

/** The 422 item for a `to_number` the org may not call, or null when it may. */
export async function destinationProblem(db: Db, orgId: string, carrier: Pick<CarrierAdapter, 'name'>, toNumber: string): Promise<ValidationErrorItem | null> {
  const decision = checkDestination(await destinationPolicyFor(db, orgId, policyOptionsFor(carrier)), toNumber);
  if (decision.ok) return null;
  return {
    loc: ['body', 'to_number'],
    msg: decision.message,
    type: 'destination_not_allowed',
    input: toNumber,
    ctx: {
      reason: decision.reason,
      ...(decision.type ? { number_type: decision.type } : {}),
      ...(decision.country !== undefined ? { country: decision.country } : {}),
    },
  };
}

/** The 422 item for a `to_number` on the org's do-not-call list (/v1/do-not-call), or null. */
export async function doNotCallProblem(db: Db, orgId: string, toNumber: string): Promise<ValidationErrorItem | null> {
  if (!(await listedAmong(db, orgId, [toNumber])).size) return null;
  return { loc: ['body', 'to_number'], msg: "The number is on the organisation's do-not-call list (/v1/do-not-call)", type: 'do_not_call', input: toNumber };
}

const counters = new WeakMap<object, client.Counter<'reason' | 'stage'>>();

/**
 * Counts an outbound call refused for toll-fraud reasons (`vap_outbound_refusals_total`): a destination reason
 * (number_type, country, invalid_destination) or daily_spend_cap, at the API or at dial time (or a warm
 * transfer's second leg). A climbing count
 * for one org is worth a look at its audit log (docs/operations.md).
 */
export function countRefusal(services: Services, reason: string, stage: 'api' | 'dial' | 'transfer'): void {
  const registry = services.metrics.registry;
  let c = counters.get(registry);
  if (!c) {
    c = new client.Counter({
      name: 'vap_outbound_refusals_total',
      help: 'Outbound calls refused by the destination policy or the daily spend cap, by reason and stage',
      labelNames: ['reason', 'stage'],
      registers: [registry],
    });
    counters.set(registry, c);
  }
  c.inc({ reason, stage });
}
