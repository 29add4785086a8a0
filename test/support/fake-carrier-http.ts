// What the local carrier doubles (fake-twilio.ts, fake-telnyx.ts) share: a node:http server on port 0, a log
// of every request as it arrived on the wire, and scripted faults (an error status, a hang that lets the
// client's deadline fire, a reset connection), optionally after the request has taken effect (the outcome
// the client can't know).
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
}

export interface Fault {
  method?: string;
  /** Matches when the path contains this text (or matches this pattern). */
  path?: string | RegExp;
  /** Answer with this status and JSON body (and headers), hang without answering, or reset the socket. */
  respond: { status: number; body?: unknown; headers?: Record<string, string> } | 'hang' | 'reset';
  /** Let the request take effect first, then fault (the write happened, the client does not learn it). */
  afterEffect?: boolean;
  /** How many matching requests it applies to (default 1). */
  times?: number;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Handler = (req: RecordedRequest) => Reply;

export interface FakeCarrierServer {
  url: string;
  requests: RecordedRequest[];
  /** Scripts a fault for the next matching request(s). */
  fault(f: Fault): void;
  close(): Promise<void>;
}

export async function startFakeCarrierServer(handler: Handler): Promise<FakeCarrierServer> {
  const requests: RecordedRequest[] = [];
  const faults: (Fault & { left: number })[] = [];
  const sockets = new Set<Socket>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://fake');
      const rec: RecordedRequest = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers: req.headers, rawBody: Buffer.concat(chunks).toString('utf8') };
      requests.push(rec);
      const i = faults.findIndex((f) => (!f.method || f.method === rec.method) && (!f.path || (typeof f.path === 'string' ? rec.path.includes(f.path) : f.path.test(rec.path))));
      const fault = i >= 0 ? faults[i]! : null;
      if (fault && --fault.left <= 0) faults.splice(i, 1);
      const reply = !fault || fault.afterEffect ? handler(rec) : null;
      if (fault) {
        if (fault.respond === 'hang') return; // the socket is destroyed on close()
        if (fault.respond === 'reset') {
          req.socket.destroy();
          return;
        }
        send(res, { status: fault.respond.status, body: fault.respond.body, headers: fault.respond.headers });
        return;
      }
      send(res, reply!);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    fault: (f) => faults.push({ ...f, left: f.times ?? 1 }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function send(res: http.ServerResponse, r: Reply): void {
  const headers: Record<string, string> = { ...(r.headers ?? {}) };
  if (r.body === undefined) {
    res.writeHead(r.status, headers).end();
    return;
  }
  headers['content-type'] ??= 'application/json';
  res.writeHead(r.status, headers).end(JSON.stringify(r.body));
}

/** A URL on loopback where nothing listens (connection refused). */
export async function refusedUrl(): Promise<string> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

export const hex = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 16).toString(16)).join('');
