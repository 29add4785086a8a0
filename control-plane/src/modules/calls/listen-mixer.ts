// The listen stream's audio (docs/guides/calls.md, "Supervising a live call"): each remote audio track's samples
// queue apart, and every 20 ms one frame of 16-bit little-endian PCM, two channels interleaved, takes 20 ms from
// each queue: channel 0 the caller's side, channel 1 the agent's. A side with nothing queued is silence, so the
// channels stay aligned in time; several tracks of one side are summed.

export const STREAM_SAMPLE_RATE = 16_000;
export const STREAM_FRAME_MS = 20;
export const STREAM_CHANNELS = 2;
export const CHANNEL_MAP = ['caller', 'agent'] as const;
/** Samples of one channel in a frame (320). */
export const FRAME_SAMPLES = (STREAM_SAMPLE_RATE * STREAM_FRAME_MS) / 1000;
/** Bytes of one frame on the wire (1,280). */
export const FRAME_BYTES = FRAME_SAMPLES * STREAM_CHANNELS * 2;
/** A track's queue holds at most this much (200 ms): beyond it the oldest samples go, so delay cannot grow. */
const QUEUE_SAMPLES = FRAME_SAMPLES * 10;

export type Side = 0 | 1;

/** One track's samples waiting for the next frames: a ring of QUEUE_SAMPLES. */
class SampleQueue {
  readonly side: Side;
  #ring = new Int16Array(QUEUE_SAMPLES);
  #start = 0;
  #length = 0;

  constructor(side: Side) {
    this.side = side;
  }

  push(samples: Int16Array): void {
    // More than the ring holds: only the newest samples matter.
    const from = samples.length > QUEUE_SAMPLES ? samples.subarray(samples.length - QUEUE_SAMPLES) : samples;
    const overflow = this.#length + from.length - QUEUE_SAMPLES;
    if (overflow > 0) {
      this.#start = (this.#start + overflow) % QUEUE_SAMPLES;
      this.#length -= overflow;
    }
    let end = (this.#start + this.#length) % QUEUE_SAMPLES;
    for (let i = 0; i < from.length; i++) {
      this.#ring[end] = from[i]!;
      end = end + 1 === QUEUE_SAMPLES ? 0 : end + 1;
    }
    this.#length += from.length;
  }

  /** Adds one frame's samples into `into` (mono, FRAME_SAMPLES long) if a whole frame is queued. */
  takeInto(into: Int32Array): boolean {
    if (this.#length < FRAME_SAMPLES) return false;
    for (let i = 0; i < FRAME_SAMPLES; i++) into[i]! += this.#ring[(this.#start + i) % QUEUE_SAMPLES]!;
    this.#start = (this.#start + FRAME_SAMPLES) % QUEUE_SAMPLES;
    this.#length -= FRAME_SAMPLES;
    return true;
  }
}

const clip = (v: number) => (v > 32767 ? 32767 : v < -32768 ? -32768 : v);

export class StereoMixer {
  #queues = new Map<string, SampleQueue>();
  #sums: [Int32Array, Int32Array] = [new Int32Array(FRAME_SAMPLES), new Int32Array(FRAME_SAMPLES)];

  /** A track of one side, by a key of its own (its sid). */
  add(key: string, side: Side): void {
    if (!this.#queues.has(key)) this.#queues.set(key, new SampleQueue(side));
  }

  remove(key: string): void {
    this.#queues.delete(key);
  }

  /** Mono samples at STREAM_SAMPLE_RATE from the track `key`; ignored once the track is removed. */
  push(key: string, samples: Int16Array): void {
    this.#queues.get(key)?.push(samples);
  }

  /** The next frame: FRAME_BYTES of s16le, channel 0 then 1 for each sample. */
  frame(): Buffer {
    for (const s of this.#sums) s.fill(0);
    for (const q of this.#queues.values()) q.takeInto(this.#sums[q.side]);
    const out = Buffer.allocUnsafe(FRAME_BYTES);
    const [caller, agent] = this.#sums;
    for (let i = 0; i < FRAME_SAMPLES; i++) {
      out.writeInt16LE(clip(caller[i]!), i * 4);
      out.writeInt16LE(clip(agent[i]!), i * 4 + 2);
    }
    return out;
  }
}
