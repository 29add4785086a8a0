// The onset detector on made audio: a level that rises well over the line's noise floor and holds for 10 ms is
// an onset; the hiss, a steady hum, a click, a 5 ms pop and a rise too small are not.
import { AudioFrame } from '@livekit/rtc-node';
import { describe, expect, it } from 'vitest';
import { OnsetDetector, levelDbfs } from './onset.ts';
import { concatSamples as concat } from '../../../test/support/speech.ts';

const RATE = 16000;

/** Seeded noise at an RMS level of `dbfs` (uniform samples: RMS = amplitude / sqrt(3)). */
function noise(ms: number, dbfs: number, seed = 1): Int16Array {
  const n = (RATE * ms) / 1000;
  const amp = 32768 * 10 ** (dbfs / 20) * Math.sqrt(3);
  let x = seed;
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out[i] = Math.max(-32768, Math.min(32767, Math.round(((x / 2147483648) * 2 - 1) * amp)));
  }
  return out;
}

/** Noise that starts at `dbfs` (RMS) and decays with time constant `tauMs`: a click. */
function decaying(ms: number, dbfs: number, tauMs: number, seed = 1): Int16Array {
  const out = noise(ms, dbfs, seed);
  for (let i = 0; i < out.length; i++) out[i] = Math.round(out[i]! * Math.exp(-i / ((RATE * tauMs) / 1000)));
  return out;
}

/** Feeds `pcm` in frames of `frameMs`; the times (ms from the start) of the frames that ended an onset. */
function onsets(d: OnsetDetector, pcm: Int16Array, frameMs = 10): number[] {
  const step = (RATE * frameMs) / 1000;
  const out: number[] = [];
  for (let at = 0; at < pcm.length; at += step) {
    const data = pcm.slice(at, at + step);
    if (d.push(new AudioFrame(data, RATE, 1, data.length))) out.push(((at + data.length) / RATE) * 1000);
  }
  return out;
}

describe('onset detector', () => {
  it('measures levels in dBFS', () => {
    expect(levelDbfs(new Int16Array(160))).toBe(-96);
    expect(levelDbfs(noise(10, -30))).toBeCloseTo(-30, 0);
  });

  it('finds speech-level sound over a quiet line in its first 10 ms window, or its second when it began inside the first', () => {
    const d = new OnsetDetector();
    expect(onsets(d, concat(noise(1000, -65), noise(300, -25, 7)))).toEqual([1010]);
    // Begun 6 ms into a window: that window's quarters are not held, the next window's rise makes two in a row.
    const late = new OnsetDetector();
    expect(onsets(late, concat(noise(1006, -65), noise(300, -25, 7)))).toEqual([1020]);
  });

  it('takes a window with a quiet quarter (a dip between pitch pulses) as not held: the next window makes the onset', () => {
    const d = new OnsetDetector();
    expect(onsets(d, concat(noise(1000, -65), noise(7.5, -20, 7), noise(2.5, -65, 8), noise(300, -25, 9)))).toEqual([1020]);
  });

  it('finds one onset per utterance, and the next one after a silence', () => {
    const d = new OnsetDetector();
    const utterance = noise(400, -25, 3);
    const at = onsets(d, concat(noise(500, -65), utterance, noise(100, -65), utterance, noise(500, -65), utterance));
    // A 100 ms gap inside an utterance is not a new onset; 500 ms of quiet re-arms it.
    expect(at).toEqual([510, 1910]);
  });

  it('ignores the hiss, a steady hum once the floor has risen to it, a click, a 5 ms pop and a small rise', () => {
    const hiss = new OnsetDetector({ riseDb: 15, minDbfs: -45 });
    expect(onsets(hiss, noise(2000, -55))).toEqual([]);
    // A loud click (1 ms time constant), inside a window and across two windows' boundary.
    for (const offsetMs of [2, 8.5]) {
      const click = new OnsetDetector();
      expect(onsets(click, concat(noise(500 + offsetMs, -65), decaying(30, -6, 1, 5), noise(500, -65)))).toEqual([]);
    }
    // A pop of 5 ms at full level, inside a window and across a boundary.
    for (const offsetMs of [2.5, 7.5]) {
      const pop = new OnsetDetector();
      expect(onsets(pop, concat(noise(500 + offsetMs, -65), noise(5, -10, 5), noise(500, -65)))).toEqual([]);
    }
    // 10 ms of loud noise is held for a window: an onset (the VAD then hears no speech, and the call resumes).
    const burst = new OnsetDetector();
    expect(onsets(burst, concat(noise(500, -65), noise(10, -10, 5), noise(500, -65)))).toEqual([510]);
    const small = new OnsetDetector();
    // 10 dB over a -50 dB floor: under the 15 dB rise.
    expect(onsets(small, concat(noise(1000, -50), noise(500, -40, 9)))).toEqual([]);
    // A hum that starts loud is an onset once; after the floor has followed it (3 dB a second) it is the line.
    const hum = new OnsetDetector();
    expect(onsets(hum, concat(noise(500, -70), noise(12_000, -40, 11))).length).toBe(1);
    expect(hum.floorDb).toBeGreaterThan(-45);
    expect(onsets(hum, noise(2000, -40, 13))).toEqual([]);
  });

  it('reads frames that are not whole windows, and a louder line needs a louder onset', () => {
    const d = new OnsetDetector();
    // 25 ms frames; the line sits at -50 dB, so -40 dB is no onset but -30 dB is.
    const at = onsets(d, concat(noise(1000, -50), noise(300, -40, 4), noise(500, -50, 5), noise(300, -30, 6)), 25);
    expect(at).toHaveLength(1);
    expect(at[0]).toBeGreaterThan(1800);
    expect(at[0]).toBeLessThanOrEqual(1850);
  });
});
