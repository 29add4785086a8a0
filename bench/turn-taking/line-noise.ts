// The audio of a dirty line, for the barge-in trials of bench:turns (docs/benchmarks.md, "Turn-taking"): what is
// added to everything the caller sends, speech or not. Pink noise and babble (espeak-ng voices mixed) at a set
// level under the caller's speech (the SNR), and the agent's own voice coming back as an echo: the audio the caller
// received, later and quieter. Levels are powers (mean squares, int16 scale); a speech's level is over its voiced
// 10 ms windows only (its active level), so its pauses do not lower it.
import { seededRandom } from '../../test/support/seeded-random.ts';
import type { LineSource } from '../support/mic.ts';

export const LINE_CONDITIONS = ['clean', 'pink', 'babble', 'echo'] as const;
export type LineCondition = (typeof LINE_CONDITIONS)[number];

/** A 10 ms window is speech above this RMS (the rig's threshold, corpus.ts). */
const SPEECH_RMS = 300;

export function power(x: ArrayLike<number>, from = 0, to = x.length): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += x[i]! * x[i]!;
  return to > from ? sum / (to - from) : 0;
}

/** Mean square over the 10 ms windows above the speech threshold (0 when none is). */
export function activeSpeechPower(samples: ArrayLike<number>, rate: number, threshold = SPEECH_RMS): number {
  const step = Math.round(rate / 100);
  let sum = 0;
  let n = 0;
  for (let at = 0; at + step <= samples.length; at += step) {
    const p = power(samples, at, at + step);
    if (Math.sqrt(p) > threshold) {
      sum += p * step;
      n += step;
    }
  }
  return n ? sum / n : 0;
}

const db = (ratio: number) => 10 * Math.log10(ratio);

/** The SNR of `mixed` against the `speech` in it (dB): the speech's active level over the rest's level. */
export function snrDb(speech: Int16Array, mixed: Int16Array, rate: number): number {
  const rest = new Float64Array(mixed.length);
  for (let i = 0; i < mixed.length; i++) rest[i] = mixed[i]! - (speech[i] ?? 0);
  return db(activeSpeechPower(speech, rate) / power(rest));
}

/** The RMS of a noise that sits `snr` dB under a speech of this active power. */
export const rmsForSnr = (speechPower: number, snr: number) => Math.sqrt(speechPower / 10 ** (snr / 10));

/** Adds the line's samples to a frame of the caller's audio, clipped to int16. */
export function mixInto(frame: Int16Array, line: ArrayLike<number>): Int16Array {
  const out = new Int16Array(frame.length);
  for (let i = 0; i < frame.length; i++) out[i] = Math.max(-32768, Math.min(32767, Math.round(frame[i]! + (line[i] ?? 0))));
  return out;
}


/**
 * Pink noise (power falling 3 dB an octave, as most room and line noise), from Paul Kellet's filter over seeded
 * white noise, at an RMS set from a long stretch of its own output.
 */
export class PinkNoise implements LineSource {
  readonly #rnd: () => number;
  readonly #b = new Float64Array(7);
  #gain = 1;

  constructor(rms: number, seed = 1) {
    this.#rnd = seededRandom(seed);
    // The filter settles within a second; ten seconds set the level.
    this.#raw(48000);
    this.#gain = rms / Math.sqrt(power(this.#raw(480000)));
  }

  #raw(n: number): Float64Array {
    const b = this.#b;
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const white = this.#rnd() * 2 - 1;
      b[0] = 0.99886 * b[0]! + white * 0.0555179;
      b[1] = 0.99332 * b[1]! + white * 0.0750759;
      b[2] = 0.969 * b[2]! + white * 0.153852;
      b[3] = 0.8665 * b[3]! + white * 0.3104856;
      b[4] = 0.55 * b[4]! + white * 0.5329522;
      b[5] = -0.7616 * b[5]! - white * 0.016898;
      out[i] = b[0]! + b[1]! + b[2]! + b[3]! + b[4]! + b[5]! + b[6]! + white * 0.5362;
      b[6] = white * 0.115926;
    }
    return out;
  }

  next(n: number): Float64Array {
    const out = this.#raw(n);
    for (let i = 0; i < n; i++) out[i]! *= this.#gain;
    return out;
  }
}

/**
 * Babble: several voices talking at once, as the room behind a caller. The clips are laid around a ring of
 * `length` samples (each at a drawn offset, wrapping), so the loop has no seam, and the sum is set to `rms`.
 */
export class Babble implements LineSource {
  readonly #ring: Float64Array;
  #at = 0;

  constructor(clips: Int16Array[], length: number, rms: number, seed = 1) {
    const rnd = seededRandom(seed);
    const ring = new Float64Array(length);
    for (const clip of clips) {
      const offset = Math.floor(rnd() * length);
      for (let i = 0; i < clip.length; i++) ring[(offset + i) % length]! += clip[i]!;
    }
    const gain = rms / Math.sqrt(power(ring) || 1);
    for (let i = 0; i < length; i++) ring[i]! *= gain;
    this.#ring = ring;
  }

  next(n: number): Float64Array {
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      out[i] = this.#ring[this.#at]!;
      this.#at = (this.#at + 1) % this.#ring.length;
    }
    return out;
  }
}

/**
 * The echo: the agent's audio as the caller received it (push), sent back `delayMs` later and `gainDb` down (next).
 * A delay line of `delayMs` of samples: pushes and pulls of equal size keep it there. When the agent's audio stops
 * coming (the line drained), the next push primes it again with the delay's silence, so the delay holds; and a
 * line that grew a frame's worth over it (pushes bunched up) drops its oldest samples.
 */
export class EchoPath implements LineSource {
  readonly delaySamples: number;
  readonly gain: number;
  #queue: number[] = [];

  constructor({ rate, delayMs = 60, gainDb = -20 }: { rate: number; delayMs?: number; gainDb?: number }) {
    this.delaySamples = Math.round((rate * delayMs) / 1000);
    this.gain = 10 ** (gainDb / 20);
    this.#queue = new Array<number>(this.delaySamples).fill(0);
  }

  push(samples: ArrayLike<number>): void {
    if (this.#queue.length === 0) this.#queue = new Array<number>(this.delaySamples).fill(0);
    for (let i = 0; i < samples.length; i++) this.#queue.push(samples[i]!);
    const over = this.#queue.length - this.delaySamples - Math.max(samples.length, Math.round(this.delaySamples / 3));
    if (over > 0) this.#queue.splice(0, over);
  }

  next(n: number): Float64Array {
    const out = new Float64Array(n);
    const take = this.#queue.splice(0, n);
    for (let i = 0; i < take.length; i++) out[i] = take[i]! * this.gain;
    return out;
  }
}

/** Nothing added. */
export const CLEAN: LineSource = { next: (n) => new Float64Array(n) };
