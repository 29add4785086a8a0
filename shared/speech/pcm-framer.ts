// Cuts a stream of 16-bit PCM bytes into audio frames of a fixed length. agents-js's AudioByteStream does the
// same job, but joins its buffer to each chunk by spreading both into a JS array: for a TTS engine's 64 KiB
// chunk that is 64 Ki array elements made and dropped per write, and it blocked a call's event loop for 20-25 ms
// per chunk while the greeting was synthesized (bench:firstaudio's CPU profile). Here a chunk is only copied once,
// into its frames, and the remainder (under one frame) is carried over.
import { AudioFrame } from '@livekit/rtc-node';

export class PcmFramer {
  readonly #sampleRate: number;
  readonly #numChannels: number;
  readonly #bytesPerFrame: number;
  /** Bytes of the next frame received so far (always under one frame). */
  #rest: Uint8Array = new Uint8Array(0);

  constructor(sampleRate: number, numChannels: number, samplesPerChannel = Math.floor(sampleRate / 10)) {
    if (!(samplesPerChannel > 0)) throw new Error('samplesPerChannel must be positive');
    this.#sampleRate = sampleRate;
    this.#numChannels = numChannels;
    this.#bytesPerFrame = numChannels * samplesPerChannel * 2;
  }

  /** The whole frames the bytes complete; the rest waits for the next write (or flush). */
  write(data: ArrayBufferView | ArrayBuffer): AudioFrame[] {
    const bytes = ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);
    const frames: AudioFrame[] = [];
    let at = 0;
    if (this.#rest.length > 0) {
      const need = this.#bytesPerFrame - this.#rest.length;
      if (bytes.length < need) {
        this.#rest = concat(this.#rest, bytes);
        return frames;
      }
      frames.push(this.#frame(concat(this.#rest, bytes.subarray(0, need))));
      at = need;
    }
    for (; bytes.length - at >= this.#bytesPerFrame; at += this.#bytesPerFrame) {
      frames.push(this.#frame(bytes.slice(at, at + this.#bytesPerFrame)));
    }
    // Copied: the caller may reuse the chunk's memory.
    this.#rest = bytes.slice(at);
    return frames;
  }

  /** What is left, as one shorter frame; nothing when it is not a whole number of samples (as AudioByteStream). */
  flush(): AudioFrame[] {
    const rest = this.#rest;
    this.#rest = new Uint8Array(0);
    if (rest.length === 0 || rest.length % (2 * this.#numChannels) !== 0) return [];
    return [this.#frame(rest)];
  }

  /** A frame over `bytes`, which it then owns (a fresh, aligned copy). */
  #frame(bytes: Uint8Array): AudioFrame {
    const samples = new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
    return new AudioFrame(samples, this.#sampleRate, this.#numChannels, samples.length / this.#numChannels);
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
