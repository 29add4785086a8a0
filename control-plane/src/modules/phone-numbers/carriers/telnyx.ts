// Telnyx v2: numbers through available_phone_numbers, number_orders and phone_numbers; calls through one
// platform FQDN connection whose FQDN record is our SIP ingress (Telnyx sends the INVITE there, no
// registration), with credentials for outbound calls and an outbound voice profile. Bearer API key, JSON
// bodies, errors as {errors: [{code, title, detail}]}.
import { createHmac } from 'node:crypto';
import type client from 'prom-client';
import type { Logger } from '../../../../../shared/logger.ts';
import type { Config } from '../../../config.ts';
import { createCarrierHttp, isAmbiguous, parseAddressList, type CarrierResponse, type ErrorBodyMapper } from './http.ts';
import { CarrierError, type AvailableNumber, type CarrierAdapter, type NumberSearch, type OutboundTermination, type PurchasedNumber, type SipIngress } from './types.ts';

/** Telnyx's documented SIP signalling addresses (US, Canada, Europe, Australia). */
export const TELNYX_SIGNALING_ADDRESSES: readonly string[] = [
  '192.76.120.10',
  '64.16.250.10',
  '192.76.120.31',
  '64.16.250.13',
  '185.246.41.140',
  '185.246.41.141',
  '103.115.244.145',
  '103.115.244.146',
];

/** Per-minute defaults in cents (US local inbound and outbound list prices); override by config. */
export const TELNYX_DEFAULT_RATES = { inbound: 0.35, outbound: 0.5 } as const;

export interface TelnyxCarrierOptions {
  apiKey: string;
  /** Default https://api.telnyx.com (paths carry /v2). */
  apiBaseUrl?: string;
  /** Use this FQDN connection instead of finding or creating one by name. */
  connectionId?: string | null;
  /** connection_name of the platform connection, found or created on first use. */
  connectionName?: string;
  /** Use this outbound voice profile instead of finding or creating one by name (the connection name). */
  outboundVoiceProfileId?: string | null;
  /** Where LiveKit sends outbound calls; default sip.telnyx.com. */
  terminationAddress?: string;
  terminationTransport?: 'udp' | 'tcp' | 'tls';
  /** Outbound credentials of the connection; derived from the API key when unset. */
  sipUsername?: string | null;
  sipPassword?: string | null;
  sourceAddresses?: readonly string[];
  inboundRateCents?: number;
  outboundRateCents?: number;
  timeoutMs?: number;
  /** A pending number order is polled this often, this many times, before purchase gives up waiting. */
  orderPollIntervalMs?: number;
  orderPollAttempts?: number;
  logger?: Logger;
  registry?: client.Registry;
}

interface TelnyxError {
  code?: unknown;
  title?: unknown;
  detail?: unknown;
}

// Telnyx tells "this number can't be had" in words rather than one stable code: match them.
const UNAVAILABLE_TEXT = /not available|unavailable|no longer available|already (been )?(purchased|ordered|reserved|taken|in use)|is taken/i;

const mapTelnyxError: ErrorBodyMapper = (status, body) => {
  const errors = ((body ?? {}) as { errors?: TelnyxError[] }).errors ?? [];
  const first = errors[0];
  if (!first) return null;
  const text = [first.title, first.detail].filter((v) => typeof v === 'string').join(': ');
  const message = `${text || `answered ${status}`}${first.code ? ` (${String(first.code)})` : ''}`;
  if (errors.some((e) => UNAVAILABLE_TEXT.test(`${String(e.title ?? '')} ${String(e.detail ?? '')}`))) return { code: 'number_unavailable', message };
  return { message };
};

interface OrderNumber {
  phone_number: string;
  status?: string;
}
interface NumberOrder {
  id: string;
  status: string;
  phone_numbers?: OrderNumber[];
}
interface Connection {
  id: string;
  connection_name?: string;
  created_at?: string;
  user_name?: string | null;
  outbound?: { outbound_voice_profile_id?: string | null } | null;
}

function derive(key: string, label: string): string {
  return createHmac('sha256', key).update(`vap:${label}`).digest('base64url');
}

