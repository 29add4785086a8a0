// A local Twilio for tests: the REST API's number resources (2010-04-01) and Elastic SIP Trunking (v1) on one
// server, as documented: Basic auth (account SID : auth token, 401 with code 20003 otherwise), form-encoded
// request bodies, JSON answers, error bodies {code, message, more_info, status}. State lives in memory, so
// search, purchase, trunk wiring and release agree with each other.
import { hex, startFakeCarrierServer, type Fault, type RecordedRequest, type Reply } from './fake-carrier-http.ts';

export interface TwilioInventoryNumber {
  phone_number: string;
  iso_country: string;
  locality: string;
  region: string;
  capabilities: { voice: boolean; SMS: boolean; MMS: boolean; fax: boolean };
}

export interface FakeTwilioNumber {
  sid: string;
  phone_number: string;
  friendly_name: string;
  trunk_sid: string | null;
  capabilities: { voice: boolean; sms: boolean; mms: boolean; fax: boolean };
}

export interface FakeTwilioTrunk {
  sid: string;
  friendly_name: string;
  domain_name: string | null;
  origination_urls: { sid: string; friendly_name: string; sip_url: string; priority: number; weight: number; enabled: boolean }[];
  phone_numbers: Set<string>;
  credential_lists: Set<string>;
}

export interface FakeTwilio {
  /** Serves both the REST API and the trunking API (their paths differ). */
  url: string;
  accountSid: string;
  authToken: string;
  inventory: TwilioInventoryNumber[];
  numbers: Map<string, FakeTwilioNumber>;
  trunks: Map<string, FakeTwilioTrunk>;
  credentialLists: Map<string, { sid: string; friendly_name: string; credentials: Map<string, { sid: string; username: string; password: string }> }>;
  requests: RecordedRequest[];
  /** The form body of a recorded request. */
  form(req: RecordedRequest): URLSearchParams;
  fault(f: Fault): void;
  close(): Promise<void>;
}

export const DEFAULT_TWILIO_INVENTORY: TwilioInventoryNumber[] = [
  { phone_number: '+14155550101', iso_country: 'US', locality: 'San Francisco', region: 'CA', capabilities: { voice: true, SMS: true, MMS: true, fax: false } },
  { phone_number: '+14155550142', iso_country: 'US', locality: 'San Francisco', region: 'CA', capabilities: { voice: true, SMS: false, MMS: false, fax: false } },
  { phone_number: '+12125550177', iso_country: 'US', locality: 'New York', region: 'NY', capabilities: { voice: true, SMS: true, MMS: true, fax: false } },
  { phone_number: '+12125550188', iso_country: 'US', locality: 'New York', region: 'NY', capabilities: { voice: false, SMS: true, MMS: false, fax: false } },
  { phone_number: '+16135550123', iso_country: 'CA', locality: 'Ottawa', region: 'ON', capabilities: { voice: true, SMS: true, MMS: false, fax: false } },
];

const err = (status: number, code: number, message: string): Reply => ({
  status,
  body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status },
});

/** Twilio's Contains pattern: digits, `*` for any one digit; letters map to keypad digits. */
function containsMatches(pattern: string, national: string): boolean {
  const keypad: Record<string, string> = { a: '2', b: '2', c: '2', d: '3', e: '3', f: '3', g: '4', h: '4', i: '4', j: '5', k: '5', l: '5', m: '6', n: '6', o: '6', p: '7', q: '7', r: '7', s: '7', t: '8', u: '8', v: '8', w: '9', x: '9', y: '9', z: '9' };
  const re = pattern
    .toLowerCase()
    .split('')
    .map((c) => (c === '*' ? '\\d' : (keypad[c] ?? c.replace(/[^0-9]/g, ''))))
    .join('');
  return new RegExp(re).test(national);
}

