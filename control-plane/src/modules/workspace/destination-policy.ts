// The organisation's destination policy as the decision (shared/destination-policy.ts) needs it: its stored
// choices with the defaults filled in. Allowed countries default to the countries of the org's own numbers:
// a US business calls the US until it says otherwise, and a stolen key cannot ring the rest of the world.
// The org's own choices only narrow: countries beyond its numbers' and unblocking a default-blocked type are
// the operator's ceiling (admin set-destination-limits), applied here to every check and to PATCH /v1/workspace.
import type { Db } from '../../db/types.ts';
import { countryOfNumber, DEFAULT_BLOCKED_NUMBER_TYPES, type DestinationPolicy, type NumberType } from '../../../../shared/destination-policy.ts';
import { destinationPolicyOf, type DestinationPolicyRow } from './queries.ts';

export interface PolicyOptions {
  /** The simulated carrier places the calls: its fictional ranges are real destinations. */
  fictionalNumbers: boolean;
}

export interface DestinationCeiling {
  /** Countries of the org's own numbers. */
  own: string[];
  /** Every country the org may allow: its own numbers' and the operator's extra ones. */
  countries: Set<string>;
  /** Default-blocked types the operator has not let the org unblock: always blocked. */
  alwaysBlocked: NumberType[];
}

export function destinationCeiling(row: Pick<DestinationPolicyRow, 'numbers' | 'destination_extra_countries' | 'destination_unblockable_types'>): DestinationCeiling {
  const own = [...new Set(row.numbers.map((n) => n.country ?? countryOfNumber(n.phone_number)).filter((c): c is string => !!c))].sort();
  return {
    own,
    countries: new Set([...own, ...row.destination_extra_countries]),
    alwaysBlocked: DEFAULT_BLOCKED_NUMBER_TYPES.filter((t) => !row.destination_unblockable_types.includes(t)),
  };
}

export async function destinationCeilingFor(db: Db, orgId: string): Promise<DestinationCeiling> {
  const row = await destinationPolicyOf(db, orgId);
  if (!row) throw new Error(`destinationCeilingFor: unknown org ${orgId}`);
  return destinationCeiling(row);
}

export async function destinationPolicyFor(db: Db, orgId: string, opts: PolicyOptions): Promise<DestinationPolicy> {
  const row = await destinationPolicyOf(db, orgId);
  if (!row) throw new Error(`destinationPolicyFor: unknown org ${orgId}`);
  const ceiling = destinationCeiling(row);
  const chosen = row.destination_allowed_countries ?? ceiling.own;
  const blocked = (row.destination_blocked_number_types ?? [...DEFAULT_BLOCKED_NUMBER_TYPES]) as NumberType[];
  return {
    // A stored choice past the ceiling (set before the ceiling existed, or a number since released) is cut back.
    allowed_countries: chosen.filter((c) => ceiling.countries.has(c)),
    blocked_number_types: [...new Set([...blocked, ...ceiling.alwaysBlocked])],
    allowed_sip_hosts: row.destination_allowed_sip_hosts,
    fictional_numbers: opts.fictionalNumbers,
  };
}