/** host[:port] (IPv6 in brackets) into its parts; the port defaults by transport. */
export function splitHostPort(address: string, transport: SipIngress['transport']): { host: string; port: number } {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(address) ?? /^([^:]+)(?::(\d+))?$/.exec(address);
  if (!m) throw new CarrierError('invalid_request', `telnyx: SIP ingress address "${address}" is not host[:port]`);
  return { host: m[1]!, port: m[2] ? Number(m[2]) : transport === 'tls' ? 5061 : 5060 };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The adapter, plus `findPurchased` (repair of a purchase that crashed before its id was recorded) and `close`. */
export type TelnyxCarrier = CarrierAdapter & { findPurchased(phoneNumber: string): Promise<string | null>; close(): Promise<void> };

export function createTelnyxCarrier(opts: TelnyxCarrierOptions): TelnyxCarrier {
  if (!opts.apiKey) throw new Error('telnyx carrier: apiKey is required');
  const api = `${(opts.apiBaseUrl ?? 'https://api.telnyx.com').replace(/\/+$/, '')}/v2`;
  const http = createCarrierHttp({ carrier: 'telnyx', timeoutMs: opts.timeoutMs ?? 10_000, logger: opts.logger, registry: opts.registry });
  const connectionName = opts.connectionName ?? 'vap';
  const sipUsername = opts.sipUsername || `vap${derive(opts.apiKey, 'user').replace(/[^A-Za-z0-9]/g, '').slice(0, 20)}`;
  const sipPassword = opts.sipPassword || `${derive(opts.apiKey, 'password').slice(0, 28)}Aa1`;
  const transport = opts.terminationTransport ?? 'udp';
  const rates = { inbound: opts.inboundRateCents ?? TELNYX_DEFAULT_RATES.inbound, outbound: opts.outboundRateCents ?? TELNYX_DEFAULT_RATES.outbound };
  const sources = [...(opts.sourceAddresses ?? TELNYX_SIGNALING_ADDRESSES)];
  const pollInterval = opts.orderPollIntervalMs ?? 500;
  const pollAttempts = opts.orderPollAttempts ?? 10;

  const call = (operation: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, json?: unknown, accept?: number[]): Promise<CarrierResponse> => {
    const headers: Record<string, string> = { authorization: `Bearer ${opts.apiKey}` };
    if (json !== undefined) headers['content-type'] = 'application/json';
    return http.send({ operation, method, url: `${api}${path}`, headers, body: json === undefined ? undefined : JSON.stringify(json), accept }, mapTelnyxError);
  };

  const query = (params: Record<string, string | number | null | undefined>): string => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.append(k, String(v));
    const s = q.toString();
    return s ? `?${s}` : '';
  };

  const data = <T>(res: CarrierResponse): T => (res.body as { data: T }).data;

  async function findNumber(phoneNumber: string): Promise<{ id: string; phone_number: string } | null> {
    const res = await call('number.lookup', 'GET', `/phone_numbers${query({ 'filter[phone_number]': phoneNumber })}`);
    return data<{ id: string; phone_number: string }[]>(res).find((n) => n.phone_number === phoneNumber) ?? null;
  }

  /** carrier_number_id is the phone_numbers id, or the E.164 number when the id was not known yet. */
  async function resolveId(carrierNumberId: string): Promise<string | null> {
    if (!carrierNumberId.startsWith('+')) return carrierNumberId;
    return (await findNumber(carrierNumberId))?.id ?? null;
  }

  async function smsCapable(id: string): Promise<boolean> {
    // Informative only: a failure here must not turn a completed purchase into an error.
    try {
      const res = await call('number.messaging', 'GET', `/phone_numbers/${encodeURIComponent(id)}/messaging`, undefined, [404]);
      if (res.status === 404) return false;
      const features = data<{ features?: { sms?: unknown } }>(res).features;
      return Boolean(features?.sms);
    } catch {
      return false;
    }
  }

  async function waitForOrder(order: NumberOrder): Promise<NumberOrder> {
    let current = order;
    for (let i = 0; i < pollAttempts && current.status === 'pending'; i++) {
      await sleep(pollInterval);
      current = data<NumberOrder>(await call('order.fetch', 'GET', `/number_orders/${encodeURIComponent(current.id)}`));
    }
    return current;
  }

  async function purchased(phoneNumber: string): Promise<PurchasedNumber> {
    const n = await findNumber(phoneNumber);
    // Not listed yet (the order is still settling): the E.164 number stands in for the id and is resolved
    // again on routing and release.
    if (!n) return { phone_number: phoneNumber, carrier_number_id: phoneNumber, sms_capable: false };
    return { phone_number: n.phone_number, carrier_number_id: n.id, sms_capable: await smsCapable(n.id) };
  }

  // The platform connection and outbound voice profile, found or created once per process.
  let connectionPromise: Promise<Connection> | null = null;
  function connection(): Promise<Connection> {
    connectionPromise ??= findOrCreateConnection().catch((err: unknown) => {
      connectionPromise = null;
      throw err;
    });
    return connectionPromise;
  }

  async function findOrCreateConnection(): Promise<Connection> {
    if (opts.connectionId) return data<Connection>(await call('connection.fetch', 'GET', `/fqdn_connections/${encodeURIComponent(opts.connectionId)}`));
    const found = await connectionsNamed();
    if (found.length) return found[0]!;
    const res = await call('connection.create', 'POST', '/fqdn_connections', {
      connection_name: connectionName,
      active: true,
      transport_protocol: transport.toUpperCase(),
      user_name: sipUsername,
      password: sipPassword,
      // LiveKit matches numbers in E.164 with the plus.
      inbound: { ani_number_format: '+E.164', dnis_number_format: '+e164' },
    });
    const ours = data<Connection>(res);
    // Names are not unique at Telnyx: replicas starting together may each create one. The oldest wins
    // everywhere; a replica whose own is not the oldest deletes it (it carries no number yet).
    const all = await connectionsNamed();
    const winner = all[0] ?? ours;
    if (winner.id !== ours.id) await call('connection.delete', 'DELETE', `/fqdn_connections/${encodeURIComponent(ours.id)}`, undefined, [404]);
    return winner;
  }

  /** Connections with exactly our name, oldest first. */
  async function connectionsNamed(): Promise<Connection[]> {
    const list = data<Connection[]>(await call('connection.list', 'GET', `/fqdn_connections${query({ 'filter[connection_name][contains]': connectionName, 'page[size]': 250 })}`));
    return list
      .filter((c) => c.connection_name === connectionName)
      .sort((a, b) => (a.created_at ?? '').localeCompare(b.created_at ?? '') || a.id.localeCompare(b.id));
  }

  let outboundPromise: Promise<void> | null = null;
  function outbound(conn: Connection): Promise<void> {
    outboundPromise ??= ensureOutbound(conn).catch((err: unknown) => {
      outboundPromise = null;
      throw err;
    });
    return outboundPromise;
  }

  async function ensureOutbound(conn: Connection): Promise<void> {
    let profileId = opts.outboundVoiceProfileId ?? null;
    if (!profileId) {
      const list = data<{ id: string; name: string }[]>(await call('outbound_profile.list', 'GET', `/outbound_voice_profiles${query({ 'filter[name][contains]': connectionName, 'page[size]': 250 })}`));
      profileId = list.find((p) => p.name === connectionName)?.id ?? null;
      profileId ??= data<{ id: string }>(await call('outbound_profile.create', 'POST', '/outbound_voice_profiles', { name: connectionName, traffic_type: 'conversational', service_plan: 'global', enabled: true })).id;
    }
    // Credentials and profile are (re)applied every start: configuration may have changed them.
    await call('connection.update', 'PATCH', `/fqdn_connections/${encodeURIComponent(conn.id)}`, {
      user_name: sipUsername,
      password: sipPassword,
      outbound: { outbound_voice_profile_id: profileId },
    });
  }

  return {
    name: 'telnyx',

    async search(q: NumberSearch): Promise<AvailableNumber[]> {
      const country = q.country.toUpperCase();
      const res = await call(
        'search',
        'GET',
        `/available_phone_numbers${query({
          'filter[country_code]': country,
          'filter[national_destination_code]': q.area_code,
          'filter[phone_number][contains]': q.contains,
          'filter[features][]': 'voice',
          'filter[limit]': q.limit,
        })}`,
      );
      const list = data<Record<string, unknown>[]>(res) ?? [];
      return list.slice(0, q.limit).map((n) => {
        const regions = (n.region_information ?? []) as { region_type?: string; region_name?: string }[];
        const region = (type: string) => regions.find((r) => r.region_type === type)?.region_name || null;
        const features = new Set(((n.features ?? []) as { name?: string }[]).map((f) => f.name));
        return {
          phone_number: String(n.phone_number),
          locality: region('location') ?? region('rate_center'),
          region: region('state'),
          country: region('country_code') ?? country,
          capabilities: { voice: features.has('voice'), sms: features.has('sms') },
        };
      });
    },

    async purchase(phoneNumber: string, _o: { friendlyName?: string | null }): Promise<PurchasedNumber> {
      let order: NumberOrder;
      try {
        order = data<NumberOrder>(await call('purchase', 'POST', '/number_orders', { phone_numbers: [{ phone_number: phoneNumber }], customer_reference: connectionName }));
      } catch (err) {
        // Unknown outcome (timeout, 5xx): if the number is on the account now, it is ours; return it so the
        // caller records it or releases it, never leaves it orphaned.
        if (!isAmbiguous(err)) throw err;
        let owned: { id: string; phone_number: string } | null = null;
        try {
          owned = await findNumber(phoneNumber);
        } catch {
          throw err;
        }
        if (!owned) throw err;
        opts.logger?.info({ carrier: 'telnyx', carrier_number_id: owned.id }, 'carrier purchase confirmed after an ambiguous failure');
        return { phone_number: owned.phone_number, carrier_number_id: owned.id, sms_capable: await smsCapable(owned.id) };
      }
      try {
        order = await waitForOrder(order);
      } catch {
        // The order exists and may complete: hand back the number so the caller can record or release it.
        return { phone_number: phoneNumber, carrier_number_id: phoneNumber, sms_capable: false };
      }
      const line = order.phone_numbers?.find((p) => p.phone_number === phoneNumber);
      if (order.status === 'failure' || line?.status === 'failure') throw new CarrierError('number_unavailable', `telnyx purchase: ${phoneNumber} could not be ordered`);
      try {
        return await purchased(phoneNumber);
      } catch {
        return { phone_number: phoneNumber, carrier_number_id: phoneNumber, sms_capable: false };
      }
    },

    async findPurchased(phoneNumber: string): Promise<string | null> {
      return (await findNumber(phoneNumber))?.id ?? null;
    },

    async release(carrierNumberId: string): Promise<void> {
      const id = await resolveId(carrierNumberId);
      if (!id) return; // not on the account: already released
      await call('release', 'DELETE', `/phone_numbers/${encodeURIComponent(id)}`, undefined, [404]);
    },

    async routeToIngress(carrierNumberId: string, ingress: SipIngress): Promise<void> {
      const conn = await connection();
      const { host, port } = splitHostPort(ingress.address, ingress.transport);
      const fqdns = data<{ id: string; fqdn: string; port: number | null }[]>(await call('fqdn.list', 'GET', `/fqdns${query({ 'filter[connection_id]': conn.id, 'page[size]': 250 })}`));
      if (!fqdns.some((f) => f.fqdn === host && (f.port ?? 5060) === port)) {
        await call('fqdn.create', 'POST', '/fqdns', { connection_id: conn.id, fqdn: host, port, dns_record_type: 'a' });
        // The ingress moved (configuration changed): drop the old destinations so calls follow it.
        for (const f of fqdns) await call('fqdn.delete', 'DELETE', `/fqdns/${encodeURIComponent(f.id)}`, undefined, [404]);
      }
      const id = await resolveId(carrierNumberId);
      if (!id) throw new CarrierError('number_unavailable', `telnyx routing: ${carrierNumberId} is not on the account`);
      await call('number.route', 'PATCH', `/phone_numbers/${encodeURIComponent(id)}`, { connection_id: conn.id });
    },

    async outboundTermination(_phoneNumber: string): Promise<OutboundTermination> {
      const conn = await connection();
      await outbound(conn);
      return { address: opts.terminationAddress ?? 'sip.telnyx.com', transport, auth_username: sipUsername, auth_password: sipPassword };
    },

    inboundSourceAddresses: () => [...sources],

    ratePerMinuteCents: (direction) => rates[direction],

    close: () => http.close(),
  };
}

