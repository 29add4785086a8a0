// The early track (media-worker/src/session/early-track.ts) against a real LiveKit server: a session output that
// starts while the early track is still being published takes that track, so the caller hears the agent's frames
// on the one track, with no second publication and no wait for the first to finish.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initializeLogger, voice } from '@livekit/agents';
import { AudioFrame, Room, TrackPublishOptions, TrackSource } from '@livekit/rtc-node';
import { useStack, type TestStack } from './support/stack.ts';
import { RtcClient, disposeRtc, roomToken } from './support/rtc-client.ts';
import { ROOM_OUTPUT_DEFAULTS, publishEarlyTrack } from '../media-worker/src/session/early-track.ts';

let stack: TestStack;
const clients: { leave(): Promise<void> }[] = [];

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'warn' });
  stack = await useStack({});
});

afterAll(async () => {
  for (const c of clients) await c.leave().catch(() => {});
  await disposeRtc();
});

/** 20 ms of a 440 Hz tone at 8 kHz, loud enough to be heard as speech. */
function tone(i: number): AudioFrame {
  const n = 160;
  const samples = new Int16Array(n);
  for (let k = 0; k < n; k++) samples[k] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (i * n + k)) / 8000));
  return new AudioFrame(samples, 8000, 1, n);
}

describe('the early track taken while it is published', () => {
  it('plays the output frames on the early track, the only one published', async () => {
    const name = `early-${Date.now()}`;
    const caller = await RtcClient.join(stack.livekitUrl, await roomToken(stack, name, 'caller'));
    clients.push(caller);
    const heard = caller.record({ from: 'agent', sampleRate: 8000 });
    const agent = new Room();
    await agent.connect(stack.livekitUrl, await roomToken(stack, name, 'agent'), { autoSubscribe: true, dynacast: false });
    clients.push({ leave: () => agent.disconnect() });

    const format = { ...ROOM_OUTPUT_DEFAULTS, sampleRate: 8000 };
    // Not awaited: the session's output starts while the publication is in flight (as on an inbound call).
    const publishing = publishEarlyTrack(agent, format);
    const output = new voice.ParticipantAudioOutput(agent, { ...format, trackPublishOptions: new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }) });
    const started = output.start(new AbortController().signal);
    const frames = (async () => {
      for (let i = 0; i < 50; i++) await output.captureFrame(tone(i));
    })();
    await publishing;
    await started;
    await frames;
    await heard.until(() => heard.firstSpeechAt !== undefined, 15_000, "the agent's frames");

    const published = [...agent.localParticipant!.trackPublications.values()];
    expect(published).toHaveLength(1);
    expect(published[0]!.name).toBe('roomio_audio');
    expect(output.subscribed).toBe(true);
    await output.close();
  });

  it('ends its start when the start is cancelled before anyone subscribed (the call ended as the agent joined)', async () => {
    // No caller: nobody will subscribe. agents-js cancels the output's start when its session closes (RoomIO.close);
    // the start must then return, or that close waits for a subscription that never comes.
    const name = `early-cancel-${Date.now()}`;
    const agent = new Room();
    await agent.connect(stack.livekitUrl, await roomToken(stack, name, 'agent'), { autoSubscribe: true, dynacast: false });
    clients.push({ leave: () => agent.disconnect() });
    const format = { ...ROOM_OUTPUT_DEFAULTS, sampleRate: 8000 };
    const publishing = publishEarlyTrack(agent, format);
    const output = new voice.ParticipantAudioOutput(agent, { ...format, trackPublishOptions: new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }) });
    const start = new AbortController();
    let returned = false;
    const started = output.start(start.signal).then(() => (returned = true));
    await publishing;
    // Published, and nobody subscribed: the start waits.
    await new Promise((r) => setImmediate(r));
    expect(returned).toBe(false);
    start.abort();
    await started;
    expect(returned).toBe(true);
    expect(output.subscribed).toBe(false);
    await output.close();
  });
});
