// The room recorder in a real LiveKit room: a caller publishes one level, the agent another, and the uploaded
// WAV holds both, mixed, while the agent's own audio path is left alone.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AudioFrame, AudioSource, LocalAudioTrack, Room, RoomEvent, TrackPublishOptions, TrackSource } from '@livekit/rtc-node';
import { useStack, type TestStack } from '../../../test/support/stack.ts';
import { RtcClient, disposeRtc, roomToken } from '../../../test/support/rtc-client.ts';
import { createLogger } from '../../../shared/logger.ts';
import { RoomRecorder } from './room-recorder.ts';
import { waitUntil } from '../session/harness.test-support.ts';

let stack: TestStack;
const uploads: { type: string | undefined; body: Buffer }[] = [];
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    uploads.push({ type: req.headers['content-type'], body: Buffer.concat(chunks) });
    res.writeHead(204).end();
  });
});

beforeAll(async () => {
  stack = await useStack({});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
}, 120_000);
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await disposeRtc();
});

async function join(identity: string, room: string): Promise<Room> {
  return (await RtcClient.join(stack.livekitUrl, await roomToken(stack, room, identity))).room;
}

/** A 300 Hz square wave of the given amplitude: survives Opus well enough to tell the sides apart. */
async function play(source: AudioSource, amplitude: number, seconds: number): Promise<void> {
  const rate = source.sampleRate;
  for (let f = 0; f < seconds * 50; f++) {
    const n = rate / 50;
    const d = new Int16Array(n);
    for (let i = 0; i < n; i++) d[i] = Math.floor(((f * n + i) * 300 * 2) / rate) % 2 ? amplitude : -amplitude;
    await source.captureFrame(new AudioFrame(d, rate, 1, n));
  }
  await source.waitForPlayout();
}

async function publish(room: Room, name: string): Promise<AudioSource> {
  const source = new AudioSource(48000, 1);
  await room.localParticipant!.publishTrack(LocalAudioTrack.createAudioTrack(name, source), new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
  return source;
}

const rmsOf = (s: Int16Array) => Math.sqrt(s.reduce((a, v) => a + v * v, 0) / Math.max(1, s.length));

it('records the caller and the agent into one WAV and uploads it', async () => {
  const name = `rec-${Date.now()}`;
  const agent = await join('agent', name);
  const caller = await join('caller', name);
  const agentSource = await publish(agent, 'agent-voice');
  const callerSource = await publish(caller, 'mic');
  const port = (server.address() as AddressInfo).port;
  const recorder = await RoomRecorder.start({
    room: agent,
    callId: 'call_x',
    callType: 'web',
    uploadUrl: `http://127.0.0.1:${port}/upload`,
    logger: createLogger('test', 'silent'),
  });
  // Wait until the agent's room has the caller's track, as the worker's does once the call runs.
  const callerTrack = () => [...agent.remoteParticipants.values()].some((p) => [...p.trackPublications.values()].some((t) => t.track));
  if (!callerTrack()) {
    await new Promise<void>((resolve) => {
      const onTrack = () => {
        if (!callerTrack()) return;
        agent.off(RoomEvent.TrackSubscribed, onTrack);
        resolve();
      };
      agent.on(RoomEvent.TrackSubscribed, onTrack);
    });
  }
  // Caller first (quiet), then the agent (loud), one after the other.
  await play(callerSource, 3000, 1.5);
  await play(agentSource, 12000, 1.5);
  // Both sides' audio has reached the recorder (3 s played; Opus may trim the edges a little).
  await waitUntil(() => recorder.mixer.receivedSamples >= 2.7 * recorder.mixer.sampleRate, 20_000, 'both sides recorded');
  expect(await recorder.finish()).toBe(true);
  // A second finish (the worker's shutdown callback) uploads nothing more.
  expect(await recorder.finish()).toBe(true);
  await caller.disconnect();
  await agent.disconnect();

  expect(uploads).toHaveLength(1);
  const { type, body } = uploads[0]!;
  expect(type).toBe('audio/wav');
  expect(body.toString('ascii', 0, 4)).toBe('RIFF');
  expect(body.readUInt32LE(24)).toBe(24000);
  const dataBytes = body.readUInt32LE(40);
  expect(body.length).toBe(44 + dataBytes);
  const samples = new Int16Array(body.buffer.slice(body.byteOffset + 44, body.byteOffset + 44 + dataBytes));
  const seconds = samples.length / 24000;
  expect(seconds).toBeGreaterThan(3);
  // 100 ms windows: some carry the caller's level, some the agent's (Opus changes the shape, not the scale).
  const windows: number[] = [];
  for (let i = 0; i + 2400 <= samples.length; i += 2400) windows.push(rmsOf(samples.subarray(i, i + 2400)));
  const callerLike = windows.filter((r) => r > 1500 && r < 5000).length;
  const agentLike = windows.filter((r) => r > 7000).length;
  expect(callerLike).toBeGreaterThanOrEqual(8);
  expect(agentLike).toBeGreaterThanOrEqual(8);
  // The caller spoke before the agent.
  expect(windows.findIndex((r) => r > 1500 && r < 5000)).toBeLessThan(windows.findIndex((r) => r > 7000));
}, 60_000);
