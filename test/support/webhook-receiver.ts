// A real HTTP receiver for webhook tests (node:http on 127.0.0.1): records every request and answers as the
// test scripts it, per path. Also used by the webhook benchmark.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  at: number;
  /** Set when the sender hung up before an answer was written. */
  aborted: boolean;
}

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answer (until `release()`); the sender's timeout or cancellation ends the request. */
  hang?: boolean;
}

export type Script = (req: Received, nth: number) => Answer;

export class Receiver {
  readonly requests: Received[] = [];
  private readonly scripts = new Map<string, Script>();
  private readonly counts = new Map<string, number>();
  private readonly held = new Set<http.ServerResponse>();
  private waiters: (() => void)[] = [];
  private server!: http.Server;
  port = 0;

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown = null;
        try {
          json = JSON.parse(body);
        } catch {
          /* not JSON */
        }
        const path = req.url ?? '/';
        const rec: Received = { path, headers: req.headers, body, json, at: performance.now(), aborted: false };
        const nth = (this.counts.get(path) ?? 0) + 1;
        this.counts.set(path, nth);
        this.requests.push(rec);
        const answer: Answer = (this.scripts.get(path) ?? (() => ({})))(rec, nth);
        res.on('close', () => {
          if (!res.writableFinished) rec.aborted = true;
          this.held.delete(res);
          this.notify();
        });
        if (answer.hang) {
          this.held.add(res);
        } else {
          res.writeHead(answer.status ?? 200, { 'content-type': 'text/plain', ...answer.headers });
          res.end(answer.body ?? 'ok');
        }
        this.notify();
      });
    });
    this.server.keepAliveTimeout = 10_000;
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  script(path: string, fn: Script): void {
    this.scripts.set(path, fn);
  }

  at(path: string): Received[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Answers every held request with 200. */
  release(): void {
    for (const res of this.held) {
      res.writeHead(200);
      res.end('released');
    }
    this.held.clear();
  }

  private notify(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves once `cond` holds (re-checked on every request and hang-up); fails after `timeoutMs`. */
  async until(cond: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!cond()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`receiver: timed out waiting for ${what}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 250));
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** Polls `fn` until it returns a truthy value (for state that lives in the database). */
export async function eventually<T>(fn: () => Promise<T | null | undefined | false>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
