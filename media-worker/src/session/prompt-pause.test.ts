// The prompt pause (prompt-pause.ts) on agents-js's own room output, in a real LiveKit room: a pause drops what
// the audio source holds at once and counts it as not played; a pause once the reply's last frame is in leaves
// the source to play out. Without the patch the source still holds its queue after pause().
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AudioFrame, Room, TrackPublishOptions, TrackSource, type AudioSource } from '@livekit/rtc-node';
import { initializeLogger, voice } from '@livekit/agents';
import { useStack, type TestStack } from '../../../test/support/stack.ts';
import { RtcClient, disposeRtc, roomToken } from '../../../test/support/rtc-client.ts';
import { PROMPT_PAUSE_AGENTS_VERSION, PromptPauseVersionError, assertPromptPauseTarget, installPromptPause, promptPauseInstalled } from './prompt-pause.ts';
import { installedAgentsVersion } from './agents-release.ts';

const RATE = 24000;
const FRAME = RATE / 50;

describe('prompt pause: the agents-js release', () => {
  it('is checked against the installed agents-js, and refuses any other', () => {
    expect(installedAgentsVersion()).toBe(PROMPT_PAUSE_AGENTS_VERSION);
    expect(() => assertPromptPauseTarget()).not.toThrow();
    expect(() => assertPromptPauseTarget('1.10.0')).toThrow(PromptPauseVersionError);
  });
});

describe('prompt pause in a room', () => {
  let stack: TestStack;
  beforeAll(async () => {
    initializeLogger({ pretty: false, level: 'warn' });
    stack = await useStack({});
    installPromptPause();
  }, 120_000);
  afterAll(async () => {
    await disposeRtc();
  });

  async function join(identity: string, room: string): Promise<Room> {
    return (await RtcClient.join(stack.livekitUrl, await roomToken(stack, room, identity))).room;
  }

  /** agents-js's room output, published in a room a caller has joined (it starts once the caller subscribes). */
  async function output(name: string) {
    const agent = await join('agent', name);
    const caller = await join('caller', name);
    const out = new voice.ParticipantAudioOutput(agent, {
      sampleRate: RATE,
      numChannels: 1,
      trackPublishOptions: new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }),
      queueSizeMs: 200,
    });
    await out.start(new AbortController().signal);
    const source = (out as unknown as { audioSource: AudioSource }).audioSource;
    const progressed: voice.PlaybackProgressedEvent[] = [];
    out.on(voice.AudioOutput.EVENT_PLAYBACK_PROGRESSED, (ev: voice.PlaybackProgressedEvent) => progressed.push(ev));
    const finished = new Promise<voice.PlaybackFinishedEvent>((r) => out.once(voice.AudioOutput.EVENT_PLAYBACK_FINISHED, r));
    const close = async () => {
      await out.close();
      await caller.disconnect();
      await agent.disconnect();
    };
    return { out, source, progressed, finished, close };
  }

  /** 20 ms frames of a tone, pushed as agents-js's forwarding does: each once the source takes the one before. */
  function pusher(out: voice.ParticipantAudioOutput) {
    let pushed = 0;
    let stop = false;
    const done = (async () => {
      while (!stop) {
        const d = new Int16Array(FRAME);
        for (let i = 0; i < FRAME; i++) d[i] = Math.round(6000 * Math.sin(((pushed * FRAME + i) * 2 * Math.PI * 220) / RATE));
        pushed++;
        await out.captureFrame(new AudioFrame(d, RATE, 1, FRAME));
      }
    })();
    return {
      pushedMs: () => pushed * 20,
      async until(ms: number) {
        while (pushed * 20 < ms) await new Promise((r) => setTimeout(r, 10));
      },
      /** No more frames after the one in flight (which a paused output holds at its gate). */
      halt() {
        stop = true;
      },
      async stop() {
        stop = true;
        await done;
      },
    };
  }

  it('drops what the source holds at pause(), and the playback position leaves it out', async () => {
    expect(promptPauseInstalled()).toBe(true);
    const { out, source, progressed, finished, close } = await output(`pp-${Date.now()}`);
    const feed = pusher(out);
    // Past the 200 ms queue, so the source holds audio when the pause comes.
    await feed.until(600);
    expect(source.queuedDuration).toBeGreaterThan(0);
    out.pause();
    // At once, not when the next frame reaches agents-js's paused gate.
    expect(source.queuedDuration).toBe(0);
    const atPause = progressed.at(-1);
    expect(atPause).toBeDefined();
    const playedMs = atPause!.offset + atPause!.duration;
    feed.halt();
    out.clearBuffer();
    await feed.stop();
    const ev = await finished;
    expect(ev.interrupted).toBe(true);
    // What the source dropped never played: the position is where the pause began.
    expect(ev.playbackPosition * 1000).toBeCloseTo(playedMs, 0);
    expect(playedMs).toBeLessThan(feed.pushedMs());
    await close();
  }, 60_000);

  it('leaves a pause after the last frame to play out, and a reply paused mid-way resumes past what it dropped', async () => {
    const { out, source, finished, close } = await output(`pp-end-${Date.now()}`);
    const feed = pusher(out);
    await feed.until(400);
    // Mid-way: dropped, then resumed.
    out.pause();
    expect(source.queuedDuration).toBe(0);
    out.resume();
    await feed.until(800);
    await feed.stop();
    // The last frame is in: agents-js waits for the source to play out, and a pause now drops nothing.
    out.flush();
    const held = source.queuedDuration;
    expect(held).toBeGreaterThan(0);
    out.pause();
    expect(source.queuedDuration).toBeGreaterThan(0);
    out.resume();
    const ev = await finished;
    expect(ev.interrupted).toBe(false);
    // Everything pushed but what the mid-way pause dropped (at most the 200 ms queue and the frame in flight).
    expect(ev.playbackPosition * 1000).toBeLessThan(feed.pushedMs());
    expect(ev.playbackPosition * 1000).toBeGreaterThan(feed.pushedMs() - 260);
    await close();
  }, 60_000);
});
