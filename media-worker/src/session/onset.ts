// The caller's speech onset from the level of their audio, for barge_in 'pause' (docs/decisions/010-turn-taking.md). Silero's start of speech needs two or three 32 ms windows of speech, and its probability
// takes a window or more to rise: agents-js pauses the agent about 100-150 ms into the caller's speech. A rise
// of the level well above the line's own noise floor, held for 10 ms, comes 10-20 ms in: a 10 ms window whose
// level rose in each of its quarters (a click's energy dies within a few milliseconds), or the next one (a
// sound that began inside the first). The VAD still decides what the sound was: the call resumes a pause the
// VAD does not take over (turn-handling.ts).
import type { AudioFrame } from '@livekit/rtc-node';

export interface OnsetOptions {
  /** How far above the noise floor the level must rise (dB). */
  riseDb?: number;
  /** The least level that can be an onset (dBFS): the line's own hiss never is. */
  minDbfs?: number;
}

const WINDOW_MS = 10;
/** A window's level is read over the whole window and over each of its quarters (2.5 ms). */
const QUARTERS = 4;
/**
 * A window whose every quarter is over the threshold holds the sound throughout; a click's does not. The window
 * after one that rose needs three (a dip between pitch pulses), and a click's tail that spills into it has one
 * or two.
 */
const HELD_AFTER_RISE = 3;
/** Below this a window is silence (the level of digital silence would be minus infinity). */
const SILENCE_DBFS = -96;
/** The floor rises slowly (dB per 10 ms window: 3 dB a second), so that speech barely moves it... */
const FLOOR_RISE_DB = 0.03;
/** ...and falls a fifth of the way to a quieter window: fast for a quieter line, little for one dip. */
const FLOOR_FALL = 0.2;
/** After an onset, the level must sit near the floor this long before the next one (ms). */
const REARM_MS = 200;

export class OnsetDetector {
  readonly riseDb: number;
  readonly minDbfs: number;
  /** null until the first window, which sets it. */
  #floorDb: number | null = null;
  #above = 0;
  #armed = true;
  #quietMs = 0;
  /** Samples carried over to the next frame (frames need not be a whole number of windows). */
  #rest: Int16Array = new Int16Array(0);

  constructor(opts: OnsetOptions = {}) {
    this.riseDb = opts.riseDb ?? 15;
    this.minDbfs = opts.minDbfs ?? -45;
  }

  /** The noise floor the detector holds now (dBFS). */
  get floorDb(): number {
    return this.#floorDb ?? SILENCE_DBFS;
  }

  /** Feeds a frame of the caller's audio; true when an onset ended in it. */
  push(frame: AudioFrame): boolean {
    const step = Math.max(1, Math.round((frame.sampleRate * WINDOW_MS) / 1000));
    const data = frame.data.subarray(0, frame.samplesPerChannel * frame.channels);
    let samples = data;
    if (this.#rest.length) {
      samples = new Int16Array(this.#rest.length + data.length);
      samples.set(this.#rest);
      samples.set(data, this.#rest.length);
    }
    // Mono frames are the rule (agents-js mixes the room's input down); other layouts are read interleaved.
    const span = step * frame.channels;
    let onset = false;
    let at = 0;
    for (; at + span <= samples.length; at += span) onset = this.#window(samples.subarray(at, at + span), frame.channels) || onset;
    this.#rest = samples.slice(at);
    return onset;
  }

  #window(samples: Int16Array, channels: number): boolean {
    const db = levelDbfs(samples);
    const floor = (this.#floorDb ??= db);
    const threshold = Math.max(floor + this.riseDb, this.minDbfs);
    let onset = false;
    if (db >= threshold) {
      this.#above++;
      this.#quietMs = 0;
      if (this.#armed && heldQuarters(samples, channels, threshold) >= (this.#above >= 2 ? HELD_AFTER_RISE : QUARTERS)) {
        this.#armed = false;
        onset = true;
      }
    } else {
      this.#above = 0;
      // Re-armed once the level has sat under half the rise for a while: the caller's words have ended.
      if (db < floor + this.riseDb / 2 || db < this.minDbfs) this.#quietMs += WINDOW_MS;
      else this.#quietMs = 0;
      if (this.#quietMs >= REARM_MS) this.#armed = true;
    }
    this.#floorDb = db < floor ? floor + (db - floor) * FLOOR_FALL : floor + Math.min(FLOOR_RISE_DB, db - floor);
    return onset;
  }
}

/** How many of the window's quarters have a level at or over `threshold` (dBFS). */
function heldQuarters(samples: Int16Array, channels: number, threshold: number): number {
  const frames = samples.length / channels;
  let held = 0;
  for (let q = 0; q < QUARTERS; q++) {
    const from = Math.floor((q * frames) / QUARTERS) * channels;
    const to = Math.floor(((q + 1) * frames) / QUARTERS) * channels;
    if (levelDbfs(samples.subarray(from, to)) >= threshold) held++;
  }
  return held;
}

/** The RMS level of interleaved 16-bit samples, in dB relative to full scale. */
export function levelDbfs(samples: Int16Array): number {
  if (samples.length === 0) return SILENCE_DBFS;
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  const rms = Math.sqrt(sum / samples.length);
  return rms > 0 ? Math.max(SILENCE_DBFS, 20 * Math.log10(rms / 32768)) : SILENCE_DBFS;
}
