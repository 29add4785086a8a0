// The simulated carrier: the default when no carrier is configured, so a new install can buy a number and
// call it on the same machine. Its inventory is a Postgres table of fictional numbers (the ranges reserved
// for drama and documentation, per country; migration 040). Calls to its numbers come straight from a SIP
// user agent on loopback (or SIMULATED_CARRIER_SOURCE_ADDRESSES) into the SIP bridge.
import type { Sql } from 'postgres';
import {
  CarrierError,
  type AvailableNumber,
  type CarrierAdapter,
  type NumberSearch,
  type OutboundTermination,
  type PurchasedNumber,
  type SipIngress,
} from './types.ts';

export interface SimulatedCarrierOptions {
  sql: Sql;
  /** Where inbound calls come from (IPs or CIDRs); empty = any. */
  sourceAddresses: string[];
  /** host[:port] that plays the carrier's termination side for outbound calls. */
  terminationAddress: string;
  /** Cents per minute, by direction. */
  inboundRateCents: number;
  outboundRateCents: number;
}

/** Keypad letters, so `contains: "CAFE"` finds ...2233... as carriers' vanity search does. */
const KEYPAD: Record<string, string> = Object.fromEntries(
  Object.entries({ 2: 'ABC', 3: 'DEF', 4: 'GHI', 5: 'JKL', 6: 'MNO', 7: 'PQRS', 8: 'TUV', 9: 'WXYZ' }).flatMap(([d, ls]) => [...ls].map((l) => [l, d])),
);
export const keypadDigits = (s: string) => [...s.toUpperCase()].map((c) => KEYPAD[c] ?? c).join('');

interface Row {
  phone_number: string;
  country: string;
  region: string | null;
  locality: string | null;
  sms_capable: boolean;
}

export function createSimulatedCarrier(o: SimulatedCarrierOptions): CarrierAdapter {
  const { sql } = o;
  return {
    name: 'simulated',
    async search(q: NumberSearch): Promise<AvailableNumber[]> {
      const contains = q.contains ? `%${keypadDigits(q.contains)}%` : null;
      const rows = await sql<Row[]>`
        select phone_number, country, region, locality, sms_capable from simulated_numbers
        where purchased_at is null and country = ${q.country.toUpperCase()}
          ${q.area_code ? sql`and area_code = ${q.area_code}` : sql``}
          ${contains ? sql`and substr(phone_number, 2) like ${contains}` : sql``}
        order by phone_number limit ${q.limit}`;
      return rows.map((r) => ({ phone_number: r.phone_number, locality: r.locality, region: r.region, country: r.country, capabilities: { voice: true, sms: r.sms_capable } }));
    },
    async purchase(phoneNumber: string): Promise<PurchasedNumber> {
      const [row] = await sql<Row[]>`
        update simulated_numbers set purchased_at = now() where phone_number = ${phoneNumber} and purchased_at is null
        returning phone_number, country, region, locality, sms_capable`;
      if (!row) throw new CarrierError('number_unavailable', `${phoneNumber} is not available`);
      return { phone_number: row.phone_number, carrier_number_id: row.phone_number, sms_capable: row.sms_capable };
    },
    async findPurchased(phoneNumber: string): Promise<string | null> {
      const [row] = await sql<{ phone_number: string }[]>`select phone_number from simulated_numbers where phone_number = ${phoneNumber} and purchased_at is not null`;
      return row?.phone_number ?? null;
    },
    async release(carrierNumberId: string): Promise<void> {
      await sql`update simulated_numbers set purchased_at = null, ingress = null where phone_number = ${carrierNumberId}`;
    },
    async routeToIngress(carrierNumberId: string, ingress: SipIngress): Promise<void> {
      await sql`update simulated_numbers set ingress = ${`${ingress.transport}:${ingress.address}`} where phone_number = ${carrierNumberId}`;
    },
    async outboundTermination(): Promise<OutboundTermination> {
      return { address: o.terminationAddress, transport: 'udp' };
    },
    inboundSourceAddresses: () => [...o.sourceAddresses],
    ratePerMinuteCents: (direction) => (direction === 'inbound' ? o.inboundRateCents : o.outboundRateCents),
  };
}
