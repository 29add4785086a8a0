// Outbound HTTP to customer-supplied URLs (webhooks, function tools, knowledge crawling) without letting a
// URL reach the platform's own network:
//  - only http(s); https only when `requireHttps` (production);
//  - the host must resolve to public unicast addresses: private, loopback, link-local, multicast, CGNAT,
//    reserved, documentation and unspecified ranges are refused, for IPv4 and IPv6, including IPv4-mapped
//    and IPv4-embedding IPv6 forms;
//  - the check runs inside the socket's own DNS lookup, so the address that was checked is the address the
//    connection uses: a DNS answer that changes between a check and the connection (rebinding) can't slip in;
//  - redirects are never followed (a 3xx is returned as is);
//  - `allowHosts` names URL hosts (names or literal addresses, e.g. "127.0.0.1,::1,localhost") that may be
//    private anyway: tests and local development only. It matches the URL's host, not resolved addresses, so
//    a public name that resolves to loopback stays blocked even when 127.0.0.1 is allowed;
//  - `allowCidrs` names private ranges that may be reached (the operator's LAN for self-hosted models, see
//    shared/model-egress.ts); unlike `allowHosts` they match addresses, literal or resolved.
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, fetch as undiciFetch, request, type Dispatcher, type RequestInit as UndiciRequestInit } from 'undici';

export class SsrfBlockedError extends Error {
  override name = 'SsrfBlockedError';
  readonly code = 'ERR_SSRF_BLOCKED';
}

export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export interface SsrfOptions {
  /** URL hosts allowed to be private (tests, local development). */
  allowHosts?: readonly string[];
  /** Refuse plain http (production). */
  requireHttps?: boolean;
  /** Private ranges that may be reached anyway ("10.20.0.0/16"), matched against the address itself. */
  allowCidrs?: readonly string[];
  /** Appended to a refusal's message: how an operator could allow it. */
  blockedHint?: string;
  /** DNS resolution; defaults to the system resolver (getaddrinfo, like every other client on the host). */
  resolve?: Resolver;
}

const systemResolve: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, order: 'verbatim' });

/** Parses a comma-separated allowlist ("127.0.0.1, ::1, localhost"). */
export function parseAllowHosts(list: string | undefined): string[] {
  return (list ?? '')
    .split(',')
    .map((s) => normaliseHost(s.trim()))
    .filter(Boolean);
}

const normaliseHost = (host: string) => host.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();

/** True for a public unicast address (the only kind a customer URL may reach). */
export function isPublicAddress(ip: string): boolean {
  if (!ipaddr.isValid(ip)) return false;
  let addr = ipaddr.parse(ip);
  if (addr.kind() === 'ipv6') {
    const v6 = addr as ipaddr.IPv6;
    // ::ffff:a.b.c.d reaches a.b.c.d; judge the IPv4 address it carries.
    if (v6.isIPv4MappedAddress()) addr = v6.toIPv4Address();
  }
  // ipaddr.js names every special-purpose block (private, loopback, linkLocal, uniqueLocal, multicast,
  // carrierGradeNat, reserved, unspecified, broadcast, rfc6052, 6to4, teredo...); only `unicast` is public.
  return addr.range() === 'unicast';
}

function isAllowed(host: string, opts: SsrfOptions): boolean {
  return (opts.allowHosts ?? []).includes(normaliseHost(host));
}

/** True when `ip` lies in one of `cidrs` (an IPv4-mapped IPv6 address is judged as its IPv4 address). */
export function inCidrs(ip: string, cidrs: readonly string[] = []): boolean {
  if (!cidrs.length || !ipaddr.isValid(ip)) return false;
  let addr = ipaddr.parse(ip);
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) addr = (addr as ipaddr.IPv6).toIPv4Address();
  return cidrs.some((c) => {
    try {
      const range = ipaddr.parseCIDR(c);
      return range[0].kind() === addr.kind() && addr.match(range);
    } catch {
      return false;
    }
  });
}

