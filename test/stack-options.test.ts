// The stack command's ports: flags, their STACK_* twins, and the control plane's own PORT / METRICS_PORT.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { portOptions } from '../scripts/stack/cli-options.ts';

describe('stack port options', () => {
  it('give the control plane the PORT and METRICS_PORT that .env.example documents', () => {
    const { ports, notes } = portOptions({}, { PORT: '9090', METRICS_PORT: '9191' });
    expect(ports).toEqual({ controlPlane: 9090, controlPlaneMetrics: 9191 });
    expect(notes).toEqual([]);
  });

  it('keep STACK_CONTROL_PLANE_PORT as an alias that wins over PORT, and the flag over both', () => {
    expect(portOptions({}, { STACK_CONTROL_PLANE_PORT: '8181' }).ports.controlPlane).toBe(8181);
    const both = portOptions({}, { STACK_CONTROL_PLANE_PORT: '8181', PORT: '9090' });
    expect(both.ports.controlPlane).toBe(8181);
    expect(both.notes).toEqual(['controlPlane port 8181 from STACK_CONTROL_PLANE_PORT (ignoring PORT=9090)']);
    const flag = portOptions({ 'control-plane-port': '7070' }, { STACK_CONTROL_PLANE_PORT: '8181', PORT: '9090' });
    expect(flag.ports.controlPlane).toBe(7070);
    expect(flag.notes[0]).toContain('ignoring STACK_CONTROL_PLANE_PORT=8181, PORT=9090');
    // Equal values are no conflict.
    expect(portOptions({}, { STACK_CONTROL_PLANE_PORT: '9090', PORT: '9090' }).notes).toEqual([]);
  });

  it('read every other port from its flag or STACK_* twin only', () => {
    const { ports } = portOptions({ 'livekit-port': '17880' }, { STACK_REDIS_PORT: '16379', STACK_SIP_RTP_PORTS: '20000-20010' });
    expect(ports).toEqual({ livekit: 17880, redis: 16379, sipRtpStart: 20000, sipRtpEnd: 20010 });
  });

  it('refuse a value that is not a port, naming where it came from', () => {
    expect(() => portOptions({}, { PORT: 'eighty' })).toThrow('PORT: not a port: eighty');
    expect(() => portOptions({}, { PORT: '70000' })).toThrow('PORT: not a port: 70000');
    expect(() => portOptions({ 'sip-rtp-ports': '5-4' }, {})).toThrow('--sip-rtp-ports: expected START-END, got 5-4');
  });

  it('are what `npm start` uses: a bad PORT stops it before anything starts', () => {
    const r = spawnSync(process.execPath, [path.resolve('scripts/stack.ts')], { env: { ...process.env, PORT: 'nope' }, encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('stack: PORT: not a port: nope');
  });

  it('has no background mode any more', () => {
    const r = spawnSync(process.execPath, [path.resolve('scripts/stack.ts'), 'stop'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('the stack runs in the foreground');
  });
});