export async function startFakeTwilio(opts: { accountSid?: string; authToken?: string; inventory?: TwilioInventoryNumber[] } = {}): Promise<FakeTwilio> {
  const accountSid = opts.accountSid ?? `AC${hex(32)}`;
  const authToken = opts.authToken ?? hex(32);
  const inventory = (opts.inventory ?? DEFAULT_TWILIO_INVENTORY).map((n) => ({ ...n, capabilities: { ...n.capabilities } }));
  const numbers = new Map<string, FakeTwilioNumber>();
  const trunks = new Map<string, FakeTwilioTrunk>();
  const credentialLists: FakeTwilio['credentialLists'] = new Map();
  const expectedAuth = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
  const api = `/2010-04-01/Accounts/${accountSid}`;

  const form = (req: RecordedRequest) => new URLSearchParams(req.rawBody);
  const numberJson = (n: FakeTwilioNumber) => ({ ...n, account_sid: accountSid, uri: `${api}/IncomingPhoneNumbers/${n.sid}.json` });
  const trunkJson = (t: FakeTwilioTrunk) => ({ sid: t.sid, account_sid: accountSid, friendly_name: t.friendly_name, domain_name: t.domain_name, url: `/v1/Trunks/${t.sid}` });
  const meta = (key: string) => ({ page: 0, page_size: 50, first_page_url: null, previous_page_url: null, next_page_url: null, key });

  function handle(req: RecordedRequest): Reply {
    if (req.headers.authorization !== expectedAuth) return err(401, 20003, 'Authenticate');
    if ((req.method === 'POST' || req.method === 'PUT') && !String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      return err(400, 20001, 'Request body must be application/x-www-form-urlencoded');
    }
    const f = form(req);
    const p = req.path;
    let m: RegExpExecArray | null;

    // ---- REST API: numbers ----
    if ((m = /^\/2010-04-01\/Accounts\/([^/]+)\/(.*)$/.exec(p))) {
      if (m[1] !== accountSid) return err(404, 20404, `The requested resource ${p} was not found`);
      const rest = m[2]!;
      if ((m = /^AvailablePhoneNumbers\/([A-Z]{2})\/Local\.json$/.exec(rest)) && req.method === 'GET') {
        const country = m[1]!;
        const pool = inventory.filter((n) => n.iso_country === country);
        if (!pool.length) return err(404, 20404, `The requested resource ${p} was not found`);
        const areaCode = req.query.get('AreaCode');
        const contains = req.query.get('Contains');
        const voice = req.query.get('VoiceEnabled');
        const pageSize = Number(req.query.get('PageSize') ?? 50);
        const list = pool.filter((n) => {
          const national = n.phone_number.replace(/^\+1/, '');
          if (areaCode && !national.startsWith(areaCode)) return false;
          if (contains && !containsMatches(contains, national)) return false;
          if (voice === 'true' && !n.capabilities.voice) return false;
          return true;
        });
        return { status: 200, body: { uri: p, available_phone_numbers: list.slice(0, pageSize).map((n) => ({ friendly_name: n.phone_number, ...n, lata: null, rate_center: null, latitude: null, longitude: null, postal_code: null, address_requirements: 'none', beta: false })) } };
      }
      if (rest === 'IncomingPhoneNumbers.json' && req.method === 'POST') {
        const phone = f.get('PhoneNumber') ?? '';
        if (!/^\+[1-9]\d{1,14}$/.test(phone)) return err(400, 21421, 'PhoneNumber is invalid');
        const i = inventory.findIndex((n) => n.phone_number === phone);
        if (i < 0) return err(400, 21422, 'PhoneNumber Requested is not available');
        const inv = inventory.splice(i, 1)[0]!;
        const n: FakeTwilioNumber = {
          sid: `PN${hex(32)}`,
          phone_number: phone,
          friendly_name: f.get('FriendlyName') ?? phone,
          trunk_sid: null,
          capabilities: { voice: inv.capabilities.voice, sms: inv.capabilities.SMS, mms: inv.capabilities.MMS, fax: inv.capabilities.fax },
        };
        numbers.set(n.sid, n);
        return { status: 201, body: numberJson(n) };
      }
      if (rest === 'IncomingPhoneNumbers.json' && req.method === 'GET') {
        const phone = req.query.get('PhoneNumber');
        const list = [...numbers.values()].filter((n) => !phone || n.phone_number === phone);
        return { status: 200, body: { incoming_phone_numbers: list.map(numberJson), page: 0, page_size: 50, next_page_uri: null } };
      }
      if ((m = /^IncomingPhoneNumbers\/(PN[0-9a-f]{32})\.json$/.exec(rest))) {
        const n = numbers.get(m[1]!);
        if (!n) return err(404, 20404, `The requested resource ${p} was not found`);
        if (req.method === 'GET') return { status: 200, body: numberJson(n) };
        if (req.method === 'DELETE') {
          numbers.delete(n.sid);
          for (const t of trunks.values()) t.phone_numbers.delete(n.sid);
          return { status: 204 };
        }
      }
      if (rest === 'SIP/CredentialLists.json') {
        if (req.method === 'GET') return { status: 200, body: { credential_lists: [...credentialLists.values()].map((c) => ({ sid: c.sid, friendly_name: c.friendly_name, account_sid: accountSid })) } };
        if (req.method === 'POST') {
          const name = f.get('FriendlyName');
          if (!name) return err(400, 21603, 'FriendlyName is required');
          const cl = { sid: `CL${hex(32)}`, friendly_name: name, credentials: new Map() };
          credentialLists.set(cl.sid, cl);
          return { status: 201, body: { sid: cl.sid, friendly_name: name, account_sid: accountSid } };
        }
      }
      if ((m = /^SIP\/CredentialLists\/(CL[0-9a-f]{32})\/Credentials(?:\/(CR[0-9a-f]{32}))?\.json$/.exec(rest))) {
        const cl = credentialLists.get(m[1]!);
        if (!cl) return err(404, 20404, `The requested resource ${p} was not found`);
        const password = f.get('Password');
        const weak = (pw: string) => pw.length < 12 || !/[A-Z]/.test(pw) || !/[a-z]/.test(pw) || !/\d/.test(pw);
        if (!m[2] && req.method === 'GET') return { status: 200, body: { credentials: [...cl.credentials.values()].map((c) => ({ sid: c.sid, username: c.username })) } };
        if (!m[2] && req.method === 'POST') {
          const username = f.get('Username');
          if (!username || !password) return err(400, 21604, 'Username and Password are required');
          if (weak(password)) return err(400, 21613, 'Password is not strong enough');
          if ([...cl.credentials.values()].some((c) => c.username === username)) return err(400, 21612, 'Username already exists in this list');
          const c = { sid: `CR${hex(32)}`, username, password };
          cl.credentials.set(c.sid, c);
          return { status: 201, body: { sid: c.sid, username } };
        }
        if (m[2] && req.method === 'POST') {
          const c = cl.credentials.get(m[2]);
          if (!c) return err(404, 20404, `The requested resource ${p} was not found`);
          if (!password || weak(password)) return err(400, 21613, 'Password is not strong enough');
          c.password = password;
          return { status: 200, body: { sid: c.sid, username: c.username } };
        }
      }
      return err(404, 20404, `The requested resource ${p} was not found`);
    }

    // ---- Elastic SIP Trunking ----
    if (p === '/v1/Trunks') {
      if (req.method === 'GET') {
        // Pages of PageSize trunks; next_page_url is absolute on Twilio's host, as the real API gives it.
        const size = Number(req.query.get('PageSize') ?? 50);
        const page = Number(req.query.get('Page') ?? 0);
        const all = [...trunks.values()];
        const more = (page + 1) * size < all.length;
        return {
          status: 200,
          body: { trunks: all.slice(page * size, (page + 1) * size).map(trunkJson), meta: { ...meta('trunks'), page, page_size: size, next_page_url: more ? `https://trunking.twilio.com/v1/Trunks?PageSize=${size}&Page=${page + 1}` : null } },
        };
      }
      if (req.method === 'POST') {
        const domain = f.get('DomainName');
        if (domain && !domain.endsWith('.pstn.twilio.com')) return err(400, 21245, 'DomainName must end with .pstn.twilio.com');
        if (domain && [...trunks.values()].some((t) => t.domain_name === domain)) return err(400, 21248, 'DomainName is already in use');
        const t: FakeTwilioTrunk = { sid: `TK${hex(32)}`, friendly_name: f.get('FriendlyName') ?? '', domain_name: domain, origination_urls: [], phone_numbers: new Set(), credential_lists: new Set() };
        trunks.set(t.sid, t);
        return { status: 201, body: trunkJson(t) };
      }
    }
    if ((m = /^\/v1\/Trunks\/(TK[0-9a-f]{32})(?:\/(.*))?$/.exec(p))) {
      const t = trunks.get(m[1]!);
      if (!t) return err(404, 20404, `The requested resource ${p} was not found`);
      const sub = m[2] ?? '';
      if (!sub && req.method === 'GET') return { status: 200, body: trunkJson(t) };
      if (!sub && req.method === 'POST') {
        if (f.has('DomainName')) t.domain_name = f.get('DomainName');
        if (f.has('FriendlyName')) t.friendly_name = f.get('FriendlyName')!;
        return { status: 200, body: trunkJson(t) };
      }
      if (sub === 'OriginationUrls' && req.method === 'GET') return { status: 200, body: { origination_urls: t.origination_urls.map((o) => ({ ...o, trunk_sid: t.sid })), meta: meta('origination_urls') } };
      if (sub === 'OriginationUrls' && req.method === 'POST') {
        for (const k of ['FriendlyName', 'SipUrl', 'Priority', 'Weight', 'Enabled']) if (!f.has(k)) return err(400, 21604, `${k} is required`);
        if (!f.get('SipUrl')!.startsWith('sip:')) return err(400, 21245, 'SipUrl must be a sip: URI');
        const o = { sid: `OU${hex(32)}`, friendly_name: f.get('FriendlyName')!, sip_url: f.get('SipUrl')!, priority: Number(f.get('Priority')), weight: Number(f.get('Weight')), enabled: f.get('Enabled') === 'true' };
        t.origination_urls.push(o);
        return { status: 201, body: { ...o, trunk_sid: t.sid } };
      }
      if ((m = /^OriginationUrls\/(OU[0-9a-f]{32})$/.exec(sub)) && req.method === 'POST') {
        const o = t.origination_urls.find((x) => x.sid === m![1]);
        if (!o) return err(404, 20404, `The requested resource ${p} was not found`);
        if (f.has('SipUrl')) o.sip_url = f.get('SipUrl')!;
        if (f.has('Enabled')) o.enabled = f.get('Enabled') === 'true';
        return { status: 200, body: { ...o, trunk_sid: t.sid } };
      }
      if (sub === 'PhoneNumbers' && req.method === 'GET') return { status: 200, body: { phone_numbers: [...t.phone_numbers].map((s) => numberJson(numbers.get(s)!)), meta: meta('phone_numbers') } };
      if (sub === 'PhoneNumbers' && req.method === 'POST') {
        const n = numbers.get(f.get('PhoneNumberSid') ?? '');
        if (!n) return err(404, 20404, 'PhoneNumberSid was not found');
        if (t.phone_numbers.has(n.sid)) return err(400, 21248, 'Phone number is already associated with this trunk');
        t.phone_numbers.add(n.sid);
        n.trunk_sid = t.sid;
        return { status: 201, body: numberJson(n) };
      }
      if ((m = /^PhoneNumbers\/(PN[0-9a-f]{32})$/.exec(sub)) && req.method === 'GET') {
        if (!t.phone_numbers.has(m[1]!)) return err(404, 20404, `The requested resource ${p} was not found`);
        return { status: 200, body: numberJson(numbers.get(m[1]!)!) };
      }
      if (sub === 'CredentialLists' && req.method === 'POST') {
        const cl = credentialLists.get(f.get('CredentialListSid') ?? '');
        if (!cl) return err(404, 20404, 'CredentialListSid was not found');
        t.credential_lists.add(cl.sid);
        return { status: 201, body: { sid: cl.sid, friendly_name: cl.friendly_name, trunk_sid: t.sid } };
      }
      if ((m = /^CredentialLists\/(CL[0-9a-f]{32})$/.exec(sub)) && req.method === 'GET') {
        if (!t.credential_lists.has(m[1]!)) return err(404, 20404, `The requested resource ${p} was not found`);
        return { status: 200, body: { sid: m[1], trunk_sid: t.sid } };
      }
    }
    return err(404, 20404, `The requested resource ${p} was not found`);
  }

  const server = await startFakeCarrierServer(handle);
  return { url: server.url, accountSid, authToken, inventory, numbers, trunks, credentialLists, requests: server.requests, form, fault: server.fault, close: server.close };
}
