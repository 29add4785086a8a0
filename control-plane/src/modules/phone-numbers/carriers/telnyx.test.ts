// The Telnyx adapter against a local server that speaks Telnyx's documented v2 API
// (test/support/fake-telnyx.ts): the real client code runs, requests are checked on the wire, and state is
// checked at the "carrier".
import { describe, expect, it } from 'vitest';
import { refusedUrl } from '../../../../../test/support/fake-carrier-http.ts';
import { startFakeTelnyx, type FakeTelnyx } from '../../../../../test/support/fake-telnyx.ts';
import { carrierFailure as failure, useFakeCarrier } from '../../../../../test/support/fake-carrier-fixture.ts';
import { loadConfig } from '../../../config.ts';
import { createTelnyxCarrier, telnyxCarrierFromConfig, splitHostPort, TELNYX_DEFAULT_RATES, TELNYX_SIGNALING_ADDRESSES } from './telnyx.ts';
import { CarrierError } from './types.ts';

let fake: FakeTelnyx;
let carrier: ReturnType<typeof createTelnyxCarrier>;
const { track } = useFakeCarrier(startFakeTelnyx, (f) => {
  fake = f;
  carrier = adapter();
});

function adapter(overrides: Partial<Parameters<typeof createTelnyxCarrier>[0]> = {}) {
  const a = createTelnyxCarrier({ apiKey: fake.apiKey, apiBaseUrl: fake.url, timeoutMs: 2000, orderPollIntervalMs: 1, ...overrides });
  return track(a);
}

