// Twilio: numbers through the REST API (2010-04-01: AvailablePhoneNumbers, IncomingPhoneNumbers) and calls
// through Elastic SIP Trunking (trunking v1): one platform trunk whose Origination URL is our SIP ingress,
// every number attached to it, and its termination domain <name>.pstn.twilio.com with a credential list for
// outbound calls. Basic auth (account SID + auth token), form-encoded bodies, JSON answers, errors as
// {code, message, more_info, status}.
import { createHmac } from 'node:crypto';
import type client from 'prom-client';
import type { Logger } from '../../../../../shared/logger.ts';
import type { Config } from '../../../config.ts';
import { createCarrierHttp, isAmbiguous, parseAddressList, type CarrierResponse, type ErrorBodyMapper } from './http.ts';
import { CarrierError, type AvailableNumber, type CarrierAdapter, type NumberSearch, type OutboundTermination, type PurchasedNumber, type SipIngress } from './types.ts';

/**
 * Twilio's documented SIP signalling ranges for Elastic SIP Trunking (North America Virginia and Oregon,
 * Europe Ireland and Frankfurt, Asia Pacific Tokyo, Singapore and Sydney, South America São Paulo). Calls
 * from any of the edges may arrive, so all are allowed.
 */
export const TWILIO_SIGNALING_RANGES: readonly string[] = [
  '54.172.60.0/30',
  '54.244.51.0/30',
  '54.171.127.192/30',
  '35.156.191.128/30',
  '54.65.63.192/30',
  '54.169.127.128/30',
  '54.252.254.64/30',
  '177.71.206.192/30',
];

/** Per-minute defaults in cents (US local, origination and termination list prices); override by config. */
export const TWILIO_DEFAULT_RATES = { inbound: 0.34, outbound: 0.47 } as const;

export interface TwilioCarrierOptions {
  accountSid: string;
  authToken: string;
  /** Default https://api.twilio.com (paths carry /2010-04-01). */
  apiBaseUrl?: string;
  /** Default https://trunking.twilio.com (paths carry /v1). */
  trunkingBaseUrl?: string;
  /** Use this trunk (TK...) instead of finding or creating one by name. */
  trunkSid?: string | null;
  /** FriendlyName of the platform trunk, found or created on first use. */
  trunkName?: string;
  /** Termination domain of a created trunk; default vap-<account sid tail>.pstn.twilio.com (globally unique). */
  terminationDomain?: string | null;
  terminationTransport?: 'udp' | 'tcp' | 'tls';
  /** Termination credentials (LiveKit's outbound trunk uses them); derived from the auth token when unset. */
  sipUsername?: string | null;
  sipPassword?: string | null;
  /** Addresses Twilio's inbound INVITEs come from; default TWILIO_SIGNALING_RANGES. */
  sourceAddresses?: readonly string[];
  inboundRateCents?: number;
  outboundRateCents?: number;
  timeoutMs?: number;
  logger?: Logger;
  registry?: client.Registry;
}

interface TwilioTrunk {
  sid: string;
  friendly_name: string | null;
  domain_name: string | null;
}

// Twilio error codes that mean "this number can't be bought": not available, none found, not in inventory.
const UNAVAILABLE_CODES = new Set([21422, 21452, 21450, 21451]);

const mapTwilioError: ErrorBodyMapper = (status, body) => {
  const b = (body ?? {}) as { code?: unknown; message?: unknown; more_info?: unknown };
  const code = typeof b.code === 'number' ? b.code : null;
  const message = typeof b.message === 'string' ? `${b.message}${code ? ` (${code})` : ''}` : `answered ${status}`;
  if (code !== null && UNAVAILABLE_CODES.has(code)) return { code: 'number_unavailable', message };
  return { message };
};

/** A stable secret derived from the auth token, so restarts agree on the termination credentials. */
function derive(token: string, label: string): string {
  return createHmac('sha256', token).update(`vap:${label}`).digest('base64url');
}

/** The adapter, plus `findPurchased` (repair of a purchase that crashed before its id was recorded) and `close`. */
export type TwilioCarrier = CarrierAdapter & { findPurchased(phoneNumber: string): Promise<string | null>; close(): Promise<void> };

