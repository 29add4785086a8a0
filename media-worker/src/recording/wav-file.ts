// A mono 16-bit PCM WAV file written as audio arrives: header first with placeholder sizes, samples appended,
// sizes patched on close. Writes are chained so callers never wait on the disk.
import { open, type FileHandle } from 'node:fs/promises';

export const WAV_HEADER_BYTES = 44;

export function wavHeader(sampleRate: number, dataBytes: number): Buffer {
  const h = Buffer.alloc(WAV_HEADER_BYTES);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16); // PCM fmt chunk size
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * 2, 28); // byte rate
  h.writeUInt16LE(2, 32); // block align
  h.writeUInt16LE(16, 34); // bits per sample
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

export class WavFile {
  readonly path: string;
  readonly sampleRate: number;
  #maxDataBytes: number;
  #fh: Promise<FileHandle>;
  #chain: Promise<unknown>;
  #dataBytes = 0;
  #truncated = false;
  #error: Error | null = null;

  constructor(path: string, sampleRate: number, maxDataBytes = 0xffffffff - 36) {
    this.path = path;
    this.sampleRate = sampleRate;
    this.#maxDataBytes = maxDataBytes;
    this.#fh = open(path, 'w', 0o600);
    this.#chain = this.#fh.then((fh) => fh.write(wavHeader(sampleRate, 0), 0, WAV_HEADER_BYTES, 0));
    this.#chain.catch((err: unknown) => (this.#error ??= err as Error));
  }

  get dataBytes(): number {
    return this.#dataBytes;
  }

  /** True once the size cap cut the recording short. */
  get truncated(): boolean {
    return this.#truncated;
  }

  append(samples: Int16Array): void {
    if (samples.length === 0 || this.#error) return;
    let bytes = samples.length * 2;
    if (this.#dataBytes + bytes > this.#maxDataBytes) {
      this.#truncated = true;
      bytes = Math.max(0, this.#maxDataBytes - this.#dataBytes) & ~1;
      if (bytes === 0) return;
    }
    const buf = Buffer.from(samples.buffer, samples.byteOffset, bytes);
    const position = WAV_HEADER_BYTES + this.#dataBytes;
    this.#dataBytes += bytes;
    this.#chain = this.#chain.then(async () => {
      const fh = await this.#fh;
      await fh.write(buf, 0, buf.length, position);
    });
    this.#chain.catch((err: unknown) => (this.#error ??= err as Error));
  }

  /** Patches the header sizes and closes the file; rejects if any write failed. */
  async close(): Promise<{ dataBytes: number; durationSeconds: number }> {
    await this.#chain.catch(() => {});
    const fh = await this.#fh;
    try {
      if (this.#error) throw this.#error;
      await fh.write(wavHeader(this.sampleRate, this.#dataBytes), 0, WAV_HEADER_BYTES, 0);
    } finally {
      await fh.close();
    }
    return { dataBytes: this.#dataBytes, durationSeconds: this.#dataBytes / 2 / this.sampleRate };
  }
}
