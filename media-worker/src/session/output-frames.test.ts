import { USERDATA_TIMED_TRANSCRIPT, USERDATA_TTS_STARTED_TIME } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { describe, expect, it } from 'vitest';
import { smallFrames, splitFrame } from './output-frames.ts';

const ramp = (n: number, ch = 1) => Int16Array.from({ length: n * ch }, (_, i) => i % 32768);

describe('agent audio frames', () => {
  it('splits a 100 ms TTS frame into 20 ms frames that hold the same samples in order', () => {
    const frame = new AudioFrame(ramp(2400), 24000, 1, 2400);
    const parts = splitFrame(frame);
    expect(parts.map((p) => p.samplesPerChannel)).toEqual([480, 480, 480, 480, 480]);
    expect(Array.from(parts.flatMap((p) => Array.from(p.data)))).toEqual(Array.from(frame.data));
  });

  it("keeps the frame's userdata (agents-js's timed transcript and TTS start) on the first piece only", () => {
    const frame = new AudioFrame(ramp(2400), 24000, 1, 2400, { [USERDATA_TIMED_TRANSCRIPT]: ['Hello'], [USERDATA_TTS_STARTED_TIME]: 12.5 });
    const parts = splitFrame(frame);
    expect(parts[0]!.userdata).toEqual({ [USERDATA_TIMED_TRANSCRIPT]: ['Hello'], [USERDATA_TTS_STARTED_TIME]: 12.5 });
    for (const p of parts.slice(1)) expect(p.userdata).toEqual({});
  });

  it('keeps a short last piece and interleaved channels, and leaves small frames alone', () => {
    const stereo = new AudioFrame(ramp(1000, 2), 48000, 2, 1000);
    const parts = splitFrame(stereo);
    expect(parts.map((p) => p.samplesPerChannel)).toEqual([960, 40]);
    expect(parts[1]!.data).toEqual(stereo.data.slice(1920, 2000));
    const small = new AudioFrame(ramp(160), 8000, 1, 160);
    expect(splitFrame(small)).toEqual([small]);
  });

  it('splits a stream', async () => {
    const frames = [new AudioFrame(ramp(800), 8000, 1, 800), new AudioFrame(ramp(100), 8000, 1, 100)];
    const out: number[] = [];
    const stream = new ReadableStream<AudioFrame>({
      start(c) {
        for (const f of frames) c.enqueue(f);
        c.close();
      },
    }).pipeThrough(smallFrames());
    for await (const f of stream) out.push(f.samplesPerChannel);
    expect(out).toEqual([160, 160, 160, 160, 160, 100]);
  });
});
