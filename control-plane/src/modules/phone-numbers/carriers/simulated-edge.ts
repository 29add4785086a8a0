// The simulated carrier's termination side: where outbound trunks of simulated numbers send their calls
// (SIMULATED_CARRIER_TERMINATION_ADDRESS). A small stateless SIP proxy over UDP (RFC 3261 section 16.11):
//
//   - a destination matched by SIMULATED_CARRIER_ROUTES ("<E.164 prefix or *>=host:port", first match wins), or
//     one of the carrier's own numbers that a customer holds (its inbound ingress: calling your own number
//     rings your own agent), gets the INVITE, and every response goes back the way it came;
//   - any other destination is answered `404 Not Found` at once (reason `invalid_number`), as a carrier answers
//     an unassigned number;
//   - a routed destination that sends nothing back within SIMULATED_CARRIER_NO_ANSWER_SECONDS (a user agent that
//     is not running) is answered `480 Temporarily Unavailable` (reason `no_answer`), never left ringing.
//
// No Record-Route: once answered, the two ends talk directly (ACK, BYE), as they would through a carrier's
// signalling border that does not stay in the dialog. Why a proxy rather than pointing trunks at a test phone:
// the carrier's routing (unknown numbers, dead targets) must fail like a real one, in seconds, whatever the
// target is, and a trunk's address is fixed when the number is bought.
import dgram from 'node:dgram';
import { createHash } from 'node:crypto';
import type { Logger } from '../../../../../shared/logger.ts';
import { simulatedIngress } from './queries.ts';

export interface SipTarget {
  host: string;
  port: number;
}

export interface EdgeRoute {
  /** E.164 prefix ('' matches every number). */
  prefix: string;
  target: SipTarget;
}

export interface SimulatedEdgeOptions {
  /** host:port to listen on. Port 0 picks a free one. */
  listen: string;
  routes: EdgeRoute[];
  /** Numbers the carrier routes itself (numbers customers hold): their ingress, or null. */
  lookup?: (e164: string) => Promise<SipTarget | null>;
  noAnswerMs: number;
  log?: Logger;
}

export interface SimulatedEdge {
  address: SipTarget;
  close(): Promise<void>;
}

export function parseHostPort(s: string, defaultPort = 5060): SipTarget {
  const m = /^\[?([^\]]+?)\]?(?::(\d+))?$/.exec(s.trim());
  if (!m) throw new Error(`not a host:port: ${s}`);
  return { host: m[1]!, port: m[2] ? Number(m[2]) : defaultPort };
}

/** "+1555*=127.0.0.1:5090,*=10.0.0.5" -> routes, in order. */
export function parseRoutes(spec: string): EdgeRoute[] {
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const eq = entry.indexOf('=');
      if (eq < 0) throw new Error(`SIMULATED_CARRIER_ROUTES: "${entry}" is not <prefix>=host:port`);
      const prefix = entry.slice(0, eq).trim().replace(/\*$/, '');
      if (prefix && !/^\+[0-9]*$/.test(prefix)) throw new Error(`SIMULATED_CARRIER_ROUTES: "${prefix}" is not an E.164 prefix or *`);
      return { prefix, target: parseHostPort(entry.slice(eq + 1)) };
    });
}

interface Message {
  startLine: string;
  headers: [string, string][];
  body: string;
}

function parse(buf: Buffer): Message | null {
  const text = buf.toString('utf8');
  const sep = text.indexOf('\r\n\r\n');
  const head = sep >= 0 ? text.slice(0, sep) : text;
  const body = sep >= 0 ? text.slice(sep + 4) : '';
  const lines = head.split('\r\n');
  const startLine = lines.shift();
  if (!startLine) return null;
  const headers: [string, string][] = [];
  for (const line of lines) {
    if (/^[ \t]/.test(line) && headers.length) {
      headers[headers.length - 1]![1] += ` ${line.trim()}`;
      continue;
    }
    const c = line.indexOf(':');
    if (c > 0) headers.push([line.slice(0, c).trim(), line.slice(c + 1).trim()]);
  }
  return { startLine, headers, body };
}

const COMPACT: Record<string, string> = { v: 'via', f: 'from', t: 'to', i: 'call-id', m: 'contact', l: 'content-length' };
const norm = (name: string) => COMPACT[name.toLowerCase()] ?? name.toLowerCase();
const get = (m: Message, name: string) => m.headers.find(([n]) => norm(n) === name)?.[1];

function serialize(m: Message): Buffer {
  const headers = m.headers.filter(([n]) => norm(n) !== 'content-length');
  headers.push(['Content-Length', String(Buffer.byteLength(m.body))]);
  return Buffer.from(`${m.startLine}\r\n${headers.map(([n, v]) => `${n}: ${v}`).join('\r\n')}\r\n\r\n${m.body}`);
}