/** A refusal, with the options' hint on how it could be allowed. */
const blocked = (message: string, opts: SsrfOptions) => new SsrfBlockedError(opts.blockedHint ? `${message} (${opts.blockedHint})` : message);

/**
 * Checks what can be checked without DNS: scheme, https in production, literal addresses and local names.
 * Throws SsrfBlockedError. Names are resolved (and checked) at connection time by the guarded agent.
 */
export function checkUrl(raw: string | URL, opts: SsrfOptions = {}): URL {
  let url: URL;
  try {
    url = typeof raw === 'string' ? new URL(raw) : raw;
  } catch {
    throw new SsrfBlockedError('not a valid URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new SsrfBlockedError(`scheme ${url.protocol} is not allowed`);
  if (url.username || url.password) throw new SsrfBlockedError('credentials in the URL are not allowed');
  const host = normaliseHost(url.hostname);
  if (isAllowed(host, opts)) return url;
  // An allowed private range is the operator's own network: plain http is accepted there, as for allowHosts.
  if (net.isIP(host) && inCidrs(host, opts.allowCidrs)) return url;
  if (opts.requireHttps && url.protocol !== 'https:') throw new SsrfBlockedError('https is required');
  if (net.isIP(host)) {
    if (!isPublicAddress(host)) throw blocked(`address ${host} is not public`, opts);
  } else if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal') || !host.includes('.')) {
    // Names that only mean something inside a network.
    throw blocked(`host ${host} is not public`, opts);
  }
  return url;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/** A `net.connect` lookup that resolves once, refuses non-public answers and hands over what it checked. */
export function guardedLookup(opts: SsrfOptions) {
  const resolve = opts.resolve ?? systemResolve;
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    const host = normaliseHost(hostname);
    resolve(host).then(
      (answers) => {
        const usable = isAllowed(host, opts) ? answers : answers.filter((a) => isPublicAddress(a.address) || inCidrs(a.address, opts.allowCidrs));
        const wanted = options.family === 4 || options.family === 6 ? usable.filter((a) => a.family === options.family) : usable;
        if (!wanted.length) {
          const seen = answers.map((a) => a.address).join(', ') || 'nothing';
          callback(blocked(`host ${host} resolves to no public address (${seen})`, opts), '');
          return;
        }
        if (options.all) callback(null, wanted);
        else callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (err: unknown) => callback(err as NodeJS.ErrnoException, ''),
    );
  };
}

/** An undici Agent whose connections only reach checked public addresses. Reuse it: it pools connections. */
export function createGuardedAgent(opts: SsrfOptions & { connectionsPerOrigin?: number; connectTimeoutMs?: number } = {}): Agent {
  return new Agent({
    connect: { lookup: guardedLookup(opts), timeout: opts.connectTimeoutMs ?? 10_000 },
    connections: opts.connectionsPerOrigin ?? null,
    keepAliveTimeout: 4_000,
  });
}

/**
 * A `fetch` for SDK clients (OpenAI, Anthropic) that only reaches what the guard allows: the URL is checked
 * first (literal addresses never reach the lookup), names are checked when the agent connects, and a redirect
 * is returned as is, never followed.
 */
export function guardedFetch(agent: Agent, ssrf: SsrfOptions): typeof fetch {
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // The SDKs pass a URL and an init; a Request object (another realm's class) is not needed.
    if (typeof input !== 'string' && !(input instanceof URL)) throw new TypeError('guardedFetch takes a URL and an init, not a Request');
    const url = checkUrl(input.toString(), ssrf);
    // The global fetch's types and undici's differ only in name (FormData, BodyInit); the objects are the same.
    const options = { ...init, redirect: 'manual', dispatcher: agent } as unknown as UndiciRequestInit;
    return undiciFetch(url, options);
  };
  return guarded;
}

export interface GuardedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body, cut at `maxResponseBytes` (decoded as UTF-8). */
  body: string;
  truncated: boolean;
}

