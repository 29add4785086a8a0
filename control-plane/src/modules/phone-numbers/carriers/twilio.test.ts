// The Twilio adapter against a local server that speaks Twilio's documented API (test/support/fake-twilio.ts):
// the real client code runs, requests are checked on the wire, and state is checked at the "carrier".
import { describe, expect, it } from 'vitest';
import client from 'prom-client';
import { refusedUrl } from '../../../../../test/support/fake-carrier-http.ts';
import { startFakeTwilio, type FakeTwilio } from '../../../../../test/support/fake-twilio.ts';
import { carrierFailure as failure, useFakeCarrier } from '../../../../../test/support/fake-carrier-fixture.ts';
import { loadConfig } from '../../../config.ts';
import { createTwilioCarrier, twilioCarrierFromConfig, TWILIO_DEFAULT_RATES, TWILIO_SIGNALING_RANGES } from './twilio.ts';

let fake: FakeTwilio;
let carrier: ReturnType<typeof createTwilioCarrier>;
const { track } = useFakeCarrier(startFakeTwilio, (f) => {
  fake = f;
  carrier = adapter();
});

function adapter(overrides: Partial<Parameters<typeof createTwilioCarrier>[0]> = {}) {
  const a = createTwilioCarrier({ accountSid: fake.accountSid, authToken: fake.authToken, apiBaseUrl: fake.url, trunkingBaseUrl: fake.url, timeoutMs: 2000, ...overrides });
  return track(a);
}

