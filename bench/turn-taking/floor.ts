// The barge-in floor, measured in the same run as the agent (bench:turns): what the WebRTC path itself costs
// between a caller's first sound and the agent's voice stopping at the caller. A bare rtc-node participant
// stands in for the agent: it plays the agent's long reply through an AudioSource as agents-js's room output
// does (24 kHz, a 200 ms queue, 20 ms frames), and on the first 10 ms frame of the caller's audio above the
// rig's speech threshold it drops its queue at once and stops. No VAD, no agents-js, no onset rule: the caller's
// audio in, one 10 ms window, and the agent's audio out. The caller is the rig's (Mic, AgentEar), measuring as
// runBargeIn does. Both participants run in the benchmark's process, on the rig's LiveKit server.
import { RtcClient, nowMs, rms, roomToken } from '../../test/support/rtc-client.ts';
import { AudioFrame, AudioSource, AudioStream, LocalAudioTrack, Room, RoomEvent, TrackKind, TrackPublishOptions, TrackSource, type RemoteTrack } from '@livekit/rtc-node';
import type { RunningStack } from '../../scripts/stack/supervisor.ts';
import { Mic } from '../support/mic.ts';
import { AgentEar, longReplyPcm } from './rig.ts';
import { SPEECH_RMS, itemPcm, type CorpusItem } from './corpus.ts';

const RATE = 24000;
const FRAME = RATE / 50;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FloorTrial {
  item: string;
  /** The caller's start -> the agent's audio stopped at the caller (ms); null when it did not stop. */
  stop_ms: number | null;
  /** The caller's start -> the bare participant heard it. */
  heard_ms: number | null;
  /** The drop of the queue -> the stop at the caller. */
  drop_to_stop_ms: number | null;
}

/** `n` barge-ins on the bare participant, each with the first 600 ms of a complete corpus utterance. */
export async function runFloor(stack: RunningStack, items: CorpusItem[], n: number): Promise<FloorTrial[]> {
  const room = `floor-${Date.now()}`;
  const reply = await longReplyPcm();
  const agent = new Room();
  await agent.connect(stack.livekitUrl, await roomToken(stack, room, 'bare-agent'), { autoSubscribe: true, dynacast: false });
  const source = new AudioSource(RATE, 1, 200);
  await agent.localParticipant!.publishTrack(LocalAudioTrack.createAudioTrack('bare-agent', source), new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
  const state = { playing: false, heardAt: 0, droppedAt: 0, closed: false };
  const player = (async () => {
    let at = 0;
    while (!state.closed) {
      if (!state.playing) {
        at = 0;
        await sleep(5);
        continue;
      }
      const data = new Int16Array(FRAME);
      data.set(reply.subarray(at, at + FRAME));
      at = at + FRAME >= reply.length ? 0 : at + FRAME;
      await source.captureFrame(new AudioFrame(data, RATE, 1, FRAME));
    }
  })();
  agent.on(RoomEvent.TrackSubscribed, (track: RemoteTrack) => {
    if (track.kind !== TrackKind.KIND_AUDIO) return;
    void (async () => {
      for await (const f of new AudioStream(track, { sampleRate: RATE, numChannels: 1 })) {
        if (state.closed) break;
        if (state.playing && rms(f.data.subarray(0, f.samplesPerChannel)) > SPEECH_RMS) {
          state.heardAt = nowMs();
          state.playing = false;
          source.clearQueue();
          state.droppedAt = nowMs();
        }
      }
    })();
  });
  const client = await RtcClient.join(stack.livekitUrl, await roomToken(stack, room, 'caller'));
  const ear = new AgentEar();
  ear.attach(client);
  await client.publishMicrophone();
  const mic = new Mic(client);
  const trials: FloorTrial[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const item = items[i % items.length]!;
      const pcm = itemPcm(item);
      const head = { samples: pcm.samples.slice(0, Math.round(pcm.sampleRate * 0.6)), sampleRate: pcm.sampleRate };
      state.heardAt = 0;
      state.playing = true;
      // As runBargeIn: the caller speaks 1.2 s into the agent's speech.
      await sleep(1200);
      const { start } = await mic.say(head);
      await ear.until(() => ear.stopAfter(start) !== undefined, 3000);
      const stop = ear.stopAfter(start);
      state.playing = false;
      const heard = state.heardAt >= start ? state.heardAt : null;
      trials.push({
        item: item.id,
        stop_ms: stop !== undefined && heard !== null ? stop - start : null,
        heard_ms: heard !== null ? heard - start : null,
        drop_to_stop_ms: stop !== undefined && heard !== null ? stop - state.droppedAt : null,
      });
      // The end of the caller's clip is still on its way to the participant when say() resolves.
      await sleep(400);
      await ear.quiet(300, 5000);
    }
  } finally {
    state.closed = true;
    await player;
    await mic.stop();
    await ear.stop();
    await client.leave();
    await source.close();
    await agent.disconnect();
  }
  return trials;
}
