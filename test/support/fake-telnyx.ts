// A local Telnyx v2 API for tests, as documented: Bearer API key (401 otherwise), JSON request bodies, answers
// under `data`, errors as {errors: [{code, title, detail}]}. Available numbers, number orders (optionally left
// pending for a few polls), phone numbers, FQDN connections with their FQDN records, and outbound voice
// profiles live in memory, so search, order, routing and release agree with each other.
import { randomUUID } from 'node:crypto';
import { startFakeCarrierServer, type Fault, type RecordedRequest, type Reply } from './fake-carrier-http.ts';

export interface TelnyxInventoryNumber {
  phone_number: string;
  country_code: string;
  national_destination_code: string;
  location: string;
  state: string;
  features: ('voice' | 'sms' | 'mms' | 'fax')[];
}

export interface FakeTelnyxNumber {
  id: string;
  phone_number: string;
  status: string;
  connection_id: string | null;
  customer_reference: string | null;
  sms: boolean;
}

export interface FakeTelnyxConnection {
  id: string;
  connection_name: string;
  created_at: string;
  transport_protocol: string;
  user_name: string | null;
  password: string | null;
  inbound: Record<string, unknown>;
  outbound: { outbound_voice_profile_id: string | null };
}

export interface FakeTelnyx {
  url: string;
  apiKey: string;
  inventory: TelnyxInventoryNumber[];
  numbers: Map<string, FakeTelnyxNumber>;
  orders: Map<string, { id: string; status: string; phone_numbers: { id: string; phone_number: string; status: string }[]; customer_reference: string | null; pollsLeft: number }>;
  connections: Map<string, FakeTelnyxConnection>;
  fqdns: Map<string, { id: string; connection_id: string; fqdn: string; port: number; dns_record_type: string }>;
  profiles: Map<string, { id: string; name: string }>;
  requests: RecordedRequest[];
  /** Orders stay `pending` for this many fetches before they complete (0: complete at once). */
  setPendingPolls(n: number): void;
  json(req: RecordedRequest): Record<string, unknown>;
  fault(f: Fault): void;
  close(): Promise<void>;
}

export const DEFAULT_TELNYX_INVENTORY: TelnyxInventoryNumber[] = [
  { phone_number: '+13125550101', country_code: 'US', national_destination_code: '312', location: 'CHICAGO', state: 'IL', features: ['voice', 'sms'] },
  { phone_number: '+13125550142', country_code: 'US', national_destination_code: '312', location: 'CHICAGO', state: 'IL', features: ['voice'] },
  { phone_number: '+13055550177', country_code: 'US', national_destination_code: '305', location: 'MIAMI', state: 'FL', features: ['voice', 'sms', 'mms'] },
  { phone_number: '+13055550188', country_code: 'US', national_destination_code: '305', location: 'MIAMI', state: 'FL', features: ['sms'] },
  { phone_number: '+442075550123', country_code: 'GB', national_destination_code: '20', location: 'LONDON', state: '', features: ['voice'] },
];

const err = (status: number, code: string, title: string, detail: string): Reply => ({ status, body: { errors: [{ code, title, detail }] } });
const notFound = (p: string) => err(404, '10005', 'Resource not found', `The requested resource or URL could not be found: ${p}`);

