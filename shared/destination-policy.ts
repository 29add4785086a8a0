// Where an organisation may call: the one decision for outbound calls (control plane, POST /v1/calls and the
// dial job) and for transfers (the worker's transfer_call tool), so both refuse the same destinations with the
// same words. A number is classified with libphonenumber's full metadata (number type and country); a `sip:`
// destination is judged by its host alone. Toll fraud pays through premium-rate, shared-cost and satellite
// ranges, and through numbers no one can classify, so those are blocked unless the organisation unblocks them.
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

export const NUMBER_TYPES = [
  'fixed_line',
  'mobile',
  'fixed_line_or_mobile',
  'toll_free',
  'premium_rate',
  'shared_cost',
  'voip',
  'personal_number',
  'pager',
  'uan',
  'voicemail',
  'satellite',
  'unknown',
] as const;
export type NumberType = (typeof NUMBER_TYPES)[number];

/** Blocked when the organisation has not chosen its own list. */
export const DEFAULT_BLOCKED_NUMBER_TYPES: readonly NumberType[] = ['premium_rate', 'shared_cost', 'satellite', 'unknown'];

/** The country of numbers that belong to no country (satellite, international freephone...), as libphonenumber names it. */
export const NON_GEOGRAPHIC = '001';

export interface DestinationPolicy {
  /** ISO 3166-1 alpha-2 codes (and `001` for non-geographic numbers). */
  allowed_countries: string[];
  blocked_number_types: NumberType[];
  /** Host names a `sip:` transfer may go to; `*.example.com` also matches its subdomains. */
  allowed_sip_hosts: string[];
  /** The simulated carrier: its fictional ranges (555-01xx and the like) are ordinary fixed lines. */
  fictional_numbers: boolean;
}

export type RefusalReason = 'invalid_destination' | 'number_type' | 'country' | 'sip_host';

export type Decision =
  | { ok: true; kind: 'number'; number: string; country: string | null; type: NumberType }
  | { ok: true; kind: 'sip'; host: string }
  | { ok: false; reason: RefusalReason; message: string; country?: string | null; type?: NumberType; host?: string };

const E164 = /^\+[1-9]\d{1,14}$/;

// Satellite and international-network codes (ITU-T E.164 country codes for global services): 870 Inmarsat,
// 871-874 its former ocean regions, 881 global mobile satellite systems (Iridium, Globalstar...), 882
// international networks (Thuraya and others), billed at satellite rates. libphonenumber has no such type.
const SATELLITE = /^\+(87[0-4]|881|882)/;

// The simulated carrier's fictional ranges (the numbers of migration 040 and the ones tests dial): North
// American NXX-555-01xx and the unassigned area code 555, Ofcom's drama ranges, ACMA's, ARCEP's.
const FICTIONAL: { re: RegExp; country: string | null }[] = [
  { re: /^\+1555\d{7}$/, country: null },
  { re: /^\+1[2-9]\d\d55501\d\d$/, country: null },
  { re: /^\+442079460\d{3}$/, country: 'GB' },
  { re: /^\+441614960\d{3}$/, country: 'GB' },
  { re: /^\+6125550\d{4}$/, country: 'AU' },
  { re: /^\+6137010\d{4}$/, country: 'AU' },
  { re: /^\+3319900\d{4}$/, country: 'FR' },
];

export function isFictional(number: string): boolean {
  return FICTIONAL.some((f) => f.re.test(number));
}

