// The SSRF guard against a real local server: address classes, allowlist by URL host, DNS rebinding,
// pinning of the checked address, and redirects.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkUrl, createGuardedAgent, describeRequestError, guardedRequest, isPublicAddress, parseAllowHosts, SsrfBlockedError, type Resolver, type SsrfOptions } from './ssrf.ts';

let server: http.Server;
let port: number;
const hits: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    hits.push(`${req.headers.host} ${req.url}`);
    if (req.url === '/redirect') {
      res.writeHead(302, { location: `http://127.0.0.1:${port}/target` });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('x'.repeat(req.url === '/big' ? 10_000 : 2));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('isPublicAddress', () => {
  it.each([
    ['93.184.216.34', true],
    ['8.8.8.8', true],
    ['2606:4700:4700::1111', true],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['192.168.1.1', false],
    ['127.0.0.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['224.0.0.1', false],
    ['255.255.255.255', false],
    ['192.0.2.1', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fc00::1', false],
    ['ff02::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['::ffff:8.8.8.8', true],
    ['64:ff9b::a00:1', false],
    ['2002:a00:1::', false],
  ])('%s -> %s', (ip, expected) => expect(isPublicAddress(ip)).toBe(expected));
});

describe('checkUrl', () => {
  const opts: SsrfOptions = { allowHosts: parseAllowHosts('127.0.0.1, ::1, localhost') };
  it('refuses private literals and local names unless the host is allowlisted', () => {
    for (const u of ['http://10.0.0.1/', 'http://[::ffff:127.0.0.1]/', 'http://169.254.169.254/latest', 'http://127.0.0.2/', 'http://foo.internal/', 'http://intranet/'])
      expect(() => checkUrl(u, opts), u).toThrow(SsrfBlockedError);
    for (const u of ['http://127.0.0.1:8080/x', 'http://[::1]/', 'http://localhost/', 'https://hooks.example.com/x']) expect(checkUrl(u, opts).href).toBe(new URL(u).href);
  });
  it('requires https when asked', () => {
    expect(() => checkUrl('http://hooks.example.com/', { requireHttps: true })).toThrow('https is required');
    expect(() => checkUrl('ftp://hooks.example.com/', {})).toThrow(SsrfBlockedError);
    expect(() => checkUrl('https://user:pw@hooks.example.com/', {})).toThrow(SsrfBlockedError);
  });
});

describe('guardedRequest', () => {
  const resolverFrom = (answers: Record<string, string[]>): Resolver & { calls: string[] } => {
    const calls: string[] = [];
    const fn = async (host: string) => {
      calls.push(host);
      const list = answers[host];
      const next = list && list.length > 1 ? list.shift()! : list?.[0];
      if (!next) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return [{ address: next, family: next.includes(':') ? 6 : 4 }];
    };
    return Object.assign(fn, { calls });
  };

  it('blocks a public name that resolves to loopback, although 127.0.0.1 itself is allowlisted', async () => {
    const resolve = resolverFrom({ 'rebind.example.com': ['93.184.216.34', '127.0.0.1'] });
    const opts: SsrfOptions = { allowHosts: ['127.0.0.1'], resolve };
    // The first answer is public (what a check at creation time would see); the connection gets loopback.
    expect(checkUrl(`http://rebind.example.com:${port}/`, opts)).toBeTruthy();
    await resolve('rebind.example.com');
    const agent = createGuardedAgent(opts);
    const before = hits.length;
    const err = await guardedRequest(agent, `http://rebind.example.com:${port}/`, opts, { timeoutMs: 2000 }).catch((e) => e);
    expect(describeRequestError(err)).toMatchObject({ kind: 'blocked' });
    expect(hits.length).toBe(before);
    await agent.close();
  });

  it('connects to the address it checked, not to a second answer', async () => {
    // Allowlisted name: the first answer (loopback) is used for the connection; a second lookup would give
    // an unroutable address and fail.
    const resolve = resolverFrom({ 'pinned.test': ['127.0.0.1', '10.255.255.1'] });
    const opts: SsrfOptions = { allowHosts: ['pinned.test'], resolve };
    const agent = createGuardedAgent(opts);
    const res = await guardedRequest(agent, `http://pinned.test:${port}/pin`, opts, { timeoutMs: 2000 });
    expect(res.status).toBe(200);
    expect(resolve.calls).toEqual(['pinned.test']);
    expect(hits.at(-1)).toBe(`pinned.test:${port} /pin`);
    await agent.close();
  });

  it('does not follow redirects, and truncates bodies', async () => {
    const opts: SsrfOptions = { allowHosts: ['127.0.0.1'] };
    const agent = createGuardedAgent(opts);
    const before = hits.length;
    const res = await guardedRequest(agent, `http://127.0.0.1:${port}/redirect`, opts, { timeoutMs: 2000 });
    expect(res.status).toBe(302);
    expect(hits.slice(before)).toEqual([`127.0.0.1:${port} /redirect`]);
    const big = await guardedRequest(agent, `http://127.0.0.1:${port}/big`, opts, { timeoutMs: 2000, maxResponseBytes: 100 });
    expect(big).toMatchObject({ status: 200, truncated: true });
    expect(big.body.length).toBe(100);
    await agent.close();
  });

  it('names DNS failures and refused connections', async () => {
    const opts: SsrfOptions = { allowHosts: ['127.0.0.1'], resolve: resolverFrom({}) };
    const agent = createGuardedAgent(opts);
    const dnsErr = await guardedRequest(agent, 'http://nowhere.example.com/', opts, { timeoutMs: 2000 }).catch((e) => e);
    expect(describeRequestError(dnsErr).kind).toBe('dns');
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const refused = await guardedRequest(agent, `http://127.0.0.1:${freePort}/`, opts, { timeoutMs: 2000 }).catch((e) => e);
    expect(describeRequestError(refused).kind).toBe('connection_refused');
    await agent.close();
  });
});