/** Via headers as separate values, top first (a header may carry several, comma-separated). */
function vias(m: Message): string[] {
  return m.headers.filter(([n]) => norm(n) === 'via').flatMap(([, v]) => v.split(/,(?=\s*SIP\/)/).map((x) => x.trim()));
}
function setVias(m: Message, list: string[]): void {
  const first = m.headers.findIndex(([n]) => norm(n) === 'via');
  const rest = m.headers.filter(([n]) => norm(n) !== 'via');
  const at = first < 0 ? 0 : m.headers.slice(0, first).filter(([n]) => norm(n) !== 'via').length;
  rest.splice(at, 0, ...list.map((v) => ['Via', v] as [string, string]));
  m.headers = rest;
}
const viaParam = (via: string, name: string) => new RegExp(`;\\s*${name}(?:=([^;\\s]*))?`, 'i').exec(via);

/** Where a response goes: the Via's received/rport when present, else its sent-by. */
function viaTarget(via: string): SipTarget | null {
  const m = /^SIP\/2\.0\/\w+\s+([^;\s]+)/i.exec(via);
  if (!m) return null;
  const sentBy = parseHostPort(m[1]!);
  const received = viaParam(via, 'received')?.[1];
  const rport = viaParam(via, 'rport')?.[1];
  return { host: received || sentBy.host, port: rport ? Number(rport) : sentBy.port };
}

/** The dialled number from a Request-URI (`sip:+15550100@host;user=phone`). */
export function dialledNumber(requestUri: string): string | null {
  const m = /^(?:sips?|tel):([^@;>]+)/i.exec(requestUri);
  if (!m) return null;
  const user = decodeURIComponent(m[1]!).replace(/[-.() ]/g, '');
  if (/^\+[0-9]{2,15}$/.test(user)) return user;
  if (/^[0-9]{2,15}$/.test(user)) return `+${user}`;
  return null;
}

interface Transaction {
  target: SipTarget;
  /** The request as received (for a locally built final response). */
  request: Message;
  client: SipTarget;
  answered: boolean;
  timer: NodeJS.Timeout | null;
  forwarded: Message;
}

