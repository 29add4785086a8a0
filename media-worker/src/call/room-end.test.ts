// What ends a job under its call, before any room is involved: the reason a room's close is recorded with, and the
// worker's shutdown request reaching the job process over agents-js's IPC (an EventEmitter stands in for the
// process's IPC channel; the room's own close is exercised on the real stack by test/e2e/call-end.test.ts).
import { EventEmitter } from 'node:events';
import { DisconnectReason } from '@livekit/rtc-node';
import { describe, expect, it } from 'vitest';
import { CallEndWatch, endOfRoom } from './room-end.ts';

describe('endOfRoom', () => {
  it('a deleted room is a stop, a room closed after everyone left a hang-up, anything else an error naming the cause', () => {
    expect(endOfRoom(DisconnectReason.ROOM_DELETED, 5)).toEqual({ reason: 'api_stop', at: 5 });
    expect(endOfRoom(DisconnectReason.ROOM_CLOSED, 5)).toEqual({ reason: 'user_hangup', at: 5 });
    expect(endOfRoom(DisconnectReason.SIGNAL_CLOSE, 5)).toMatchObject({ reason: 'error', error: expect.stringContaining('SIGNAL_CLOSE') });
    expect(endOfRoom(undefined, 5)).toMatchObject({ reason: 'error', error: expect.stringContaining('UNKNOWN_REASON') });
  });
});

describe('CallEndWatch', () => {
  it("ends on the job process's shutdown request, once, and stops listening when disposed", async () => {
    const proc = new EventEmitter();
    const watch = new CallEndWatch();
    watch.watchShutdownRequest(proc as unknown as NodeJS.Process);
    proc.emit('message', { case: 'pingRequest', value: { timestamp: 1 } });
    expect(watch.state).toBeNull();
    proc.emit('message', { case: 'shutdownRequest', value: { reason: 'shutdown request' } });
    await expect(watch.closed).resolves.toMatchObject({ reason: 'worker_shutdown' });
    watch.endedByControlPlane();
    expect(watch.state?.reason).toBe('worker_shutdown');
    watch.dispose();
    expect(proc.listenerCount('message')).toBe(0);
  });

  it('ends as a stop when the control plane says the call has already ended', async () => {
    const watch = new CallEndWatch();
    watch.endedByControlPlane(42);
    await expect(watch.closed).resolves.toEqual({ reason: 'api_stop', at: 42 });
  });
});