export function createTwilioCarrier(opts: TwilioCarrierOptions): TwilioCarrier {
  if (!opts.accountSid || !opts.authToken) throw new Error('twilio carrier: accountSid and authToken are required');
  const api = `${(opts.apiBaseUrl ?? 'https://api.twilio.com').replace(/\/+$/, '')}/2010-04-01/Accounts/${encodeURIComponent(opts.accountSid)}`;
  const trunking = `${(opts.trunkingBaseUrl ?? 'https://trunking.twilio.com').replace(/\/+$/, '')}/v1`;
  const http = createCarrierHttp({ carrier: 'twilio', timeoutMs: opts.timeoutMs ?? 10_000, logger: opts.logger, registry: opts.registry });
  const auth = `Basic ${Buffer.from(`${opts.accountSid}:${opts.authToken}`).toString('base64')}`;
  const trunkName = opts.trunkName ?? 'vap';
  const sipUsername = opts.sipUsername || `vap${derive(opts.authToken, 'user').replace(/[^A-Za-z0-9]/g, '').slice(0, 20)}`;
  // Twilio wants 12+ characters with upper, lower and a digit: the suffix guarantees the classes.
  const sipPassword = opts.sipPassword || `${derive(opts.authToken, 'password').slice(0, 28)}Aa1`;
  const transport = opts.terminationTransport ?? 'udp';
  const rates = { inbound: opts.inboundRateCents ?? TWILIO_DEFAULT_RATES.inbound, outbound: opts.outboundRateCents ?? TWILIO_DEFAULT_RATES.outbound };
  const sources = [...(opts.sourceAddresses ?? TWILIO_SIGNALING_RANGES)];

  const call = (operation: string, method: 'GET' | 'POST' | 'DELETE', url: string, form?: Record<string, string | number | boolean | null | undefined>, accept?: number[]): Promise<CarrierResponse> => {
    const headers: Record<string, string> = { authorization: auth };
    let body: string | undefined;
    if (form) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(form)) if (v !== undefined && v !== null) params.set(k, String(v));
      body = params.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    return http.send({ operation, method, url, headers, body, accept }, mapTwilioError);
  };

  const query = (params: Record<string, string | number | boolean | null | undefined>): string => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    const s = q.toString();
    return s ? `?${s}` : '';
  };

  // The platform trunk, found or created once per process; a failure is not cached, so the next call retries.
  let trunkPromise: Promise<TwilioTrunk> | null = null;
  function trunk(): Promise<TwilioTrunk> {
    trunkPromise ??= findOrCreateTrunk().catch((err: unknown) => {
      trunkPromise = null;
      throw err;
    });
    return trunkPromise;
  }

  const domain = opts.terminationDomain ?? `vap-${opts.accountSid.slice(-10).toLowerCase()}.pstn.twilio.com`;

  async function findTrunkByName(): Promise<TwilioTrunk | null> {
    let url: string | null = `${trunking}/Trunks?PageSize=100`;
    while (url) {
      const page = (await call('trunk.list', 'GET', url)).body as { trunks?: TwilioTrunk[]; meta?: { next_page_url?: string | null } };
      const found = page.trunks?.find((t) => t.friendly_name === trunkName);
      if (found) return found;
      // Follow the page link on our configured host only: the credentials never go where a body points.
      const next = page.meta?.next_page_url ? new URL(page.meta.next_page_url, trunking) : null;
      url = next ? `${new URL(trunking).origin}${next.pathname}${next.search}` : null;
    }
    return null;
  }

  async function findOrCreateTrunk(): Promise<TwilioTrunk> {
    let found: TwilioTrunk | null = null;
    if (opts.trunkSid) {
      found = (await call('trunk.fetch', 'GET', `${trunking}/Trunks/${encodeURIComponent(opts.trunkSid)}`)).body as TwilioTrunk;
    } else {
      found = await findTrunkByName();
    }
    if (!found) {
      try {
        return (await call('trunk.create', 'POST', `${trunking}/Trunks`, { FriendlyName: trunkName, DomainName: domain })).body as TwilioTrunk;
      } catch (err) {
        // Another replica created it first (the domain name is unique at Twilio, so ours was refused): use theirs.
        const theirs = err instanceof CarrierError && err.code === 'invalid_request' ? await findTrunkByName() : null;
        if (!theirs) throw err;
        return theirs;
      }
    }
    // A trunk made by hand may have no termination domain yet: outbound calls need one.
    if (!found.domain_name) return (await call('trunk.update', 'POST', `${trunking}/Trunks/${found.sid}`, { DomainName: domain })).body as TwilioTrunk;
    return found;
  }

  // Termination credentials: a credential list holding our one user, attached to the trunk. Idempotent.
  let terminationPromise: Promise<void> | null = null;
  function termination(tk: TwilioTrunk): Promise<void> {
    terminationPromise ??= ensureTermination(tk).catch((err: unknown) => {
      terminationPromise = null;
      throw err;
    });
    return terminationPromise;
  }

  async function ensureTermination(tk: TwilioTrunk): Promise<void> {
    const listName = `${trunkName}-termination`;
    const lists = await call('credential_list.list', 'GET', `${api}/SIP/CredentialLists.json?PageSize=1000`);
    let cl = (lists.body as { credential_lists?: { sid: string; friendly_name: string }[] }).credential_lists?.find((l) => l.friendly_name === listName);
    if (!cl) cl = (await call('credential_list.create', 'POST', `${api}/SIP/CredentialLists.json`, { FriendlyName: listName })).body as { sid: string; friendly_name: string };
    const creds = await call('credential.list', 'GET', `${api}/SIP/CredentialLists/${cl.sid}/Credentials.json?PageSize=1000`);
    const existing = (creds.body as { credentials?: { sid: string; username: string }[] }).credentials?.find((c) => c.username === sipUsername);
    if (existing) {
      // The password may have been changed by configuration: set it again (Twilio never returns it).
      await call('credential.update', 'POST', `${api}/SIP/CredentialLists/${cl.sid}/Credentials/${existing.sid}.json`, { Password: sipPassword });
    } else {
      await call('credential.create', 'POST', `${api}/SIP/CredentialLists/${cl.sid}/Credentials.json`, { Username: sipUsername, Password: sipPassword });
    }
    const attached = await call('trunk.credential_list.fetch', 'GET', `${trunking}/Trunks/${tk.sid}/CredentialLists/${cl.sid}`, undefined, [404]);
    if (attached.status === 404) await call('trunk.credential_list.attach', 'POST', `${trunking}/Trunks/${tk.sid}/CredentialLists`, { CredentialListSid: cl.sid });
  }

  async function findOwned(phoneNumber: string): Promise<{ sid: string; phone_number: string; capabilities?: Record<string, boolean> } | null> {
    const res = await call('number.lookup', 'GET', `${api}/IncomingPhoneNumbers.json${query({ PhoneNumber: phoneNumber })}`);
    const list = (res.body as { incoming_phone_numbers?: { sid: string; phone_number: string; capabilities?: Record<string, boolean> }[] }).incoming_phone_numbers ?? [];
    return list.find((n) => n.phone_number === phoneNumber) ?? null;
  }

  const smsOf = (caps: Record<string, boolean> | undefined): boolean => Boolean(caps?.sms ?? caps?.SMS);

  return {
    name: 'twilio',

    async search(q: NumberSearch): Promise<AvailableNumber[]> {
      const country = q.country.toUpperCase();
      const url = `${api}/AvailablePhoneNumbers/${encodeURIComponent(country)}/Local.json${query({ AreaCode: q.area_code, Contains: q.contains, VoiceEnabled: true, PageSize: q.limit })}`;
      // 404: Twilio has no inventory for this country. That is an empty answer, not an error.
      const res = await call('search', 'GET', url, undefined, [404]);
      if (res.status === 404) return [];
      const list = (res.body as { available_phone_numbers?: Record<string, unknown>[] }).available_phone_numbers ?? [];
      return list.slice(0, q.limit).map((n) => {
        const caps = (n.capabilities ?? {}) as Record<string, boolean>;
        return {
          phone_number: String(n.phone_number),
          locality: typeof n.locality === 'string' && n.locality ? n.locality : null,
          region: typeof n.region === 'string' && n.region ? n.region : null,
          country: typeof n.iso_country === 'string' ? n.iso_country : country,
          capabilities: { voice: Boolean(caps.voice), sms: smsOf(caps) },
        };
      });
    },

    async purchase(phoneNumber: string, o: { friendlyName?: string | null }): Promise<PurchasedNumber> {
      try {
        const res = await call('purchase', 'POST', `${api}/IncomingPhoneNumbers.json`, { PhoneNumber: phoneNumber, FriendlyName: o.friendlyName?.slice(0, 64) });
        const n = res.body as { sid: string; phone_number: string; capabilities?: Record<string, boolean> };
        return { phone_number: n.phone_number, carrier_number_id: n.sid, sms_capable: smsOf(n.capabilities) };
      } catch (err) {
        // A timeout or a 5xx leaves the outcome unknown: the number may be ours now. Ask, so that a number
        // bought is always returned (and so recorded, or released by the caller) rather than orphaned.
        if (!isAmbiguous(err)) throw err;
        let owned: Awaited<ReturnType<typeof findOwned>> = null;
        try {
          owned = await findOwned(phoneNumber);
        } catch {
          throw err;
        }
        if (!owned) throw err;
        opts.logger?.info({ carrier: 'twilio', carrier_number_id: owned.sid }, 'carrier purchase confirmed after an ambiguous failure');
        return { phone_number: owned.phone_number, carrier_number_id: owned.sid, sms_capable: smsOf(owned.capabilities) };
      }
    },

    async findPurchased(phoneNumber: string): Promise<string | null> {
      return (await findOwned(phoneNumber))?.sid ?? null;
    },

    async release(carrierNumberId: string): Promise<void> {
      // 404: already released (or never completed). Releasing is idempotent.
      await call('release', 'DELETE', `${api}/IncomingPhoneNumbers/${encodeURIComponent(carrierNumberId)}.json`, undefined, [404]);
    },

    async routeToIngress(carrierNumberId: string, ingress: SipIngress): Promise<void> {
      const tk = await trunk();
      const sipUrl = `sip:${ingress.address};transport=${ingress.transport}`;
      const originationName = `${trunkName}-ingress`;
      const res = await call('trunk.origination.list', 'GET', `${trunking}/Trunks/${tk.sid}/OriginationUrls?PageSize=100`);
      const urls = (res.body as { origination_urls?: { sid: string; friendly_name: string; sip_url: string }[] }).origination_urls ?? [];
      const ours = urls.find((u) => u.friendly_name === originationName);
      if (!ours) {
        await call('trunk.origination.create', 'POST', `${trunking}/Trunks/${tk.sid}/OriginationUrls`, { FriendlyName: originationName, SipUrl: sipUrl, Priority: 10, Weight: 10, Enabled: true });
      } else if (ours.sip_url !== sipUrl) {
        // The ingress moved (configuration changed): follow it rather than adding a second destination.
        await call('trunk.origination.update', 'POST', `${trunking}/Trunks/${tk.sid}/OriginationUrls/${ours.sid}`, { SipUrl: sipUrl, Enabled: true });
      }
      const attached = await call('trunk.number.fetch', 'GET', `${trunking}/Trunks/${tk.sid}/PhoneNumbers/${encodeURIComponent(carrierNumberId)}`, undefined, [404]);
      if (attached.status === 404) await call('trunk.number.attach', 'POST', `${trunking}/Trunks/${tk.sid}/PhoneNumbers`, { PhoneNumberSid: carrierNumberId });
    },

    async outboundTermination(_phoneNumber: string): Promise<OutboundTermination> {
      const tk = await trunk();
      await termination(tk);
      return { address: tk.domain_name ?? domain, transport, auth_username: sipUsername, auth_password: sipPassword };
    },

    inboundSourceAddresses: () => [...sources],

    ratePerMinuteCents: (direction) => rates[direction],

    close: () => http.close(),
  };
}

