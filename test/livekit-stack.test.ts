// The local LiveKit stack, for real: a LiveKit server (and the SIP bridge, when setup built it) on free
// ports with its own Redis, two WebRTC clients in one room, speech one way, and a real SIP call out to a
// SIPp user agent.
import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { RoomServiceClient, SipClient } from 'livekit-server-sdk';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startStack, useStack, sipBridgeVersion } from './support/stack.ts';
import { RtcClient, disposeRtc, roomToken } from './support/rtc-client.ts';
import { until } from './support/e2e.ts';
import { synthesize, transcribe, wordErrorRate } from './support/speech.ts';
import { SipCallee } from './support/sip-callee.ts';
import { hangUpRoom } from '../media-worker/src/session/hang-up.ts';
import { WorkerMetrics } from '../media-worker/src/metrics.ts';

const stack = await useStack({ sip: 'if-built' });
const rooms = new RoomServiceClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
afterAll(() => disposeRtc());

const token = (room: string, identity: string) => roomToken(stack, room, identity, { ttl: '10m' });

describe('LiveKit stack', () => {
  it('carries speech between two real WebRTC clients', { timeout: 90_000 }, async () => {
    const room = `stack-${randomUUID()}`;
    await rooms.createRoom({ name: room, emptyTimeout: 60 });
    const sentence = 'the quick brown fox jumps over the lazy dog';
    const speech = await synthesize(sentence);

    const listener = await RtcClient.join(stack.livekitUrl, await token(room, 'listener'));
    const speaker = await RtcClient.join(stack.livekitUrl, await token(room, 'speaker'));
    try {
      const recorder = listener.record({ from: 'speaker' });
      await speaker.publishMicrophone();
      const participants = await rooms.listParticipants(room);
      expect(participants.map((p) => p.identity).sort()).toEqual(['listener', 'speaker']);

      // Let the subscription settle (the recorder sees frames), so the first words are not cut.
      await recorder.until(() => recorder.firstFrameAt !== undefined, 20_000, 'the first audio frame');
      const spoken = await speaker.speak(speech, { trailingSilenceMs: 300 });
      const heard = await recorder.utterance({ silenceMs: 800, timeoutMs: 30_000 });
      await recorder.stop();

      expect(recorder.firstSpeechAt).toBeGreaterThanOrEqual(spoken.startedAt);
      const text = await transcribe(heard);
      expect(wordErrorRate(sentence, text), `heard "${text}"`).toBeLessThanOrEqual(0.25);
    } finally {
      await speaker.leave();
      await listener.leave();
      await rooms.deleteRoom(room).catch(() => {});
    }
  });

  it.skipIf(!sipBridgeVersion())('has a SIP bridge that places a real call into a room', { timeout: 150_000 }, async () => {
    expect(stack.sipAddress).toBeDefined();
    const sip = new SipClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);

    // Trunks and rules live in the server (Redis).
    const inbound = await sip.createSipInboundTrunk('stack test inbound', ['+15550100']);
    expect((await sip.listSipInboundTrunk()).map((t) => t.sipTrunkId)).toContain(inbound.sipTrunkId);

    // A call needs the bridge itself: LiveKit asks it over Redis, it dials SIPp, SIPp answers. The callee is
    // listening before the dial (a SIPp that failed to bind would leave the bridge's INVITE unanswered).
    const callee = await SipCallee.start('answer');
    const room = `sip-${randomUUID()}`;
    try {
      await rooms.createRoom({ name: room, emptyTimeout: 60 });
      const outbound = await sip.createSipOutboundTrunk('stack test outbound', callee.address, ['+15550100']);
      const call = await sip.createSipParticipant(outbound.sipTrunkId, '+15550199', room, { participantIdentity: 'phone', waitUntilAnswered: true });
      expect(call.participantIdentity).toBe('phone');
      // SIPp notes the answer once the bridge's ACK arrives, just after the request returned.
      await callee.waitFor("the bridge's ACK", () => callee.answered, 20_000);
      callee.startMedia();
      // The answer reaches the caller (the request returns) and the participant's attributes separately: the
      // bridge joined the room as 'ringing' and updates `sip.callStatus` in the room on its own path, so the
      // room may still say 'ringing' just after the answer. Waited for, with a bound.
      // On a timeout the error says what the room showed last (the phone gone, or its status stuck).
      let seen = 'no phone participant';
      const phone = await until(
        "the phone's sip.callStatus active in the room",
        async () => {
          const p = (await rooms.listParticipants(room)).find((x) => x.identity === 'phone');
          if (p) seen = `phone ${JSON.stringify(p.attributes)}, state ${p.state}`;
          return p?.attributes['sip.callStatus'] === 'active' && p;
        },
        45_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; the room showed ${seen}; the callee got ${callee.invites.length} INVITE(s)`);
      });
      expect(phone.attributes['sip.trunkID']).toBe(outbound.sipTrunkId);
      await rooms.removeParticipant(room, 'phone');
      await sip.deleteSipTrunk(outbound.sipTrunkId);
    } finally {
      await rooms.deleteRoom(room).catch(() => {});
      await sip.deleteSipTrunk(inbound.sipTrunkId).catch(() => {});
      await callee.close();
    }
  });

  it('takes a hang-up of a room that is already gone as done: no error, no failure counted', async () => {
    // The stop of a call deletes its room before the worker's own hang-up does; LiveKit answers 404 then.
    const room = `gone-${randomUUID()}`;
    await rooms.createRoom({ name: room, emptyTimeout: 60 });
    await rooms.deleteRoom(room);
    const errors: unknown[] = [];
    const m = new WorkerMetrics();
    const logger = { error: (o: unknown) => errors.push(o), debug: () => {} };
    expect(await hangUpRoom({ rooms, room, callType: 'web', logger: logger as never, metrics: m })).toBe(true);
    expect(errors).toEqual([]);
    expect(await m.registry.metrics()).not.toContain('voice_call_action_failures_total{action="hang_up"');
    // A LiveKit that refuses the request (a wrong secret) is still a failure, logged and counted.
    const wrong = new RoomServiceClient(stack.livekitHttpUrl, stack.apiKey, 'not-the-secret-not-the-secret-xx');
    expect(await hangUpRoom({ rooms: wrong, room, callType: 'web', logger: logger as never, metrics: m })).toBe(false);
    expect(errors).toHaveLength(1);
    expect(await m.registry.metrics()).toContain('voice_call_action_failures_total{action="hang_up",call_type="web"} 1');
  });

  it('runs a second stack with a control plane beside the first, and stops every process of it', { timeout: 90_000 }, async () => {
    const second = await startStack({ controlPlane: true, sip: false });
    let stopped = false;
    try {
      expect(second.ports.livekit).not.toBe(stack.ports.livekit);
      expect(second.redisAddress).not.toBe(stack.redisAddress);
      const ready = await fetch(`${second.controlPlaneUrl}/health/ready`);
      expect(ready.status).toBe(200);
      // LiveKit posts its webhooks to this stack's control plane.
      const config = readFileSync(path.join(second.runDir, 'livekit.yaml'), 'utf8');
      expect(config).toContain(`${second.controlPlaneUrl}/internal/livekit/webhook`);
      const other = new RoomServiceClient(second.livekitHttpUrl, second.apiKey, second.apiSecret);
      await other.createRoom({ name: 'second' });
      expect((await other.listRooms()).map((r) => r.name)).toEqual(['second']);
      expect((await rooms.listRooms()).map((r) => r.name)).not.toContain('second');

      const pids = second.services.map((s) => s.pid!);
      expect(second.services.map((s) => s.name)).toEqual(['redis', 'livekit', 'control-plane']);
      await second.stop();
      stopped = true;
      for (const pid of pids) expect(() => process.kill(pid, 0), `pid ${pid}`).toThrow();
    } finally {
      if (!stopped) await second.stop();
    }
  });
});
