// The one interface every carrier adapter implements. The carrier is internal: customers never see its
// name, credentials or trunk settings. Adapters are chosen by CARRIER (simulated | twilio | telnyx).

export interface AvailableNumber {
  /** E.164, e.g. +15550100. */
  phone_number: string;
  locality: string | null;
  region: string | null;
  /** ISO 3166-1 alpha-2. */
  country: string;
  capabilities: { voice: boolean; sms: boolean };
}

export interface NumberSearch {
  country: string;
  area_code?: string | null;
  contains?: string | null;
  limit: number;
}

export interface PurchasedNumber {
  phone_number: string;
  /** The carrier's own id of the number (Twilio's PN sid, Telnyx's number id, the simulated row id). */
  carrier_number_id: string;
  sms_capable: boolean;
}

/** Where the carrier sends calls for our numbers: the platform's SIP ingress (the LiveKit SIP bridge). */
export interface SipIngress {
  /** Host or IP and port, e.g. sip.example.com:5060. */
  address: string;
  transport: 'udp' | 'tcp' | 'tls';
}

/** How LiveKit reaches the carrier for outbound calls from a number (an outbound SIP trunk). */
export interface OutboundTermination {
  /** SIP address of the carrier's termination endpoint (host[:port]). */
  address: string;
  transport: 'udp' | 'tcp' | 'tls';
  auth_username?: string;
  auth_password?: string;
}

export interface CarrierAdapter {
  /** Internal name, stored on the phone number as `provider`. */
  readonly name: 'simulated' | 'twilio' | 'telnyx';
  search(q: NumberSearch): Promise<AvailableNumber[]>;
  /** Buys the number. Throws CarrierError('number_unavailable') when it is taken. */
  purchase(phoneNumber: string, opts: { friendlyName?: string | null }): Promise<PurchasedNumber>;
  /**
   * The carrier's id of a number this platform holds, or null. Optional: lets the repair job undo a purchase
   * that crashed before the carrier's id was recorded.
   */
  findPurchased?(phoneNumber: string): Promise<string | null>;
  /** Releases a number bought earlier. Releasing one that is already gone succeeds (idempotent). */
  release(carrierNumberId: string): Promise<void>;
  /** Points the number's inbound calls at our SIP ingress. Idempotent. */
  routeToIngress(carrierNumberId: string, ingress: SipIngress): Promise<void>;
  /** Outbound termination settings for calls placed from this number. */
  outboundTermination(phoneNumber: string): Promise<OutboundTermination>;
  /** Source addresses (IPs or CIDRs) the carrier's inbound calls come from; empty = any. */
  inboundSourceAddresses(): string[];
  /** Per-minute rate in cents for `cost_cents`, or null when the carrier gives none. */
  ratePerMinuteCents(direction: 'inbound' | 'outbound', phoneNumber: string): number | null;
}

export type CarrierErrorCode =
  | 'number_unavailable' // taken, or not in the carrier's inventory: 409
  | 'invalid_request' // the carrier refused the request's content: 422
  | 'unauthorized' // platform credentials wrong: 503 (operator problem, not the customer's)
  | 'rate_limited' // 503 with Retry-After
  | 'unavailable'; // carrier down, timeout, 5xx: 503

/** A carrier failure with a code the API maps to a clear status. Never surfaces as a 500. */
export class CarrierError extends Error {
  readonly code: CarrierErrorCode;
  readonly carrierStatus: number | null;
  readonly retryAfterSeconds: number | null;
  constructor(code: CarrierErrorCode, message: string, opts: { carrierStatus?: number | null; retryAfterSeconds?: number | null; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'CarrierError';
    this.code = code;
    this.carrierStatus = opts.carrierStatus ?? null;
    this.retryAfterSeconds = opts.retryAfterSeconds ?? null;
  }
}