/** Number type and country of an E.164 number (`unknown` and null when libphonenumber cannot place it). */
export function classifyNumber(number: string, opts: { fictional?: boolean } = {}): { country: string | null; type: NumberType } {
  if (!E164.test(number)) return { country: null, type: 'unknown' };
  if (opts.fictional) {
    const f = FICTIONAL.find((x) => x.re.test(number));
    // North American fiction: the area code's country when libphonenumber knows it (416 -> CA), else the US.
    if (f) return { country: f.country ?? parsePhoneNumberFromString(number)?.country ?? 'US', type: 'fixed_line' };
  }
  const parsed = parsePhoneNumberFromString(number);
  if (SATELLITE.test(number)) return { country: NON_GEOGRAPHIC, type: 'satellite' };
  if (!parsed || !parsed.isValid()) return { country: parsed?.country ?? null, type: 'unknown' };
  const type = (parsed.getType()?.toLowerCase() ?? 'unknown') as NumberType;
  return { country: parsed.country ?? NON_GEOGRAPHIC, type: NUMBER_TYPES.includes(type) ? type : 'unknown' };
}

/** The country of one of the organisation's own numbers (for the default allowed countries). */
export const countryOfNumber = (number: string) => classifyNumber(number, { fictional: true }).country;

const TYPE_WORDS: Record<NumberType, string> = {
  fixed_line: 'fixed-line numbers',
  mobile: 'mobile numbers',
  fixed_line_or_mobile: 'fixed-line and mobile numbers',
  toll_free: 'toll-free numbers',
  premium_rate: 'premium-rate numbers',
  shared_cost: 'shared-cost numbers',
  voip: 'VoIP numbers',
  personal_number: 'personal numbers',
  pager: 'pagers',
  uan: 'universal access numbers',
  voicemail: 'voicemail access numbers',
  satellite: 'satellite numbers',
  unknown: 'invalid or unrecognised numbers',
};

/** The host of a `sip:`/`sips:` URI, lower-cased (brackets of an IPv6 literal kept off), or null. */
export function sipHost(uri: string): string | null {
  const m = /^sips?:(?:[^@\s]*@)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::\d{1,5})?(?:[;?].*)?$/i.exec(uri);
  if (!m) return null;
  return m[1]!.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
}

export function sipHostAllowed(host: string, allowed: string[]): boolean {
  return allowed.some((a) => {
    const pattern = a.toLowerCase();
    return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1 : host === pattern;
  });
}

/**
 * Whether the organisation may call `destination`: an E.164 number (outbound calls, transfers), `tel:` + one,
 * or a `sip:` URI (transfers). The refusal's message is a sentence for an API body and for the agent to say.
 */
export function checkDestination(policy: DestinationPolicy, destination: string): Decision {
  if (/^sips?:/i.test(destination)) {
    const host = sipHost(destination);
    if (!host) return { ok: false, reason: 'invalid_destination', message: 'The destination is not a valid SIP address' };
    if (!sipHostAllowed(host, policy.allowed_sip_hosts)) {
      return {
        ok: false,
        reason: 'sip_host',
        host,
        message: `Transfers to the SIP host ${host} are not allowed: it is not one of the workspace's allowed SIP hosts (destination_policy.allowed_sip_hosts)`,
      };
    }
    return { ok: true, kind: 'sip', host };
  }
  const number = destination.replace(/^tel:/i, '');
  if (!E164.test(number)) return { ok: false, reason: 'invalid_destination', message: 'The destination is not an E.164 phone number' };
  const { country, type } = classifyNumber(number, { fictional: policy.fictional_numbers });
  if (policy.blocked_number_types.includes(type)) {
    return {
      ok: false,
      reason: 'number_type',
      country,
      type,
      message: `Calls to ${TYPE_WORDS[type]} are blocked by the workspace's destination policy (destination_policy.blocked_number_types has ${type})`,
    };
  }
  if (!country || !policy.allowed_countries.includes(country)) {
    const where = !country ? 'no known country' : country === NON_GEOGRAPHIC ? 'no country (a global service)' : country;
    const allowed = policy.allowed_countries.length ? policy.allowed_countries.join(', ') : 'none';
    return {
      ok: false,
      reason: 'country',
      country,
      type,
      message: `Calls to numbers in ${where} are not allowed by the workspace's destination policy (destination_policy.allowed_countries: ${allowed})`,
    };
  }
  return { ok: true, kind: 'number', number, country, type };
}