export interface GuardedRequestOptions {
  method?: Dispatcher.HttpMethod;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Whole request, connection to last byte read. */
  timeoutMs: number;
  maxResponseBytes?: number;
  signal?: AbortSignal;
}

export class RequestTimeoutError extends Error {
  override name = 'RequestTimeoutError';
  readonly code = 'ERR_REQUEST_TIMEOUT';
}

/** One request through a guarded agent. Never follows redirects. */
export async function guardedRequest(agent: Agent, rawUrl: string | URL, ssrf: SsrfOptions, o: GuardedRequestOptions): Promise<GuardedResponse> {
  const url = checkUrl(rawUrl, ssrf);
  const timeout = AbortSignal.timeout(o.timeoutMs);
  const signal = o.signal ? AbortSignal.any([o.signal, timeout]) : timeout;
  const max = o.maxResponseBytes ?? 64 * 1024;
  try {
    const res = await request(url, {
      method: o.method ?? 'GET',
      headers: o.headers,
      body: o.body ?? null,
      dispatcher: agent,
      signal,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    for await (const chunk of res.body) {
      const buf = chunk as Buffer;
      if (size + buf.length > max) {
        chunks.push(buf.subarray(0, max - size));
        truncated = true;
        break; // leaving the loop destroys the stream; the rest is never read
      }
      chunks.push(buf);
      size += buf.length;
    }
    return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), truncated };
  } catch (err) {
    if (timeout.aborted) throw new RequestTimeoutError(`no complete answer within ${o.timeoutMs} ms`, { cause: err });
    throw err;
  }
}

/** A short, stable description of a failed request: `timeout`, `dns`, `connection_refused`, `tls`... */
export function describeRequestError(err: unknown): { kind: string; message: string } {
  const chain: unknown[] = [];
  for (let e: unknown = err; e && chain.length < 6; e = (e as { cause?: unknown }).cause) {
    chain.push(e);
    if (e instanceof AggregateError) chain.push(...(e.errors as unknown[]));
  }
  const codes = chain.map((e) => String((e as { code?: unknown }).code ?? ''));
  const first = (err as Error)?.message ?? String(err);
  const has = (pred: (c: string) => boolean) => codes.some(pred);
  const blocked = chain.find((e) => e instanceof SsrfBlockedError) as Error | undefined;
  if (blocked) return { kind: 'blocked', message: `blocked: ${blocked.message}` };
  if (chain.some((e) => e instanceof RequestTimeoutError) || has((c) => c === 'UND_ERR_HEADERS_TIMEOUT' || c === 'UND_ERR_BODY_TIMEOUT' || c === 'UND_ERR_CONNECT_TIMEOUT' || c === 'ETIMEDOUT'))
    return { kind: 'timeout', message: 'timeout: no complete answer in time' };
  if (has((c) => c === 'ENOTFOUND' || c === 'EAI_AGAIN' || c === 'EAI_FAIL' || c === 'EAI_NODATA' || c === 'EAI_NONAME'))
    return { kind: 'dns', message: `dns: the host name could not be resolved (${codes.find((c) => c.startsWith('E'))})` };
  if (has((c) => c === 'ECONNREFUSED')) return { kind: 'connection_refused', message: 'connection refused' };
  if (has((c) => c === 'ECONNRESET' || c === 'UND_ERR_SOCKET' || c === 'EPIPE')) return { kind: 'connection_reset', message: 'connection reset by the receiver' };
  if (has((c) => c === 'EHOSTUNREACH' || c === 'ENETUNREACH')) return { kind: 'unreachable', message: 'host unreachable' };
  if (has((c) => c.startsWith('ERR_TLS') || c.startsWith('ERR_SSL') || c.includes('CERT') || c === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'))
    return { kind: 'tls', message: `tls: ${first}` };
  return { kind: 'network', message: `network: ${first}` };
}
