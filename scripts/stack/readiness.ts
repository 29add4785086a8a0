// Readiness probes: each answers true once the service does its job, never throws.
import net from 'node:net';
import type { Service } from './process.ts';

export async function httpOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

export function tcpOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host });
    s.setTimeout(1000);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(false));
  });
}

/** A Redis PING over RESP (inline command). */
export function redisPing(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host });
    let buf = '';
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(1000, () => done(false));
    s.once('connect', () => s.write('PING\r\n'));
    s.on('data', (d) => {
      buf += d.toString('latin1');
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG'));
    });
    s.once('error', () => done(false));
  });
}

export class NotReadyError extends Error {
  override name = 'NotReadyError';
}

/** Polls `probe` until it passes; fails early, with the log's end, when the service exits. */
export async function waitReady(service: Service | null, what: string, probe: () => Promise<boolean>, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 500)) {
    signal?.throwIfAborted();
    if (await probe()) return;
    if (service && !service.running) {
      throw new NotReadyError(`${what} exited (code ${service.exitCode}) before it was ready; log ${service.logPath}:\n${service.tail()}`);
    }
    if (Date.now() > deadline) {
      throw new NotReadyError(`${what} not ready after ${timeoutMs} ms` + (service ? `; log ${service.logPath}:\n${service.tail()}` : ''));
    }
    await new Promise((r) => setTimeout(r, delay));
  }
}
