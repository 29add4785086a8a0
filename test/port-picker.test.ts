// The ports of one stack are chosen one probe at a time, each released before the next: the kernel may hand the
// same port out twice, and two services then fight over it (the worker's health server once got LiveKit's port).
import { describe, expect, it } from 'vitest';
import { PortPicker, type PortProbes } from '../scripts/stack/ports.ts';

/** Probes that answer from a script, as a kernel that hands a released port out again would. */
function scripted(ports: number[]): PortProbes {
  const next = async () => {
    const p = ports.shift();
    if (p === undefined) throw new Error('script ran out');
    return p;
  };
  return { tcp: next, udp: next, tcpUdp: next };
}

describe('the ports of one stack', () => {
  it('are never the same twice, whatever the probes answer', async () => {
    const pick = new PortPicker(scripted([40001, 40001, 40002, 40001, 40002, 40003]));
    expect([await pick.tcp(), await pick.tcp(), await pick.udp()]).toEqual([40001, 40002, 40003]);
  });

  it('leave out the ports the caller fixed', async () => {
    const pick = new PortPicker(scripted([5080, 40010]));
    pick.take(5080);
    expect(await pick.tcpUdp()).toBe(40010);
  });

  it('give up with a clear error rather than loop when no new port comes', async () => {
    const pick = new PortPicker(scripted(Array.from({ length: 101 }, () => 40020)));
    await pick.tcp();
    await expect(pick.tcp()).rejects.toThrow(/no free port/);
  });

  it('are real free ports by default', async () => {
    const pick = new PortPicker();
    const ports = [await pick.tcp(), await pick.tcp(), await pick.udp(), await pick.tcpUdp()];
    expect(new Set(ports).size).toBe(4);
    for (const p of ports) expect(p).toBeGreaterThan(0);
  });
});
