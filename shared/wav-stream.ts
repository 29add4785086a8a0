// Incremental RIFF/WAVE reader for synthesizer output on a pipe. espeak-ng writes placeholder sizes
// (0x7ffff000) because it streams, so a data chunk is read until the pipe ends unless its size is real;
// festival writes real sizes, and one pipe may carry several WAVs back to back.

export interface WavFormat {
  sampleRate: number;
  numChannels: number;
  bitsPerSample: number;
}

/** Sizes at or above this are taken as "unknown, read to the end". */
const STREAMING_SIZE = 0x7fff0000;

type State = 'riff' | 'chunk-header' | 'fmt' | 'skip' | 'data';

export class WavStreamParser {
  #buf: Buffer = Buffer.alloc(0);
  #state: State = 'riff';
  #remaining = 0;
  #format?: WavFormat;

  get format(): WavFormat | undefined {
    return this.#format;
  }

  /** Feeds bytes; returns the PCM bytes they complete (possibly empty). Throws on a malformed header. */
  push(chunk: Buffer): Buffer[] {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : chunk;
    const out: Buffer[] = [];
    for (;;) {
      switch (this.#state) {
        case 'riff': {
          if (this.#buf.length < 12) return out;
          if (this.#buf.toString('latin1', 0, 4) !== 'RIFF' || this.#buf.toString('latin1', 8, 12) !== 'WAVE') {
            throw new Error('not a RIFF/WAVE stream');
          }
          this.#buf = this.#buf.subarray(12);
          this.#state = 'chunk-header';
          break;
        }
        case 'chunk-header': {
          if (this.#buf.length < 8) return out;
          const id = this.#buf.toString('latin1', 0, 4);
          const size = this.#buf.readUInt32LE(4);
          this.#buf = this.#buf.subarray(8);
          if (id === 'fmt ') {
            this.#state = 'fmt';
            this.#remaining = size;
          } else if (id === 'data') {
            if (!this.#format) throw new Error('WAV data chunk before fmt chunk');
            this.#state = 'data';
            this.#remaining = size >= STREAMING_SIZE ? Infinity : size;
          } else {
            this.#state = 'skip';
            this.#remaining = size + (size % 2);
          }
          break;
        }
        case 'fmt': {
          if (this.#buf.length < this.#remaining) return out;
          const encoding = this.#buf.readUInt16LE(0);
          const format = {
            numChannels: this.#buf.readUInt16LE(2),
            sampleRate: this.#buf.readUInt32LE(4),
            bitsPerSample: this.#buf.readUInt16LE(14),
          };
          if (encoding !== 1 || format.bitsPerSample !== 16) {
            throw new Error(`unsupported WAV encoding ${encoding}/${format.bitsPerSample} bits`);
          }
          this.#format = format;
          this.#buf = this.#buf.subarray(this.#remaining + (this.#remaining % 2));
          this.#state = 'chunk-header';
          break;
        }
        case 'skip': {
          const n = Math.min(this.#remaining, this.#buf.length);
          this.#buf = this.#buf.subarray(n);
          this.#remaining -= n;
          if (this.#remaining > 0) return out;
          this.#state = 'chunk-header';
          break;
        }
        case 'data': {
          if (this.#buf.length === 0) return out;
          // Keep whole samples only, so every PCM slice handed out is aligned.
          const frameBytes = 2 * (this.#format?.numChannels ?? 1);
          const available = Math.min(this.#remaining, this.#buf.length);
          const n = available === this.#remaining ? available : available - (available % frameBytes);
          if (n === 0) return out;
          out.push(this.#buf.subarray(0, n));
          this.#buf = this.#buf.subarray(n);
          this.#remaining -= n;
          if (this.#remaining > 0) return out;
          // A complete WAV: another one may follow on the same pipe.
          this.#state = 'riff';
          break;
        }
      }
    }
  }
}