/** The adapter from the platform configuration (CARRIER=twilio; loadConfig has checked the credentials). */
export function twilioCarrierFromConfig(config: Config, deps: { logger?: Logger; registry?: client.Registry } = {}): TwilioCarrier {
  return createTwilioCarrier({
    accountSid: config.TWILIO_ACCOUNT_SID ?? '',
    authToken: config.TWILIO_AUTH_TOKEN ?? '',
    apiBaseUrl: config.TWILIO_API_BASE_URL,
    trunkingBaseUrl: config.TWILIO_TRUNKING_BASE_URL,
    trunkSid: config.TWILIO_TRUNK_SID ?? null,
    trunkName: config.TWILIO_TRUNK_NAME,
    terminationDomain: config.TWILIO_TERMINATION_DOMAIN ?? null,
    terminationTransport: config.TWILIO_TERMINATION_TRANSPORT,
    sipUsername: config.TWILIO_SIP_USERNAME ?? null,
    sipPassword: config.TWILIO_SIP_PASSWORD ?? null,
    sourceAddresses: parseAddressList(config.TWILIO_SOURCE_ADDRESSES),
    inboundRateCents: config.TWILIO_INBOUND_RATE_CENTS,
    outboundRateCents: config.TWILIO_OUTBOUND_RATE_CENTS,
    timeoutMs: config.CARRIER_TIMEOUT_MS,
    ...deps,
  });
}
