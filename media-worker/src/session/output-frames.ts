// The agent's audio goes to the room in 20 ms frames. The TTS plugins hand agents-js 100 ms frames
// (AudioByteStream's default), and the room's audio output pushes one frame at a time into a 200 ms source
// queue, waiting for room for the whole frame. When the caller barges in, the pause drops that queue only at
// the next frame, so a 100 ms frame kept the agent's voice on the line up to 100 ms after the pause. 20 ms is
// one Opus packet.
import { AudioFrame } from '@livekit/rtc-node';

export const OUTPUT_FRAME_MS = 20;

/**
 * Splits each frame into frames of at most `ms` (the last piece of a frame may be shorter). The first piece
 * carries the frame's userdata: agents-js reads the TTS's start time (its TTFB) and the timed transcript (the
 * words the room's transcript is synchronised to) from there, and the piece starts where the frame did.
 */
export function splitFrame(frame: AudioFrame, ms = OUTPUT_FRAME_MS): AudioFrame[] {
  const step = Math.max(1, Math.round((frame.sampleRate * ms) / 1000));
  if (frame.samplesPerChannel <= step) return [frame];
  const out: AudioFrame[] = [];
  const ch = frame.channels;
  for (let at = 0; at < frame.samplesPerChannel; at += step) {
    const n = Math.min(step, frame.samplesPerChannel - at);
    out.push(new AudioFrame(frame.data.slice(at * ch, (at + n) * ch), frame.sampleRate, ch, n, at === 0 ? { ...frame.userdata } : {}));
  }
  return out;
}

/** A transform that splits every frame of a stream (splitFrame). */
export function smallFrames(ms = OUTPUT_FRAME_MS): TransformStream<AudioFrame, AudioFrame> {
  return new TransformStream<AudioFrame, AudioFrame>({
    transform(frame, controller) {
      for (const f of splitFrame(frame, ms)) controller.enqueue(f);
    },
  });
}
