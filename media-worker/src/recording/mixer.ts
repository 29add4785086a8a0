// Mixes any number of real-time audio sources (the caller's track, the agent's track, background sound) into
// one mono timeline and writes it to a WAV file as it settles. Each frame is placed where it arrived: a source
// that keeps pace continues its run, one that paused or drifted past RESYNC_MS starts a new run there. Only the
// last SETTLE_MS are held in memory; everything older is mixed and written.
import { AudioFrame, AudioResampler } from '@livekit/rtc-node';
import { WavFile } from './wav-file.ts';

const RESYNC_MS = 150;
const SETTLE_MS = 600;

interface Run {
  /** Absolute sample index on the recording's timeline. */
  start: number;
  samples: Int16Array;
}

class Source {
  runs: Run[] = [];
  /** End of the open run (sample index), or null before the first frame. */
  runEnd: number | null = null;
  resampler: AudioResampler | null = null;
  resamplerRate = 0;
  dropped = 0;
  received = 0;
}

export interface MixerOptions {
  path: string;
  sampleRate: number;
  /** Cap of the PCM data (the upload limit of the control plane). */
  maxBytes?: number;
  now?: () => number;
}

export class RecordingMixer {
  readonly sampleRate: number;
  readonly file: WavFile;
  #now: () => number;
  #t0: number;
  #cursor = 0;
  #sources = new Map<string, Source>();
  #closed = false;

  constructor(opts: MixerOptions) {
    this.sampleRate = opts.sampleRate;
    this.#now = opts.now ?? Date.now;
    this.#t0 = this.#now();
    this.file = new WavFile(opts.path, opts.sampleRate, opts.maxBytes);
  }

  /** Samples written so far. */
  get writtenSamples(): number {
    return this.#cursor;
  }

  /** Samples (at the mixer's rate) that reached the mixer from all sources, written or not. */
  get receivedSamples(): number {
    let n = 0;
    for (const s of this.#sources.values()) n += s.received;
    return n;
  }

  /** Audio that reached the mixer after its place had been written (a stalled event loop, say). */
  get droppedSamples(): number {
    let n = 0;
    for (const s of this.#sources.values()) n += s.dropped;
    return n;
  }

  /** Adds a frame that finished arriving at `at` (ms). Cheap and synchronous: never holds up the caller. */
  push(sourceId: string, frame: AudioFrame, at = this.#now()): void {
    if (this.#closed) return;
    let src = this.#sources.get(sourceId);
    if (!src) this.#sources.set(sourceId, (src = new Source()));
    const mono = this.#toMono(src, frame);
    if (mono.length === 0) return;
    src.received += mono.length;
    const arrivedStart = Math.round(((at - this.#t0) / 1000) * this.sampleRate) - mono.length;
    let start = src.runEnd ?? arrivedStart;
    if (Math.abs(arrivedStart - start) > (RESYNC_MS / 1000) * this.sampleRate) start = arrivedStart;
    start = Math.max(0, start);
    src.runEnd = start + mono.length;
    // Whatever falls before the written cursor is too late to mix.
    if (src.runEnd <= this.#cursor) {
      src.dropped += mono.length;
      return;
    }
    if (start < this.#cursor) {
      src.dropped += this.#cursor - start;
      src.runs.push({ start: this.#cursor, samples: mono.subarray(this.#cursor - start) });
    } else {
      src.runs.push({ start, samples: mono });
    }
  }

  /** Mixes and writes everything older than the settle window (call periodically). */
  flush(now = this.#now()): void {
    if (this.#closed) return;
    this.#writeUntil(Math.round(((now - SETTLE_MS - this.#t0) / 1000) * this.sampleRate));
  }

  /** Writes the rest and closes the file. */
  async close(): Promise<{ path: string; dataBytes: number; durationSeconds: number; truncated: boolean }> {
    if (!this.#closed) {
      let end = this.#cursor;
      for (const s of this.#sources.values()) for (const r of s.runs) end = Math.max(end, r.start + r.samples.length);
      this.#writeUntil(end);
      this.#closed = true;
      for (const s of this.#sources.values()) s.resampler?.close();
    }
    const info = await this.file.close();
    return { path: this.file.path, ...info, truncated: this.file.truncated };
  }

  #writeUntil(end: number): void {
    if (end <= this.#cursor) return;
    const mix = new Int32Array(end - this.#cursor);
    for (const src of this.#sources.values()) {
      const keep: Run[] = [];
      for (const run of src.runs) {
        const runEnd = run.start + run.samples.length;
        const lo = Math.max(run.start, this.#cursor);
        const hi = Math.min(runEnd, end);
        for (let i = lo; i < hi; i++) mix[i - this.#cursor]! += run.samples[i - run.start]!;
        if (runEnd > end) keep.push(run.start >= end ? run : { start: end, samples: run.samples.subarray(end - run.start) });
      }
      src.runs = keep;
    }
    const out = new Int16Array(mix.length);
    for (let i = 0; i < mix.length; i++) out[i] = Math.max(-32768, Math.min(32767, mix[i]!));
    this.file.append(out);
    this.#cursor = end;
  }

  #toMono(src: Source, frame: AudioFrame): Int16Array {
    let data = frame.data;
    if (frame.channels > 1) {
      data = new Int16Array(frame.samplesPerChannel);
      for (let i = 0; i < frame.samplesPerChannel; i++) {
        let sum = 0;
        for (let c = 0; c < frame.channels; c++) sum += frame.data[i * frame.channels + c]!;
        data[i] = Math.round(sum / frame.channels);
      }
    } else {
      // The frame's buffer may be reused by its producer: keep a copy.
      data = data.slice(0, frame.samplesPerChannel);
    }
    if (frame.sampleRate === this.sampleRate) return data;
    if (!src.resampler || src.resamplerRate !== frame.sampleRate) {
      src.resampler?.close();
      src.resampler = new AudioResampler(frame.sampleRate, this.sampleRate, 1);
      src.resamplerRate = frame.sampleRate;
    }
    const frames = src.resampler.push(new AudioFrame(data, frame.sampleRate, 1, frame.samplesPerChannel));
    const total = frames.reduce((n, f) => n + f.samplesPerChannel, 0);
    const out = new Int16Array(total);
    let pos = 0;
    for (const f of frames) {
      out.set(f.data.subarray(0, f.samplesPerChannel), pos);
      pos += f.samplesPerChannel;
    }
    return out;
  }
}