/** The adapter from the platform configuration (CARRIER=telnyx; loadConfig has checked the key). */
export function telnyxCarrierFromConfig(config: Config, deps: { logger?: Logger; registry?: client.Registry } = {}): TelnyxCarrier {
  return createTelnyxCarrier({
    apiKey: config.TELNYX_API_KEY ?? '',
    apiBaseUrl: config.TELNYX_API_BASE_URL,
    connectionId: config.TELNYX_CONNECTION_ID ?? null,
    connectionName: config.TELNYX_CONNECTION_NAME,
    outboundVoiceProfileId: config.TELNYX_OUTBOUND_VOICE_PROFILE_ID ?? null,
    terminationAddress: config.TELNYX_TERMINATION_ADDRESS,
    terminationTransport: config.TELNYX_TERMINATION_TRANSPORT,
    sipUsername: config.TELNYX_SIP_USERNAME ?? null,
    sipPassword: config.TELNYX_SIP_PASSWORD ?? null,
    sourceAddresses: parseAddressList(config.TELNYX_SOURCE_ADDRESSES),
    inboundRateCents: config.TELNYX_INBOUND_RATE_CENTS,
    outboundRateCents: config.TELNYX_OUTBOUND_RATE_CENTS,
    timeoutMs: config.CARRIER_TIMEOUT_MS,
    ...deps,
  });
}
