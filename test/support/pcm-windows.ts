// The energy VAD of the OpenAI doubles (transcription and realtime): the little-endian PCM16 a client appends, cut
// into fixed windows across appends (an append may end mid-sample), each with its loudness.
export class Pcm16Windows {
  readonly #window: number;
  #pending: Buffer = Buffer.alloc(0);

  constructor(windowSamples: number) {
    this.#window = windowSamples;
  }

  /** The windows of `buf` after what the last append left over: each its sample count and RMS. */
  push(buf: Buffer): { samples: number; rms: number }[] {
    const data = this.#pending.length ? Buffer.concat([this.#pending, buf]) : buf;
    const usable = data.length - (data.length % 2);
    this.#pending = data.subarray(usable);
    const samples = usable / 2;
    const out: { samples: number; rms: number }[] = [];
    for (let at = 0; at < samples; at += this.#window) {
      const end = Math.min(samples, at + this.#window);
      let sum = 0;
      for (let i = at; i < end; i++) sum += data.readInt16LE(i * 2) ** 2;
      out.push({ samples: end - at, rms: Math.sqrt(sum / (end - at)) });
    }
    return out;
  }
}
