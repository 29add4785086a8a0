// bench:firstaudio's reading of the SIP bridge's log (bench/first-audio/bridge-log.ts), on lines shaped as livekit-sip
// v1.8.0 writes them at info level: each call's 200 OK and first subscribed track, by the caller's number.
import { describe, expect, it } from 'vitest';
import { bridgeTimesByCaller } from '../bench/first-audio/bridge-log.ts';

const line = (msg: string, ts: number, fromUser: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ level: 'info', ts, logger: 'sip', msg, callID: 'SCL_x', sipCallID: 'c-1@vap-test', fromUser, toUser: '+14155550100', ...extra });

describe('bridgeTimesByCaller', () => {
  it("takes each caller's answer and the first track it subscribed to, in wall-clock ms", () => {
    const log = [
      line('processing invite', 1795926106.8862, '+1555010000'),
      line('Accepting the call', 1795926107.134, '+1555010000', { room: 'pn-1_+1555010000_x' }),
      line('track subscribed', 1795926107.158, '+1555010000', { participant: 'agent-1', kind: 'audio' }),
      // A later track (a transfer's second agent, say) is not the greeting's.
      line('track subscribed', 1795926109.5, '+1555010000', { participant: 'agent-2', kind: 'audio' }),
      line('Accepting the call', 1795926116.6279, '+1555010001'),
      'not json {',
      '{"msg":"track subscribed","ts":"late"}',
      '',
    ].join('\n');
    const times = bridgeTimesByCaller(log);
    expect(times.get('+1555010000')?.answeredAt).toBeCloseTo(1795926107134, 0);
    expect(times.get('+1555010000')?.subscribedAt).toBeCloseTo(1795926107158, 0);
    expect(times.get('+1555010001')).toEqual({ answeredAt: expect.closeTo(1795926116627.9, 0) });
    expect(times.size).toBe(2);
  });
});