describe('twilio search', () => {
  it('sends AreaCode, Contains, VoiceEnabled and PageSize and maps locality, region and capabilities', async () => {
    const found = await carrier.search({ country: 'US', area_code: '415', contains: '0101', limit: 5 });
    const req = fake.requests.at(-1)!;
    expect(req.method).toBe('GET');
    expect(req.path).toBe(`/2010-04-01/Accounts/${fake.accountSid}/AvailablePhoneNumbers/US/Local.json`);
    expect(Object.fromEntries(req.query)).toEqual({ AreaCode: '415', Contains: '0101', VoiceEnabled: 'true', PageSize: '5' });
    expect(req.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')}`);
    expect(found).toEqual([{ phone_number: '+14155550101', locality: 'San Francisco', region: 'CA', country: 'US', capabilities: { voice: true, sms: true } }]);
  });

  it('leaves out filters that are not given, keeps voice-capable numbers only and honours the limit', async () => {
    const all = await carrier.search({ country: 'US', limit: 10 });
    expect(Object.fromEntries(fake.requests.at(-1)!.query)).toEqual({ VoiceEnabled: 'true', PageSize: '10' });
    expect(all.map((n) => n.phone_number)).toEqual(['+14155550101', '+14155550142', '+12125550177']);
    expect(all[1]!.capabilities).toEqual({ voice: true, sms: false });
    expect(await carrier.search({ country: 'US', limit: 1 })).toHaveLength(1);
  });

  it('answers an empty list for a country without inventory (Twilio 404)', async () => {
    expect(await carrier.search({ country: 'ZZ', limit: 5 })).toEqual([]);
  });
});

describe('twilio purchase, routing, termination and release', () => {
  it('buys a number (form-encoded), points it at the ingress over the trunk, and releases it twice', async () => {
    const bought = await carrier.purchase('+14155550101', { friendlyName: 'Front desk' });
    const post = fake.requests.find((r) => r.method === 'POST' && r.path.endsWith('/IncomingPhoneNumbers.json'))!;
    expect(post.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(fake.form(post))).toEqual({ PhoneNumber: '+14155550101', FriendlyName: 'Front desk' });
    expect(bought).toEqual({ phone_number: '+14155550101', carrier_number_id: expect.stringMatching(/^PN[0-9a-f]{32}$/), sms_capable: true });
    expect(fake.numbers.get(bought.carrier_number_id)?.phone_number).toBe('+14155550101');
    // Bought numbers leave the inventory.
    expect((await carrier.search({ country: 'US', area_code: '415', limit: 5 })).map((n) => n.phone_number)).toEqual(['+14155550142']);

    await carrier.routeToIngress(bought.carrier_number_id, { address: 'sip.example.com:5060', transport: 'udp' });
    expect(fake.trunks.size).toBe(1);
    const trunk = [...fake.trunks.values()][0]!;
    expect(trunk.friendly_name).toBe('vap');
    expect(trunk.domain_name).toBe(`vap-${fake.accountSid.slice(-10).toLowerCase()}.pstn.twilio.com`);
    expect(trunk.origination_urls).toEqual([expect.objectContaining({ sip_url: 'sip:sip.example.com:5060;transport=udp', enabled: true, priority: 10, weight: 10 })]);
    expect([...trunk.phone_numbers]).toEqual([bought.carrier_number_id]);
    expect(fake.numbers.get(bought.carrier_number_id)?.trunk_sid).toBe(trunk.sid);

    // Idempotent: routing again changes nothing and makes no duplicate.
    await carrier.routeToIngress(bought.carrier_number_id, { address: 'sip.example.com:5060', transport: 'udp' });
    expect(trunk.origination_urls).toHaveLength(1);
    // A new process finds the trunk by name instead of creating a second one; a moved ingress is followed.
    const other = adapter();
    await other.routeToIngress(bought.carrier_number_id, { address: 'sip2.example.com:5061', transport: 'tls' });
    expect(fake.trunks.size).toBe(1);
    expect(trunk.origination_urls.map((o) => o.sip_url)).toEqual(['sip:sip2.example.com:5061;transport=tls']);

    await carrier.release(bought.carrier_number_id);
    expect(fake.numbers.has(bought.carrier_number_id)).toBe(false);
    expect(trunk.phone_numbers.size).toBe(0);
    const deletes = () => fake.requests.filter((r) => r.method === 'DELETE');
    expect(deletes().at(-1)!.path).toBe(`/2010-04-01/Accounts/${fake.accountSid}/IncomingPhoneNumbers/${bought.carrier_number_id}.json`);
    await carrier.release(bought.carrier_number_id); // already gone: still a success
    expect(deletes()).toHaveLength(2);
  });

  it('gives outbound termination through the trunk domain and a credential list attached to the trunk', async () => {
    const t = await carrier.outboundTermination('+14155550101');
    const trunk = [...fake.trunks.values()][0]!;
    expect(t.address).toBe(trunk.domain_name);
    expect(t.address).toMatch(/\.pstn\.twilio\.com$/);
    expect(t.transport).toBe('udp');
    const [cl] = [...fake.credentialLists.values()];
    expect(cl!.friendly_name).toBe('vap-termination');
    expect([...trunk.credential_lists]).toEqual([cl!.sid]);
    const [cred] = [...cl!.credentials.values()];
    expect(cred).toMatchObject({ username: t.auth_username, password: t.auth_password });

    // Another process (same token) derives the same credentials and reuses the list; configured ones win.
    const again = await adapter().outboundTermination('+14155550101');
    expect(again).toEqual(t);
    expect(fake.credentialLists.size).toBe(1);
    expect(cl!.credentials.size).toBe(1);
    const configured = await adapter({ sipUsername: 'lkoutbound', sipPassword: 'Sup3rSecretPassw0rd', terminationTransport: 'tls' }).outboundTermination('+14155550101');
    expect(configured).toMatchObject({ auth_username: 'lkoutbound', auth_password: 'Sup3rSecretPassw0rd', transport: 'tls' });
    expect([...cl!.credentials.values()].find((c) => c.username === 'lkoutbound')?.password).toBe('Sup3rSecretPassw0rd');
  });

  it('converges on one trunk when another replica creates it between our lookup and our create', async () => {
    const bought = await carrier.purchase('+14155550101', {});
    const theirs = { sid: `TK${'c'.repeat(32)}`, friendly_name: 'vap', domain_name: `vap-${fake.accountSid.slice(-10).toLowerCase()}.pstn.twilio.com`, origination_urls: [], phone_numbers: new Set<string>(), credential_lists: new Set<string>() };
    fake.trunks.set(theirs.sid, theirs);
    // Our lookup ran before theirs was created: it saw no trunk.
    fake.fault({ method: 'GET', path: /^\/v1\/Trunks$/, respond: { status: 200, body: { trunks: [], meta: { next_page_url: null, key: 'trunks' } } } });
    await carrier.routeToIngress(bought.carrier_number_id, { address: 'sip.example.com', transport: 'udp' });
    expect([...fake.trunks.keys()]).toEqual([theirs.sid]);
    expect([...theirs.phone_numbers]).toEqual([bought.carrier_number_id]);
  });

  it('finds its trunk on a later page, following page links on the configured host only', async () => {
    for (let i = 0; i < 120; i++) {
      const sid = `TK${i.toString(16).padStart(32, '0')}`;
      fake.trunks.set(sid, { sid, friendly_name: `other-${i}`, domain_name: `o${i}.pstn.twilio.com`, origination_urls: [], phone_numbers: new Set(), credential_lists: new Set() });
    }
    const ours = { sid: `TK${'d'.repeat(32)}`, friendly_name: 'vap', domain_name: 'ours.pstn.twilio.com', origination_urls: [], phone_numbers: new Set<string>(), credential_lists: new Set<string>() };
    fake.trunks.set(ours.sid, ours);
    const t = await carrier.outboundTermination('+1');
    expect(t.address).toBe('ours.pstn.twilio.com');
    expect(fake.trunks.size).toBe(121);
    expect(fake.requests.filter((r) => r.path === '/v1/Trunks').map((r) => r.query.get('Page'))).toEqual([null, '1']);
  });

  it('uses a configured trunk, giving it a termination domain when it has none', async () => {
    const tk = { sid: `TK${'a'.repeat(32)}`, friendly_name: 'made by hand', domain_name: null, origination_urls: [], phone_numbers: new Set<string>(), credential_lists: new Set<string>() };
    fake.trunks.set(tk.sid, tk);
    const t = await adapter({ trunkSid: tk.sid, terminationDomain: 'acme-voice.pstn.twilio.com' }).outboundTermination('+14155550101');
    expect(t.address).toBe('acme-voice.pstn.twilio.com');
    expect(fake.trunks.size).toBe(1);
    expect(tk.domain_name).toBe('acme-voice.pstn.twilio.com');
  });

  it('reports documented source ranges and configured rates', () => {
    expect(carrier.inboundSourceAddresses()).toEqual([...TWILIO_SIGNALING_RANGES]);
    expect(carrier.ratePerMinuteCents('inbound', '+14155550101')).toBe(TWILIO_DEFAULT_RATES.inbound);
    const custom = adapter({ sourceAddresses: ['203.0.113.0/24'], inboundRateCents: 1.2, outboundRateCents: 2 });
    expect(custom.inboundSourceAddresses()).toEqual(['203.0.113.0/24']);
    expect(custom.ratePerMinuteCents('inbound', '+1')).toBe(1.2);
    expect(custom.ratePerMinuteCents('outbound', '+1')).toBe(2);
  });
});

describe('twilio errors', () => {
  it('maps a number that is taken to number_unavailable', async () => {
    await carrier.purchase('+14155550101', {});
    const e = await failure(carrier.purchase('+14155550101', {}));
    expect(e.code).toBe('number_unavailable');
    expect(e.carrierStatus).toBe(400);
    expect(e.message).toContain('21422');
  });

  it('maps a refused parameter to invalid_request', async () => {
    const e = await failure(carrier.purchase('not-a-number', {}));
    expect(e.code).toBe('invalid_request');
    expect(e.message).toContain('21421');
  });

  it('maps wrong credentials to unauthorized (the fake checks the Basic header)', async () => {
    const e = await failure(adapter({ authToken: 'wrong' }).search({ country: 'US', limit: 5 }));
    expect(e.code).toBe('unauthorized');
    expect(e.carrierStatus).toBe(401);
    expect(e.message).toContain('20003');
  });

  it('maps 429 to rate_limited with Retry-After', async () => {
    fake.fault({ path: 'AvailablePhoneNumbers', respond: { status: 429, headers: { 'retry-after': '7' }, body: { code: 20429, message: 'Too Many Requests', more_info: 'https://www.twilio.com/docs/errors/20429', status: 429 } } });
    const e = await failure(carrier.search({ country: 'US', limit: 5 }));
    expect(e.code).toBe('rate_limited');
    expect(e.retryAfterSeconds).toBe(7);
  });

  it('maps 500 to unavailable', async () => {
    fake.fault({ path: 'AvailablePhoneNumbers', respond: { status: 500, body: { code: 20500, message: 'Internal Server Error', more_info: '', status: 500 } } });
    expect((await failure(carrier.search({ country: 'US', limit: 5 }))).code).toBe('unavailable');
  });

  it('maps a timeout to unavailable', async () => {
    fake.fault({ path: 'AvailablePhoneNumbers', respond: 'hang' });
    const e = await failure(adapter({ timeoutMs: 200 }).search({ country: 'US', limit: 5 }));
    expect(e.code).toBe('unavailable');
    expect(e.message).toMatch(/timed out/);
  });

  it('maps a refused connection and a reset connection to unavailable', async () => {
    const e = await failure(adapter({ apiBaseUrl: await refusedUrl() }).search({ country: 'US', limit: 5 }));
    expect(e.code).toBe('unavailable');
    fake.fault({ path: 'AvailablePhoneNumbers', respond: 'reset' });
    expect((await failure(carrier.search({ country: 'US', limit: 5 }))).code).toBe('unavailable');
  });

  it('a release that fails for another reason is an error, not a silent success', async () => {
    fake.fault({ method: 'DELETE', respond: { status: 503, body: { code: 20503, message: 'Service Unavailable', more_info: '', status: 503 } } });
    expect((await failure(carrier.release(`PN${'b'.repeat(32)}`))).code).toBe('unavailable');
  });
});

describe('twilio purchase never leaves a number bought but unrecorded', () => {
  it('returns the number when the purchase happened but its answer was lost (timeout)', async () => {
    fake.fault({ method: 'POST', path: 'IncomingPhoneNumbers.json', respond: 'hang', afterEffect: true });
    const bought = await adapter({ timeoutMs: 300 }).purchase('+12125550177', {});
    expect(bought.phone_number).toBe('+12125550177');
    expect(fake.numbers.get(bought.carrier_number_id)?.phone_number).toBe('+12125550177');
  });

  it('returns the number when the purchase happened but Twilio answered 500', async () => {
    fake.fault({ method: 'POST', path: 'IncomingPhoneNumbers.json', respond: { status: 500, body: { code: 20500, message: 'Internal Server Error', more_info: '', status: 500 } }, afterEffect: true });
    const bought = await carrier.purchase('+12125550177', {});
    expect(fake.numbers.has(bought.carrier_number_id)).toBe(true);
  });

  it('findPurchased gives the id of a number on the account, or null (repair after a crash)', async () => {
    expect(await carrier.findPurchased('+12125550177')).toBeNull();
    const bought = await carrier.purchase('+12125550177', {});
    expect(await carrier.findPurchased('+12125550177')).toBe(bought.carrier_number_id);
    expect(Object.fromEntries(fake.requests.at(-1)!.query)).toEqual({ PhoneNumber: '+12125550177' });
    await carrier.release(bought.carrier_number_id);
    expect(await carrier.findPurchased('+12125550177')).toBeNull();
  });

  it('fails as unavailable when the purchase did not happen', async () => {
    fake.fault({ method: 'POST', path: 'IncomingPhoneNumbers.json', respond: { status: 502, body: { code: 20502, message: 'Bad Gateway', more_info: '', status: 502 } } });
    expect((await failure(carrier.purchase('+12125550177', {}))).code).toBe('unavailable');
    expect(fake.numbers.size).toBe(0);
  });
});

describe('twilio metrics', () => {
  it('records carrier request durations by operation and outcome', async () => {
    const registry = new client.Registry();
    const a = adapter({ registry });
    await a.search({ country: 'US', limit: 1 });
    await failure(a.purchase('+19999999999', {}));
    const text = await registry.metrics();
    expect(text).toMatch(/vap_carrier_request_duration_seconds_count\{carrier="twilio",operation="search",outcome="ok"\} 1/);
    expect(text).toMatch(/vap_carrier_request_duration_seconds_count\{carrier="twilio",operation="purchase",outcome="number_unavailable"\} 1/);
  });
});

describe('twilio configuration', () => {
  it('CARRIER=twilio requires the account SID and auth token at start-up', () => {
    expect(() => loadConfig({ CARRIER: 'twilio' })).toThrow(/TWILIO_ACCOUNT_SID must be set when CARRIER=twilio[\s\S]*TWILIO_AUTH_TOKEN must be set/);
    expect(() => loadConfig({ CARRIER: 'twilio', TWILIO_ACCOUNT_SID: 'nope', TWILIO_AUTH_TOKEN: 'x' })).toThrow(/TWILIO_ACCOUNT_SID/);
    expect(() => loadConfig({ CARRIER: 'twilio', TWILIO_ACCOUNT_SID: `AC${'1'.repeat(32)}`, TWILIO_AUTH_TOKEN: 'x', TWILIO_SIP_PASSWORD: 'alllowercase1' })).toThrow(/TWILIO_SIP_PASSWORD/);
    expect(() => loadConfig({ CARRIER: 'twilio', TWILIO_ACCOUNT_SID: `AC${'1'.repeat(32)}`, TWILIO_AUTH_TOKEN: 'x', TWILIO_TERMINATION_DOMAIN: 'x.example.com' })).toThrow(/TWILIO_TERMINATION_DOMAIN/);
    expect(loadConfig({}).CARRIER).toBe('simulated');
  });

  it('builds a working adapter from the environment', async () => {
    const config = loadConfig({
      CARRIER: 'twilio',
      TWILIO_ACCOUNT_SID: fake.accountSid,
      TWILIO_AUTH_TOKEN: fake.authToken,
      TWILIO_API_BASE_URL: fake.url,
      TWILIO_TRUNKING_BASE_URL: fake.url,
      TWILIO_SOURCE_ADDRESSES: ' 203.0.113.0/24, 198.51.100.0/24 ',
      TWILIO_INBOUND_RATE_CENTS: '0.5',
    });
    const a = twilioCarrierFromConfig(config);
    track(a);
    expect((await a.search({ country: 'US', area_code: '212', limit: 5 })).map((n) => n.phone_number)).toEqual(['+12125550177']);
    expect(a.inboundSourceAddresses()).toEqual(['203.0.113.0/24', '198.51.100.0/24']);
    expect(a.ratePerMinuteCents('inbound', '+1')).toBe(0.5);
    expect(a.ratePerMinuteCents('outbound', '+1')).toBe(TWILIO_DEFAULT_RATES.outbound);
  });
});