describe('telnyx search', () => {
  it('sends the documented filters with the Bearer key and maps locality, region and features', async () => {
    const found = await carrier.search({ country: 'US', area_code: '312', contains: '0101', limit: 5 });
    const req = fake.requests.at(-1)!;
    expect(req.method).toBe('GET');
    expect(req.path).toBe('/v2/available_phone_numbers');
    expect(req.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    expect([...req.query]).toEqual([
      ['filter[country_code]', 'US'],
      ['filter[national_destination_code]', '312'],
      ['filter[phone_number][contains]', '0101'],
      ['filter[features][]', 'voice'],
      ['filter[limit]', '5'],
    ]);
    expect(found).toEqual([{ phone_number: '+13125550101', locality: 'CHICAGO', region: 'IL', country: 'US', capabilities: { voice: true, sms: true } }]);
  });

  it('leaves out filters that are not given, keeps voice numbers, honours the limit, maps a missing state to null', async () => {
    const us = await carrier.search({ country: 'US', limit: 10 });
    expect([...fake.requests.at(-1)!.query.keys()]).toEqual(['filter[country_code]', 'filter[features][]', 'filter[limit]']);
    expect(us.map((n) => n.phone_number)).toEqual(['+13125550101', '+13125550142', '+13055550177']);
    expect(await carrier.search({ country: 'US', limit: 2 })).toHaveLength(2);
    expect(await carrier.search({ country: 'GB', limit: 2 })).toEqual([{ phone_number: '+442075550123', locality: 'LONDON', region: null, country: 'GB', capabilities: { voice: true, sms: false } }]);
  });
});

describe('telnyx purchase, routing, termination and release', () => {
  it('orders a number (JSON), routes it to the ingress through an FQDN connection, and releases it twice', async () => {
    const bought = await carrier.purchase('+13125550101', { friendlyName: 'Front desk' });
    const order = fake.requests.find((r) => r.method === 'POST' && r.path === '/v2/number_orders')!;
    expect(order.headers['content-type']).toBe('application/json');
    expect(fake.json(order)).toMatchObject({ phone_numbers: [{ phone_number: '+13125550101' }] });
    const n = fake.numbers.get(bought.carrier_number_id)!;
    expect(bought).toEqual({ phone_number: '+13125550101', carrier_number_id: n.id, sms_capable: true });
    expect(await carrier.search({ country: 'US', area_code: '312', limit: 5 })).toHaveLength(1);

    await carrier.routeToIngress(bought.carrier_number_id, { address: 'sip.example.com:5070', transport: 'tcp' });
    expect(fake.connections.size).toBe(1);
    const conn = [...fake.connections.values()][0]!;
    expect(conn).toMatchObject({ connection_name: 'vap', transport_protocol: 'UDP', inbound: { ani_number_format: '+E.164', dnis_number_format: '+e164' } });
    expect([...fake.fqdns.values()]).toEqual([{ id: expect.any(String), connection_id: conn.id, fqdn: 'sip.example.com', port: 5070, dns_record_type: 'a' }]);
    expect(n.connection_id).toBe(conn.id);
    const patch = fake.requests.find((r) => r.method === 'PATCH' && r.path === `/v2/phone_numbers/${n.id}`)!;
    expect(fake.json(patch)).toEqual({ connection_id: conn.id });

    // Idempotent, and a new process finds the connection by name; a moved ingress replaces the old FQDN.
    await carrier.routeToIngress(bought.carrier_number_id, { address: 'sip.example.com:5070', transport: 'tcp' });
    expect(fake.fqdns.size).toBe(1);
    await adapter().routeToIngress(bought.carrier_number_id, { address: '[2001:db8::1]', transport: 'tls' });
    expect(fake.connections.size).toBe(1);
    expect([...fake.fqdns.values()].map((f) => [f.fqdn, f.port])).toEqual([['2001:db8::1', 5061]]);

    await carrier.release(bought.carrier_number_id);
    expect(fake.numbers.size).toBe(0);
    const deletes = () => fake.requests.filter((r) => r.method === 'DELETE' && r.path.startsWith('/v2/phone_numbers/'));
    expect(deletes().at(-1)!.path).toBe(`/v2/phone_numbers/${n.id}`);
    await carrier.release(bought.carrier_number_id); // already gone: still a success
    expect(deletes()).toHaveLength(2);
  });

  it('waits for a pending order, and reports sms_capable from the number messaging settings', async () => {
    fake.setPendingPolls(2);
    const bought = await carrier.purchase('+13125550142', {});
    expect(fake.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/v2/number_orders/'))).toHaveLength(2);
    expect(bought).toEqual({ phone_number: '+13125550142', carrier_number_id: fake.numbers.get(bought.carrier_number_id)!.id, sms_capable: false });
  });

  it('hands back the E.164 number while an order is still pending, and resolves it on routing and release', async () => {
    fake.setPendingPolls(5);
    const bought = await adapter({ orderPollAttempts: 1 }).purchase('+13055550177', {});
    expect(bought).toEqual({ phone_number: '+13055550177', carrier_number_id: '+13055550177', sms_capable: false });
    // The order completes at the carrier (next fetch); routing and release find the number by its E.164.
    const [order] = [...fake.orders.values()];
    order!.pollsLeft = 1;
    fake.requests.length = 0;
    await carrier.release('+13055550177'); // not listed yet: nothing to release
    expect(fake.requests.map((r) => r.method)).toEqual(['GET']);
    const res = await fetch(`${fake.url}/v2/number_orders/${order!.id}`, { headers: { authorization: `Bearer ${fake.apiKey}` } });
    expect(((await res.json()) as { data: { status: string } }).data.status).toBe('success');
    await carrier.routeToIngress('+13055550177', { address: 'sip.example.com', transport: 'udp' });
    const n = [...fake.numbers.values()][0]!;
    expect(n.connection_id).toBe([...fake.connections.values()][0]!.id);
    await carrier.release('+13055550177');
    expect(fake.numbers.size).toBe(0);
  });

  it('gives outbound termination at sip.telnyx.com with the connection credentials and an outbound voice profile', async () => {
    const t = await carrier.outboundTermination('+13125550101');
    expect(t).toMatchObject({ address: 'sip.telnyx.com', transport: 'udp' });
    const conn = [...fake.connections.values()][0]!;
    expect(conn.user_name).toBe(t.auth_username);
    expect(conn.password).toBe(t.auth_password);
    const [profile] = [...fake.profiles.values()];
    expect(profile!.name).toBe('vap');
    expect(conn.outbound.outbound_voice_profile_id).toBe(profile!.id);

    // Another process derives the same credentials and reuses connection and profile; configuration wins.
    expect(await adapter().outboundTermination('+13125550101')).toEqual(t);
    expect(fake.connections.size).toBe(1);
    expect(fake.profiles.size).toBe(1);
    const configured = await adapter({ sipUsername: 'lkout', sipPassword: 'an0ther-Secret', terminationAddress: 'sip.example-telnyx.test', terminationTransport: 'tcp' }).outboundTermination('+1');
    expect(configured).toEqual({ address: 'sip.example-telnyx.test', transport: 'tcp', auth_username: 'lkout', auth_password: 'an0ther-Secret' });
    expect(conn).toMatchObject({ user_name: 'lkout', password: 'an0ther-Secret' });
  });

  it('converges on the oldest connection when replicas create one at the same time', async () => {
    const bought = await carrier.purchase('+13125550101', {});
    const theirs = { id: '9000', connection_name: 'vap', created_at: '2020-01-01T00:00:00.000Z', transport_protocol: 'UDP', user_name: null, password: null, inbound: {}, outbound: { outbound_voice_profile_id: null } };
    fake.connections.set(theirs.id, theirs);
    // Our lookup ran before theirs was created: it saw none, so we create ours, then find both.
    fake.fault({ method: 'GET', path: /^\/v2\/fqdn_connections$/, respond: { status: 200, body: { data: [], meta: { total_pages: 1, total_results: 0, page_number: 1, page_size: 1 } } } });
    await carrier.routeToIngress(bought.carrier_number_id, { address: 'sip.example.com', transport: 'udp' });
    expect([...fake.connections.keys()]).toEqual([theirs.id]);
    expect(fake.numbers.get(bought.carrier_number_id)!.connection_id).toBe(theirs.id);
    expect([...fake.fqdns.values()].map((f) => f.connection_id)).toEqual([theirs.id]);
    expect(fake.requests.some((r) => r.method === 'DELETE' && r.path.startsWith('/v2/fqdn_connections/'))).toBe(true);
  });

  it('uses a configured connection and outbound voice profile as they are', async () => {
    const pre = createTelnyxCarrier({ apiKey: fake.apiKey, apiBaseUrl: fake.url, connectionName: 'ops-made' });
    track(pre);
    await pre.outboundTermination('+1');
    const conn = [...fake.connections.values()][0]!;
    const profile = [...fake.profiles.values()][0]!;
    const a = adapter({ connectionId: conn.id, outboundVoiceProfileId: profile.id });
    await a.outboundTermination('+1');
    const bought = await a.purchase('+13125550101', {});
    await a.routeToIngress(bought.carrier_number_id, { address: 'sip.example.com', transport: 'udp' });
    expect(fake.connections.size).toBe(1);
    expect(fake.profiles.size).toBe(1);
    expect(fake.numbers.get(bought.carrier_number_id)!.connection_id).toBe(conn.id);
  });

  it('reports documented source addresses and configured rates', () => {
    expect(carrier.inboundSourceAddresses()).toEqual([...TELNYX_SIGNALING_ADDRESSES]);
    expect(carrier.ratePerMinuteCents('outbound', '+1')).toBe(TELNYX_DEFAULT_RATES.outbound);
    const custom = adapter({ sourceAddresses: ['198.51.100.7'], inboundRateCents: 0.9, outboundRateCents: 1.1 });
    expect(custom.inboundSourceAddresses()).toEqual(['198.51.100.7']);
    expect(custom.ratePerMinuteCents('inbound', '+1')).toBe(0.9);
  });

  it('splits ingress addresses', () => {
    expect(splitHostPort('10.0.0.1:5080', 'udp')).toEqual({ host: '10.0.0.1', port: 5080 });
    expect(splitHostPort('sip.example.com', 'tls')).toEqual({ host: 'sip.example.com', port: 5061 });
    expect(splitHostPort('[::1]:5062', 'tcp')).toEqual({ host: '::1', port: 5062 });
    expect(() => splitHostPort('a:b:c', 'udp')).toThrow(CarrierError);
  });
});

describe('telnyx errors', () => {
  it('maps a number that is taken to number_unavailable', async () => {
    await carrier.purchase('+13125550101', {});
    const e = await failure(carrier.purchase('+13125550101', {}));
    expect(e.code).toBe('number_unavailable');
    expect(e.carrierStatus).toBe(422);
  });

  it('maps a failed order line to number_unavailable', async () => {
    fake.fault({ method: 'POST', path: '/v2/number_orders', respond: { status: 200, body: { data: { id: 'o1', record_type: 'number_order', status: 'failure', phone_numbers: [{ id: 'l1', phone_number: '+13125550101', status: 'failure' }] } } } });
    expect((await failure(carrier.purchase('+13125550101', {}))).code).toBe('number_unavailable');
  });

  it('maps a refused request to invalid_request', async () => {
    const e = await failure(carrier.search({ country: 'US', area_code: 'abc', limit: 5 }));
    expect(e.code).toBe('invalid_request');
    expect(e.message).toContain('national_destination_code');
  });

  it('maps a wrong API key to unauthorized (the fake checks the Bearer header)', async () => {
    const e = await failure(adapter({ apiKey: 'KEYwrong' }).search({ country: 'US', limit: 5 }));
    expect(e.code).toBe('unauthorized');
    expect(e.message).toContain('Authentication failed');
  });

  it('maps 429 to rate_limited with Retry-After', async () => {
    fake.fault({ path: 'available_phone_numbers', respond: { status: 429, headers: { 'retry-after': '3' }, body: { errors: [{ code: '10011', title: 'Too many requests', detail: 'slow down' }] } } });
    const e = await failure(carrier.search({ country: 'US', limit: 5 }));
    expect(e.code).toBe('rate_limited');
    expect(e.retryAfterSeconds).toBe(3);
  });

  it('maps 500 to unavailable', async () => {
    fake.fault({ path: 'available_phone_numbers', respond: { status: 500, body: { errors: [{ code: '10007', title: 'Unexpected error', detail: '' }] } } });
    expect((await failure(carrier.search({ country: 'US', limit: 5 }))).code).toBe('unavailable');
  });

  it('maps a timeout, a refused connection and a reset connection to unavailable', async () => {
    fake.fault({ path: 'available_phone_numbers', respond: 'hang' });
    const t = await failure(adapter({ timeoutMs: 200 }).search({ country: 'US', limit: 5 }));
    expect(t.code).toBe('unavailable');
    expect(t.message).toMatch(/timed out/);
    expect((await failure(adapter({ apiBaseUrl: await refusedUrl() }).search({ country: 'US', limit: 5 }))).code).toBe('unavailable');
    fake.fault({ path: 'available_phone_numbers', respond: 'reset' });
    expect((await failure(carrier.search({ country: 'US', limit: 5 }))).code).toBe('unavailable');
  });

  it('a routing call for a number not on the account fails cleanly', async () => {
    expect((await failure(carrier.routeToIngress('+19995550100', { address: 'sip.example.com', transport: 'udp' }))).code).toBe('number_unavailable');
  });
});

describe('telnyx purchase never leaves a number bought but unrecorded', () => {
  it('returns the number when the order happened but its answer was lost (timeout)', async () => {
    fake.fault({ method: 'POST', path: '/v2/number_orders', respond: 'hang', afterEffect: true });
    const bought = await adapter({ timeoutMs: 300 }).purchase('+13055550177', {});
    expect(fake.numbers.get(bought.carrier_number_id)?.phone_number).toBe('+13055550177');
    expect(bought.sms_capable).toBe(true);
  });

  it('returns the number when the order happened but Telnyx answered 503', async () => {
    fake.fault({ method: 'POST', path: '/v2/number_orders', respond: { status: 503, body: { errors: [{ code: '10008', title: 'Service unavailable', detail: '' }] } }, afterEffect: true });
    const bought = await carrier.purchase('+13055550177', {});
    expect(fake.numbers.has(bought.carrier_number_id)).toBe(true);
  });

  it('returns the E.164 number when the order succeeded but the number lookup failed', async () => {
    fake.fault({ method: 'GET', path: '/v2/phone_numbers', respond: { status: 500, body: { errors: [{ code: '10007', title: 'Unexpected error', detail: '' }] } } });
    const bought = await carrier.purchase('+13055550177', {});
    expect(bought.carrier_number_id).toBe('+13055550177');
    await carrier.release(bought.carrier_number_id);
    expect(fake.numbers.size).toBe(0);
  });

  it('findPurchased gives the id of a number on the account, or null (repair after a crash)', async () => {
    expect(await carrier.findPurchased('+13055550177')).toBeNull();
    const bought = await carrier.purchase('+13055550177', {});
    expect(await carrier.findPurchased('+13055550177')).toBe(bought.carrier_number_id);
    expect(fake.requests.at(-1)!.query.get('filter[phone_number]')).toBe('+13055550177');
    await carrier.release(bought.carrier_number_id);
    expect(await carrier.findPurchased('+13055550177')).toBeNull();
  });

  it('fails as unavailable when the order did not happen', async () => {
    fake.fault({ method: 'POST', path: '/v2/number_orders', respond: { status: 502, body: { errors: [{ code: '10008', title: 'Bad gateway', detail: '' }] } } });
    expect((await failure(carrier.purchase('+13055550177', {}))).code).toBe('unavailable');
    expect(fake.numbers.size).toBe(0);
  });
});

describe('telnyx configuration', () => {
  it('CARRIER=telnyx requires the API key at start-up', () => {
    expect(() => loadConfig({ CARRIER: 'telnyx' })).toThrow(/TELNYX_API_KEY must be set when CARRIER=telnyx/);
    expect(() => loadConfig({ CARRIER: 'fax' })).toThrow(/CARRIER/);
  });

  it('builds a working adapter from the environment', async () => {
    const config = loadConfig({ CARRIER: 'telnyx', TELNYX_API_KEY: fake.apiKey, TELNYX_API_BASE_URL: fake.url, TELNYX_OUTBOUND_RATE_CENTS: '1.25' });
    const a = telnyxCarrierFromConfig(config);
    track(a);
    expect((await a.search({ country: 'US', area_code: '305', limit: 5 })).map((n) => n.phone_number)).toEqual(['+13055550177']);
    expect(a.inboundSourceAddresses()).toEqual([...TELNYX_SIGNALING_ADDRESSES]);
    expect(a.ratePerMinuteCents('outbound', '+1')).toBe(1.25);
  });
});
