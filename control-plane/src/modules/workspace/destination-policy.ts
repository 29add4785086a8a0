// The organisation's destination policy as the decision (shared/destination-policy.ts) needs it: its stored
// choices with the defaults filled in. Allowed countries default to the countries of the org's own numbers:
// a US business calls the US until it says otherwise, and a stolen key cannot ring the rest of the world.
import type { Db } from '../../db/types.ts';
import { countryOfNumber, DEFAULT_BLOCKED_NUMBER_TYPES, type DestinationPolicy, type NumberType } from '../../../../shared/destination-policy.ts';
import { destinationPolicyOf } from './queries.ts';

export interface PolicyOptions {
  /** The simulated carrier places the calls: its fictional ranges are real destinations. */
  fictionalNumbers: boolean;
}

export async function destinationPolicyFor(db: Db, orgId: string, opts: PolicyOptions): Promise<DestinationPolicy> {
  const row = await destinationPolicyOf(db, orgId);
  if (!row) throw new Error(`destinationPolicyFor: unknown org ${orgId}`);
  const own = row.numbers.map((n) => n.country ?? countryOfNumber(n.phone_number)).filter((c): c is string => !!c);
  return {
    allowed_countries: row.destination_allowed_countries ?? [...new Set(own)].sort(),
    blocked_number_types: (row.destination_blocked_number_types ?? [...DEFAULT_BLOCKED_NUMBER_TYPES]) as NumberType[],
    allowed_sip_hosts: row.destination_allowed_sip_hosts,
    fictional_numbers: opts.fictionalNumbers,
  };
}
