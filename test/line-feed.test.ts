// What a caller on a dirty line sends (bench/support/mic.ts, LineFeed), at the SIP leg's 8 kHz: the clips in turn
// with the line under them and where each began and ended; and the line's audio made at 8 kHz
// (bench/turn-taking/line-noise.ts) holding its level and its colour there (the echo at 8 kHz: line-noise.test.ts).
import { describe, expect, it } from 'vitest';
import { LineFeed } from '../bench/support/mic.ts';
import { PinkNoise, activeSpeechPower, mixInto, rmsForSnr, snrDb } from '../bench/turn-taking/line-noise.ts';

const RATE = 8000;
const FRAME = 160;

const tone = (n: number, amp: number, rate = RATE) => Int16Array.from({ length: n }, (_, i) => Math.round(amp * Math.sin((2 * Math.PI * 440 * i) / rate)));
/** A line that adds the same value to every sample. */
const constant = (v: number) => ({ next: (n: number) => new Float64Array(n).fill(v) });

describe('LineFeed at 8 kHz', () => {
  it('sends each clip in turn from a frame start, the line under it and under the silence between, and says where each ended', async () => {
    const feed = new LineFeed(RATE, constant(7));
    const first = feed.say({ samples: tone(400, 5000), sampleRate: RATE });
    const second = feed.say({ samples: tone(160, 3000), sampleRate: RATE });
    const frames = Array.from({ length: 5 }, () => feed.next(FRAME));
    // 400 samples: frames 0-2, ending 80 samples into frame 2; the second clip starts with frame 3, fills it.
    expect(frames.map((f) => f.began)).toEqual([0, undefined, undefined, 0, undefined]);
    expect(frames.map((f) => f.ended?.at)).toEqual([undefined, undefined, 80, 160, undefined]);
    expect(frames[2]!.ended!.durationMs).toBe(50);
    const sent = Array.from(frames.slice(0, 3).flatMap((f) => Array.from(f.samples)));
    expect(sent.slice(0, 400)).toEqual(Array.from(tone(400, 5000)).map((s) => s + 7));
    // After the clip: the line alone.
    expect(sent.slice(400)).toEqual(new Array(80).fill(7));
    expect(Array.from(frames[4]!.samples)).toEqual(new Array(FRAME).fill(7));
    // The sender settles each say() with its times.
    frames[2]!.ended!.settle({ start: 1, end: 51 });
    frames[3]!.ended!.settle({ start: 60, end: 80 });
    expect(await first).toEqual({ start: 1, end: 51 });
    expect(await second).toEqual({ start: 60, end: 80 });
  });

  it('resamples a 48 kHz clip to the feed rate (its length in time kept) and clips the sum to int16', () => {
    const feed = new LineFeed(RATE, constant(30000));
    void feed.say({ samples: tone(4800, 20000, 48000), sampleRate: 48000 });
    const frames = Array.from({ length: 6 }, () => feed.next(FRAME));
    // 100 ms at 48 kHz is 800 samples at 8 kHz: five frames.
    expect(frames.findIndex((f) => f.ended)).toBe(4);
    const all = frames.flatMap((f) => Array.from(f.samples));
    expect(Math.max(...all)).toBe(32767);
    expect(Math.min(...all)).toBeGreaterThanOrEqual(-32768);
  });

  it('with no line, sends silence between clips', () => {
    const feed = new LineFeed(RATE);
    expect(Array.from(feed.next(FRAME).samples)).toEqual(new Array(FRAME).fill(0));
  });
});

describe('the line at 8 kHz', () => {
  it('pink noise set for 20 dB under a speech at 8 kHz measures 20 dB SNR there, and stays pink across the telephone band', () => {
    // Speech-like: a tone in bursts.
    const speech = new Int16Array(RATE * 4);
    for (let at = 0; at < speech.length; at += RATE / 2) speech.set(tone(RATE / 4, 6000), at);
    const pink = new PinkNoise(rmsForSnr(activeSpeechPower(speech, RATE), 20), 4);
    expect(Math.abs(snrDb(speech, mixInto(speech, pink.next(speech.length)), RATE) - 20)).toBeLessThan(0.5);
    // Power at a frequency (Goertzel over 1024-sample blocks): about 3 dB less each octave, 250 Hz to 2 kHz.
    const x = pink.next(RATE * 30);
    const powerAt = (f: number) => {
      const n = 1024;
      const c = 2 * Math.cos((2 * Math.PI * Math.round((f * n) / RATE)) / n);
      let sum = 0;
      for (let at = 0; at + n <= x.length; at += n) {
        let [s1, s2] = [0, 0];
        for (let i = 0; i < n; i++) [s1, s2] = [x[at + i]! + c * s1 - s2, s1];
        sum += s1 * s1 + s2 * s2 - c * s1 * s2;
      }
      return sum;
    };
    for (const f of [250, 500, 1000]) expect(Math.abs(10 * Math.log10(powerAt(f) / powerAt(2 * f)) - 3)).toBeLessThan(1.5);
  });
});
