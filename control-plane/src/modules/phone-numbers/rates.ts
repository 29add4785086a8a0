// Carrier cost of phone calls. The per-minute rate is captured on the call when it is opened (inbound) or
// placed (outbound), in `calls.rate_cents_per_minute`; when the call ends, `finishCall` writes
// cost_cents = rate x billed minutes. Billed minutes are whole minutes rounded up, as carriers bill.
import type { CarrierAdapter } from './carriers/types.ts';

/** The rate to store on a phone call (null when the carrier publishes none). */
export function callRateCents(carrier: CarrierAdapter, direction: 'inbound' | 'outbound', phoneNumber: string): number | null {
  const rate = carrier.ratePerMinuteCents(direction, phoneNumber);
  return rate === null || !Number.isFinite(rate) || rate < 0 ? null : rate;
}

export const billedMinutes = (durationSeconds: number) => Math.ceil(Math.max(0, durationSeconds) / 60);

/** cost_cents of a call: rate x billed minutes, rounded up to a whole cent. */
export function callCostCents(rateCentsPerMinute: number | null, durationSeconds: number): number | null {
  if (rateCentsPerMinute === null) return null;
  return Math.ceil(rateCentsPerMinute * billedMinutes(durationSeconds));
}
