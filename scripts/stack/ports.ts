// Free local ports for a stack of its own. A port is free when we can bind it; the child binds it a moment
// later, so a collision stays possible but unlikely (the kernel hands out ephemeral ports in rotation).
import net from 'node:net';
import dgram from 'node:dgram';
import { randomInt } from 'node:crypto';

export function freeTcpPort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export function tcpPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}

export function udpPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    s.once('error', () => {
      s.close();
      resolve(false);
    });
    s.bind(port, host, () => s.close(() => resolve(true)));
  });
}

/** A port free on both TCP and UDP (SIP listens on both). */
export async function freeTcpUdpPort(host = '127.0.0.1'): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await freeTcpPort(host);
    if (await udpPortFree(port, host)) return port;
  }
  throw new Error('no port free on both TCP and UDP');
}

export async function freeUdpPort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket('udp4');
    s.once('error', reject);
    s.bind(0, host, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** A block of `size` consecutive UDP ports, none bound now, below the kernel's ephemeral range. */
export async function freeUdpRange(size: number, host = '127.0.0.1'): Promise<[number, number]> {
  for (let i = 0; i < 50; i++) {
    const start = randomInt(20_000, 30_000 - size);
    let ok = true;
    for (let p = start; p < start + size && ok; p++) ok = await udpPortFree(p, host);
    if (ok) return [start, start + size - 1];
  }
  throw new Error(`no block of ${size} free UDP ports`);
}

export interface PortProbes {
  tcp: () => Promise<number>;
  udp: () => Promise<number>;
  tcpUdp: () => Promise<number>;
}

/**
 * Free ports for the services of one stack, never the same port twice. Each probe releases its port before the
 * next one runs, and the kernel may hand that port out again: two services of one stack were once given one
 * port (the worker's health server and LiveKit's HTTP port), the worker died on EADDRINUSE, and its readiness
 * probe was answered by LiveKit.
 */
export class PortPicker {
  readonly #taken = new Set<number>();
  readonly #probes: PortProbes;

  constructor(probes: PortProbes = { tcp: () => freeTcpPort(), udp: () => freeUdpPort(), tcpUdp: () => freeTcpUdpPort() }) {
    this.#probes = probes;
  }

  /** A port fixed by the caller: never handed out by a probe. */
  take(port: number): number {
    this.#taken.add(port);
    return port;
  }

  tcp(): Promise<number> {
    return this.#distinct(this.#probes.tcp);
  }

  udp(): Promise<number> {
    return this.#distinct(this.#probes.udp);
  }

  tcpUdp(): Promise<number> {
    return this.#distinct(this.#probes.tcpUdp);
  }

  async #distinct(probe: () => Promise<number>): Promise<number> {
    for (let i = 0; i < 100; i++) {
      const port = await probe();
      if (!this.#taken.has(port)) return this.take(port);
    }
    throw new Error('no free port that this stack has not taken already');
  }
}