export async function startSimulatedEdge(o: SimulatedEdgeOptions): Promise<SimulatedEdge> {
  const listen = parseHostPort(o.listen);
  const socket = dgram.createSocket(listen.host.includes(':') ? 'udp6' : 'udp4');
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(listen.port, listen.host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  const me = socket.address();
  const sentBy = `${me.address}:${me.port}`;
  const txns = new Map<string, Transaction>();
  const send = (m: Message, to: SipTarget) => socket.send(serialize(m), to.port, to.host);

  /** A final response built here, from the request's own headers (adds a To tag when there is none). */
  const respond = (req: Message, to: SipTarget, code: number, phrase: string) => {
    const keep = req.headers.filter(([n]) => ['via', 'from', 'to', 'call-id', 'cseq'].includes(norm(n)));
    const headers = keep.map(([n, v]) => [n, norm(n) === 'to' && !/;\s*tag=/i.test(v) ? `${v};tag=edge${createHash('sha1').update(get(req, 'call-id') ?? '').digest('hex').slice(0, 10)}` : v] as [string, string]);
    headers.push(['Server', 'vap-simulated-carrier']);
    send({ startLine: `SIP/2.0 ${code} ${phrase}`, headers, body: '' }, to);
  };

  const route = async (num: string): Promise<SipTarget | null> => {
    for (const r of o.routes) if (num.startsWith(r.prefix)) return r.target;
    return o.lookup ? o.lookup(num).catch(() => null) : null;
  };

  const onRequest = async (m: Message, from: SipTarget) => {
    const [method, uri] = m.startLine.split(' ');
    const top = vias(m)[0];
    if (!method || !uri || !top) return;
    const branch = viaParam(top, 'branch')?.[1] ?? '';
    const ours = `z9hG4bK-vapedge-${createHash('sha1').update(branch).update(top).digest('hex').slice(0, 20)}`;
    if (method === 'ACK' || method === 'CANCEL') {
      const t = txns.get(ours);
      if (!t) {
        if (method === 'CANCEL') respond(m, from, 481, 'Call/Transaction Does Not Exist');
        return;
      }
      if (method === 'CANCEL') respond(m, from, 200, 'OK');
      // Relayed with the INVITE's branch, so the target matches it to the INVITE transaction.
      const fwd: Message = { ...m, headers: [...m.headers] };
      setVias(fwd, [`SIP/2.0/UDP ${sentBy};branch=${ours}`, ...vias(m)]);
      fwd.startLine = t.forwarded.startLine.replace(/^INVITE/, method);
      if (t.timer && method === 'CANCEL') {
        // The caller gave up before the target said anything: nothing will answer the INVITE now.
        clearTimeout(t.timer);
        t.timer = null;
        respond(t.request, t.client, 487, 'Request Terminated');
      }
      send(fwd, t.target);
      return;
    }
    if (method !== 'INVITE') {
      // Out-of-dialog requests other than calls (OPTIONS pings of a trunk, say): answer them here.
      respond(m, from, method === 'OPTIONS' ? 200 : 405, method === 'OPTIONS' ? 'OK' : 'Method Not Allowed');
      return;
    }
    if (txns.has(ours)) return; // a retransmission of an INVITE already relayed
    const num = dialledNumber(uri);
    const target = num ? await route(num) : null;
    if (!target) {
      o.log?.info({ to: num ?? uri }, 'simulated carrier: unroutable destination');
      respond(m, from, 404, 'Not Found');
      return;
    }
    const fwd: Message = { ...m, headers: [...m.headers] };
    const list = vias(m);
    // RFC 3581: record where the request really came from, so responses find their way back.
    let first = list[0]!;
    if (/;\s*rport(?=;|$)/i.test(first)) first = first.replace(/;\s*rport(?=;|$)/i, `;rport=${from.port}`);
    if (!viaParam(first, 'received')) first += `;received=${from.host}`;
    setVias(fwd, [`SIP/2.0/UDP ${sentBy};branch=${ours}`, first, ...list.slice(1)]);
    fwd.startLine = `INVITE ${uri.replace(/@[^;>]+/, `@${target.host}:${target.port}`)} SIP/2.0`;
    const mf = get(m, 'max-forwards');
    fwd.headers = fwd.headers.map(([n, v]) => (norm(n) === 'max-forwards' ? [n, String(Math.max(0, Number(mf) - 1))] : [n, v]));
    const t: Transaction = { target, request: m, client: from, answered: false, timer: null, forwarded: fwd };
    t.timer = setTimeout(() => {
      t.timer = null;
      if (t.answered) return;
      o.log?.info({ to: num, target }, 'simulated carrier: no response from the destination');
      respond(m, from, 480, 'Temporarily Unavailable');
    }, o.noAnswerMs);
    txns.set(ours, t);
    // Forget the transaction after Timer C's worth of time (3 minutes), whatever happened.
    setTimeout(() => txns.delete(ours), 180_000).unref();
    send(fwd, target);
  };

  const onResponse = (m: Message) => {
    const list = vias(m);
    const top = list[0];
    if (!top || !top.includes(sentBy)) return;
    const branch = viaParam(top, 'branch')?.[1] ?? '';
    const t = txns.get(branch);
    if (t) {
      t.answered = true;
      if (t.timer) {
        clearTimeout(t.timer);
        t.timer = null;
      }
    }
    const next = list[1];
    const to = next ? viaTarget(next) : null;
    if (!to) return;
    setVias(m, list.slice(1));
    send(m, to);
  };

  socket.on('message', (buf, rinfo) => {
    const m = parse(buf);
    if (!m) return;
    const from = { host: rinfo.address, port: rinfo.port };
    if (m.startLine.startsWith('SIP/2.0 ')) onResponse(m);
    else void onRequest(m, from).catch((err: unknown) => o.log?.warn({ err }, 'simulated carrier: request failed'));
  });

  return {
    address: { host: me.address, port: me.port },
    async close() {
      for (const t of txns.values()) if (t.timer) clearTimeout(t.timer);
      txns.clear();
      await new Promise<void>((r) => socket.close(() => r()));
    },
  };
}

/** `udp:127.0.0.1:5060` (the simulated inventory's ingress of a held number) -> its address. */
function ingressTarget(ingress: string | null): SipTarget | null {
  if (!ingress) return null;
  const m = /^(?:udp|tcp|tls):(.+)$/.exec(ingress);
  return m ? parseHostPort(m[1]!) : null;
}

interface EdgeHost {
  config: { CARRIER: string; SIMULATED_CARRIER_ROUTES: string; SIMULATED_CARRIER_NO_ANSWER_SECONDS: number; SIMULATED_CARRIER_TERMINATION_ADDRESS?: string };
  sql: import('postgres').Sql;
  log: Logger;
}

/**
 * Started with the control plane when CARRIER=simulated, on the address the simulated numbers' outbound trunks
 * point at (SIMULATED_CARRIER_TERMINATION_ADDRESS, 127.0.0.1:5080 by default). One per machine is enough: when
 * another process already holds the address, this one carries on without it.
 */
export async function startSimulatedCarrierEdge(services: EdgeHost): Promise<SimulatedEdge | null> {
  const { config, log } = services;
  if (config.CARRIER !== 'simulated') return null;
  const listen = config.SIMULATED_CARRIER_TERMINATION_ADDRESS ?? '127.0.0.1:5080';
  try {
    const edge = await startSimulatedEdge({
      listen,
      routes: parseRoutes(config.SIMULATED_CARRIER_ROUTES),
      noAnswerMs: config.SIMULATED_CARRIER_NO_ANSWER_SECONDS * 1000,
      log,
      // A number a customer holds rings at its ingress: calling your own number reaches your own agent.
      lookup: async (num) => ingressTarget(await simulatedIngress(services.sql, num)),
    });
    log.info({ address: edge.address }, 'simulated carrier termination edge listening');
    return edge;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      log.info({ listen }, 'simulated carrier termination edge: address in use (another process serves it)');
      return null;
    }
    throw err;
  }
}
