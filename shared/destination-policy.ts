// Where an organisation may call: the one decision for outbound calls (control plane, POST /v1/calls and the
// dial job) and for transfers (the worker's transfer_call tool), so both refuse the same destinations with the
// same words. A number is classified with libphonenumber's full metadata (number type and country); a `sip:`
// destination by its host, its parameters (transport only, no headers) and the number in its user part, if any.
// Toll fraud pays through premium-rate, shared-cost and satellite ranges, and through numbers no one can
// classify, so those are blocked unless the operator unblocks them.
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

export type RefusalReason = 'invalid_destination' | 'number_type' | 'country' | 'sip_host' | 'sip_uri';

export type Decision =
  | { ok: true; kind: 'number'; number: string; country: string | null; type: NumberType }
  | { ok: true; kind: 'sip'; host: string; number?: string; country?: string | null; type?: NumberType }
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

/** The parts of a `sip:`/`sips:` URI: user part (percent-decoded), host (lower-cased, IPv6 brackets off), params, headers. */
export interface SipUri {
  user: string | null;
  host: string;
  params: { name: string; value: string | null }[];
  headers: string | null;
}

export function parseSipUri(uri: string): SipUri | null {
  const m = /^sips?:(?:([^@\s]*)@)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::\d{1,5})?((?:;[^;?\s]*)*)(?:\?(\S*))?$/i.exec(uri);
  if (!m) return null;
  let user: string | null = null;
  if (m[1] !== undefined) {
    // A user part may itself carry `;` parameters (RFC 3261 user=...;x): keep them in it, to be judged below.
    try {
      user = decodeURIComponent(m[1]);
    } catch {
      return null;
    }
  }
  const params = (m[3] ?? '')
    .split(';')
    .filter((p) => p !== '')
    .map((p) => {
      const eq = p.indexOf('=');
      return eq < 0 ? { name: p.toLowerCase(), value: null } : { name: p.slice(0, eq).toLowerCase(), value: p.slice(eq + 1) };
    });
  return { user, host: m[2]!.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, ''), params, headers: m[4] ?? null };
}

/** The host of a `sip:`/`sips:` URI, lower-cased (brackets of an IPv6 literal kept off), or null. */
export function sipHost(uri: string): string | null {
  return parseSipUri(uri)?.host ?? null;
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
  if (/^sips?:/i.test(destination)) return checkSipDestination(policy, destination);
  return checkNumber(policy, destination);
}

// Transports a SIP URI may ask for; every other parameter (maddr, user, method, lr...) and any header (`?Route=`)
// can send the INVITE elsewhere than the allowed host, or make the far end dial the user part as a number.
const SIP_TRANSPORTS = new Set(['udp', 'tcp', 'tls', 'ws', 'wss']);
// A user part a PBX would dial: digits with visual separators, maybe a leading `+`. Up to 6 digits with no `+` is
// an extension; more is a dial string the far end would send to the public network, and must be written as E.164.
const DIALLABLE = /^\+?[\d\-.()\s]+$/;
const MAX_EXTENSION_DIGITS = 6;

function checkSipDestination(policy: DestinationPolicy, destination: string): Decision {
  const uri = parseSipUri(destination);
  if (!uri) return { ok: false, reason: 'invalid_destination', message: 'The destination is not a valid SIP address' };
  const { host } = uri;
  if (uri.headers !== null) {
    return { ok: false, reason: 'sip_uri', host, message: 'SIP addresses with headers (?...) are not allowed: headers such as Route can send the call elsewhere' };
  }
  const bad = uri.params.find((p) => p.name !== 'transport' || p.value === null || !SIP_TRANSPORTS.has(p.value.toLowerCase()));
  if (bad) {
    return {
      ok: false,
      reason: 'sip_uri',
      host,
      message: `The SIP parameter ${bad.name} is not allowed: only transport (udp, tcp, tls, ws or wss) may be given`,
    };
  }
  if (!sipHostAllowed(host, policy.allowed_sip_hosts)) {
    return {
      ok: false,
      reason: 'sip_host',
      host,
      message: `Transfers to the SIP host ${host} are not allowed: it is not one of the workspace's allowed SIP hosts (destination_policy.allowed_sip_hosts)`,
    };
  }
  if (uri.user !== null && /[;?]/.test(uri.user)) {
    return { ok: false, reason: 'sip_uri', host, message: 'SIP user parts with parameters are not allowed' };
  }
  if (uri.user !== null && DIALLABLE.test(uri.user)) {
    const digits = uri.user.replace(/[-.()\s]/g, '');
    if (digits.startsWith('+')) {
      // The PBX would ring this number: it must pass the number policy, like a number given directly.
      const decision = checkNumber(policy, digits);
      if (!decision.ok) return { ...decision, host };
      return { ok: true, kind: 'sip', host, number: decision.number, country: decision.country, type: decision.type };
    }
    if (digits.length > MAX_EXTENSION_DIGITS) {
      return {
        ok: false,
        reason: 'invalid_destination',
        host,
        message: `The SIP user part ${uri.user} looks like a phone number without its country code: write it in E.164 (+ and the country code) so the destination policy can judge it`,
      };
    }
  }
  return { ok: true, kind: 'sip', host };
}

function checkNumber(policy: DestinationPolicy, destination: string): Decision {
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