export async function startFakeTelnyx(opts: { apiKey?: string; inventory?: TelnyxInventoryNumber[] } = {}): Promise<FakeTelnyx> {
  const apiKey = opts.apiKey ?? `KEY${randomUUID().replace(/-/g, '')}`;
  const inventory = (opts.inventory ?? DEFAULT_TELNYX_INVENTORY).map((n) => ({ ...n, features: [...n.features] }));
  const numbers = new Map<string, FakeTelnyxNumber>();
  const orders: FakeTelnyx['orders'] = new Map();
  const connections = new Map<string, FakeTelnyxConnection>();
  const fqdns: FakeTelnyx['fqdns'] = new Map();
  const profiles: FakeTelnyx['profiles'] = new Map();
  let pendingPolls = 0;
  let seq = 0;
  // Telnyx ids are long decimal strings; a prefix per kind keeps them apart.
  const nextId = (kind: string) => `${kind}${String(++seq).padStart(18, '0')}`;

  const json = (req: RecordedRequest): Record<string, unknown> => (req.rawBody ? (JSON.parse(req.rawBody) as Record<string, unknown>) : {});
  const list = <T>(data: T[]) => ({ status: 200, body: { data, meta: { total_pages: 1, total_results: data.length, page_number: 1, page_size: Math.max(data.length, 1) } } });
  const numberJson = (n: FakeTelnyxNumber) => ({ id: n.id, record_type: 'phone_number', phone_number: n.phone_number, status: n.status, connection_id: n.connection_id, customer_reference: n.customer_reference, tags: [] });
  const connectionJson = (c: FakeTelnyxConnection) => ({ id: c.id, record_type: 'fqdn_connection', active: true, connection_name: c.connection_name, created_at: c.created_at, transport_protocol: c.transport_protocol, user_name: c.user_name, inbound: c.inbound, outbound: c.outbound });
  const orderJson = (o: FakeTelnyx['orders'] extends Map<string, infer V> ? V : never) => ({
    id: o.id,
    record_type: 'number_order',
    status: o.status,
    phone_numbers_count: o.phone_numbers.length,
    phone_numbers: o.phone_numbers.map((p) => ({ ...p, record_type: 'number_order_phone_number' })),
    customer_reference: o.customer_reference,
  });

  function completeOrder(o: FakeTelnyx['orders'] extends Map<string, infer V> ? V : never): void {
    o.status = 'success';
    for (const line of o.phone_numbers) {
      line.status = 'success';
      const inv = inventory.findIndex((n) => n.phone_number === line.phone_number);
      const features = inv >= 0 ? inventory.splice(inv, 1)[0]!.features : [];
      const n: FakeTelnyxNumber = { id: nextId('4'), phone_number: line.phone_number, status: 'active', connection_id: null, customer_reference: o.customer_reference, sms: features.includes('sms') };
      numbers.set(n.id, n);
    }
  }

  function handle(req: RecordedRequest): Reply {
    if (req.headers.authorization !== `Bearer ${apiKey}`) return err(401, '10009', 'Authentication failed', 'The API key is not valid.');
    let body: Record<string, unknown> = {};
    if (req.method === 'POST' || req.method === 'PATCH') {
      if (!String(req.headers['content-type'] ?? '').startsWith('application/json')) return err(415, '10015', 'Unsupported media type', 'Request bodies must be application/json.');
      try {
        body = json(req);
      } catch {
        return err(400, '10015', 'Bad Request', 'The request body is not valid JSON.');
      }
    }
    const p = req.path;
    const q = req.query;
    let m: RegExpExecArray | null;

    if (p === '/v2/available_phone_numbers' && req.method === 'GET') {
      const country = q.get('filter[country_code]');
      const ndc = q.get('filter[national_destination_code]');
      const contains = q.get('filter[phone_number][contains]');
      const features = q.getAll('filter[features][]');
      const limit = Number(q.get('filter[limit]') ?? 50);
      if (ndc && !/^\d{1,5}$/.test(ndc)) return err(422, '10015', 'Invalid filter', 'filter[national_destination_code] must be digits.');
      const data = inventory
        .filter((n) => (!country || n.country_code === country) && (!ndc || n.national_destination_code === ndc) && (!contains || n.phone_number.includes(contains)) && features.every((f) => n.features.includes(f as 'voice')))
        .slice(0, limit)
        .map((n) => ({
          record_type: 'available_phone_number',
          phone_number: n.phone_number,
          vanity_format: '',
          best_effort: false,
          quickship: true,
          reservable: true,
          region_information: [
            { region_type: 'country_code', region_name: n.country_code },
            { region_type: 'location', region_name: n.location },
            ...(n.state ? [{ region_type: 'state', region_name: n.state }] : []),
          ],
          cost_information: { upfront_cost: '1.00', monthly_cost: '1.00', currency: 'USD' },
          features: n.features.map((name) => ({ name })),
        }));
      return { status: 200, body: { data, metadata: { total_results: data.length, best_effort_results: 0 } } };
    }

    if (p === '/v2/number_orders' && req.method === 'POST') {
      const lines = (body.phone_numbers ?? []) as { phone_number?: string }[];
      if (!Array.isArray(lines) || !lines.length || lines.some((l) => typeof l.phone_number !== 'string')) return err(422, '10015', 'Invalid parameter', 'phone_numbers must list phone_number values.');
      for (const l of lines) {
        if (!inventory.some((n) => n.phone_number === l.phone_number)) return err(422, '85001', 'Number not available', `${l.phone_number} is not available for purchase.`);
      }
      const o = { id: randomUUID(), status: 'pending', phone_numbers: lines.map((l) => ({ id: randomUUID(), phone_number: l.phone_number!, status: 'pending' })), customer_reference: (body.customer_reference as string) ?? null, pollsLeft: pendingPolls };
      orders.set(o.id, o);
      if (pendingPolls === 0) completeOrder(o);
      return { status: 200, body: { data: orderJson(o) } };
    }
    if ((m = /^\/v2\/number_orders\/([^/]+)$/.exec(p)) && req.method === 'GET') {
      const o = orders.get(m[1]!);
      if (!o) return notFound(p);
      if (o.status === 'pending' && --o.pollsLeft <= 0) completeOrder(o);
      return { status: 200, body: { data: orderJson(o) } };
    }

    if (p === '/v2/phone_numbers' && req.method === 'GET') {
      const phone = q.get('filter[phone_number]');
      return list([...numbers.values()].filter((n) => !phone || n.phone_number === phone).map(numberJson));
    }
    if ((m = /^\/v2\/phone_numbers\/([^/]+)(\/messaging)?$/.exec(p))) {
      const n = numbers.get(m[1]!);
      if (!n) return notFound(p);
      if (m[2] && req.method === 'GET') return { status: 200, body: { data: { id: n.id, record_type: 'messaging_settings', phone_number: n.phone_number, features: { sms: n.sms ? { domestic_two_way: true, international_inbound: false, international_outbound: false } : null, mms: null } } } };
      if (req.method === 'GET') return { status: 200, body: { data: numberJson(n) } };
      if (req.method === 'PATCH') {
        if ('connection_id' in body) {
          const cid = body.connection_id as string | null;
          if (cid !== null && !connections.has(String(cid))) return err(422, '10015', 'Invalid connection_id', 'The connection does not exist.');
          n.connection_id = cid;
        }
        return { status: 200, body: { data: numberJson(n) } };
      }
      if (req.method === 'DELETE') {
        numbers.delete(n.id);
        return { status: 200, body: { data: { ...numberJson(n), status: 'deleted' } } };
      }
    }

    if (p === '/v2/fqdn_connections') {
      if (req.method === 'GET') {
        const name = q.get('filter[connection_name][contains]');
        return list([...connections.values()].filter((c) => !name || c.connection_name.includes(name)).map(connectionJson));
      }
      if (req.method === 'POST') {
        if (typeof body.connection_name !== 'string' || !body.connection_name) return err(422, '10015', 'Invalid parameter', 'connection_name is required.');
        const c: FakeTelnyxConnection = {
          id: nextId('1'),
          connection_name: body.connection_name,
          created_at: new Date(Date.now() + seq).toISOString(),
          transport_protocol: String(body.transport_protocol ?? 'UDP'),
          user_name: (body.user_name as string) ?? null,
          password: (body.password as string) ?? null,
          inbound: (body.inbound as Record<string, unknown>) ?? {},
          outbound: { outbound_voice_profile_id: ((body.outbound as Record<string, unknown> | undefined)?.outbound_voice_profile_id as string) ?? null },
        };
        connections.set(c.id, c);
        return { status: 201, body: { data: connectionJson(c) } };
      }
    }
    if ((m = /^\/v2\/fqdn_connections\/([^/]+)$/.exec(p))) {
      const c = connections.get(m[1]!);
      if (!c) return notFound(p);
      if (req.method === 'GET') return { status: 200, body: { data: connectionJson(c) } };
      if (req.method === 'DELETE') {
        connections.delete(c.id);
        for (const [id, f] of fqdns) if (f.connection_id === c.id) fqdns.delete(id);
        return { status: 200, body: { data: connectionJson(c) } };
      }
      if (req.method === 'PATCH') {
        if ('user_name' in body) c.user_name = body.user_name as string;
        if ('password' in body) c.password = body.password as string;
        const ob = body.outbound as { outbound_voice_profile_id?: string } | undefined;
        if (ob?.outbound_voice_profile_id !== undefined) {
          if (!profiles.has(ob.outbound_voice_profile_id)) return err(422, '10015', 'Invalid outbound_voice_profile_id', 'The outbound voice profile does not exist.');
          c.outbound.outbound_voice_profile_id = ob.outbound_voice_profile_id;
        }
        return { status: 200, body: { data: connectionJson(c) } };
      }
    }

    if (p === '/v2/fqdns') {
      if (req.method === 'GET') {
        const cid = q.get('filter[connection_id]');
        return list([...fqdns.values()].filter((f) => !cid || f.connection_id === cid).map((f) => ({ ...f, record_type: 'fqdn' })));
      }
      if (req.method === 'POST') {
        const cid = String(body.connection_id ?? '');
        if (!connections.has(cid)) return err(422, '10015', 'Invalid connection_id', 'The connection does not exist.');
        if (typeof body.fqdn !== 'string' || !body.fqdn || typeof body.dns_record_type !== 'string') return err(422, '10015', 'Invalid parameter', 'fqdn and dns_record_type are required.');
        const f = { id: nextId('2'), connection_id: cid, fqdn: body.fqdn, port: Number(body.port ?? 5060), dns_record_type: body.dns_record_type };
        fqdns.set(f.id, f);
        return { status: 201, body: { data: { ...f, record_type: 'fqdn' } } };
      }
    }
    if ((m = /^\/v2\/fqdns\/([^/]+)$/.exec(p)) && req.method === 'DELETE') {
      const f = fqdns.get(m[1]!);
      if (!f) return notFound(p);
      fqdns.delete(f.id);
      return { status: 200, body: { data: { ...f, record_type: 'fqdn' } } };
    }

    if (p === '/v2/outbound_voice_profiles') {
      if (req.method === 'GET') {
        const name = q.get('filter[name][contains]');
        return list([...profiles.values()].filter((x) => !name || x.name.includes(name)).map((x) => ({ ...x, record_type: 'outbound_voice_profile' })));
      }
      if (req.method === 'POST') {
        if (typeof body.name !== 'string' || !body.name) return err(422, '10015', 'Invalid parameter', 'name is required.');
        const x = { id: nextId('3'), name: body.name };
        profiles.set(x.id, x);
        return { status: 201, body: { data: { ...x, record_type: 'outbound_voice_profile' } } };
      }
    }
    return notFound(p);
  }

  const server = await startFakeCarrierServer(handle);
  return {
    url: server.url,
    apiKey,
    inventory,
    numbers,
    orders,
    connections,
    fqdns,
    profiles,
    requests: server.requests,
    setPendingPolls: (n) => {
      pendingPolls = n;
    },
    json,
    fault: server.fault,
    close: server.close,
  };
}
