// The dirty line's audio (bench/turn-taking/line-noise.ts): levels measured on the output, the echo's delay and
// attenuation read from an impulse.
import { describe, expect, it } from 'vitest';
import { Babble, EchoPath, PinkNoise, activeSpeechPower, mixInto, rmsForSnr, snrDb } from '../bench/turn-taking/line-noise.ts';
import { seededRandom } from '../test/support/seeded-random.ts';

const RATE = 48000;

/** Speech-like test audio: bursts of a tone at varying loudness, with gaps (the gaps do not count in its level). */
function bursts(seconds: number, seed = 1): Int16Array {
  const rnd = seededRandom(seed);
  const out = new Int16Array(seconds * RATE);
  for (let at = 0; at < out.length; ) {
    const len = Math.round((0.15 + rnd() * 0.3) * RATE);
    const amp = 2000 + rnd() * 6000;
    const f = 120 + rnd() * 200;
    for (let i = 0; i < len && at + i < out.length; i++) out[at + i] = Math.round(amp * Math.sin((2 * Math.PI * f * i) / RATE));
    at += len + Math.round((0.05 + rnd() * 0.2) * RATE);
  }
  return out;
}

describe('dirty line audio', () => {
  it('pink noise set for 20 dB under a speech measures 20 dB SNR on the mixed output (within 0.5 dB), for any stretch', () => {
    const speech = bursts(4);
    const level = activeSpeechPower(speech, RATE);
    const pink = new PinkNoise(rmsForSnr(level, 20), 7);
    for (let k = 0; k < 3; k++) {
      const mixed = mixInto(speech, pink.next(speech.length));
      expect(Math.abs(snrDb(speech, mixed, RATE) - 20)).toBeLessThan(0.5);
    }
  });

  it('pink noise is pink: about 3 dB less power each octave up (white noise: the same)', () => {
    // Power at one frequency (Goertzel), averaged over 4096-sample blocks.
    const powerAt = (x: Float64Array, f: number) => {
      const n = 4096;
      const c = 2 * Math.cos((2 * Math.PI * Math.round((f * n) / RATE)) / n);
      let sum = 0;
      let blocks = 0;
      for (let at = 0; at + n <= x.length; at += n, blocks++) {
        let s1 = 0;
        let s2 = 0;
        for (let i = 0; i < n; i++) [s1, s2] = [x[at + i]! + c * s1 - s2, s1];
        sum += s1 * s1 + s2 * s2 - c * s1 * s2;
      }
      return sum / blocks;
    };
    const octaves = (x: Float64Array) => [250, 500, 1000, 2000, 4000].map((f) => 10 * Math.log10(powerAt(x, f) / powerAt(x, 2 * f)));
    for (const dropDb of octaves(new PinkNoise(1000, 3).next(RATE * 20))) expect(Math.abs(dropDb - 3)).toBeLessThan(1.5);
    const white = seededRandom(5);
    for (const dropDb of octaves(Float64Array.from({ length: RATE * 20 }, () => white() * 2 - 1))) expect(Math.abs(dropDb)).toBeLessThan(1.5);
  });

  it('babble from several voices sits at the SNR asked for, and its loop has no seam', () => {
    const voices = [1, 2, 3, 4, 5].map((s) => bursts(3, 10 + s));
    const speech = bursts(4);
    const level = activeSpeechPower(speech, RATE);
    const babble = new Babble(voices, RATE * 5, rmsForSnr(level, 20), 9);
    const a = babble.next(RATE * 5);
    expect(Math.abs(snrDb(speech, mixInto(speech, a.subarray(0, speech.length)), RATE) - 20)).toBeLessThan(0.5);
    // Round the ring once more: the same samples, so the wrap is as continuous as any other point.
    expect(Array.from(babble.next(RATE * 5).subarray(0, 100))).toEqual(Array.from(a.subarray(0, 100)));
  });

  // A web caller's 10 ms frames at 48 kHz, and the SIP leg's: 20 ms RTP packets at 8 kHz.
  it.each([
    [48000, 10],
    [8000, 20],
  ])('the echo comes back 60 ms later and 20 dB down, at %i Hz in %i ms frames pushed and pulled in step', (rate, frameMs) => {
    const echo = new EchoPath({ rate });
    const frame = (rate * frameMs) / 1000;
    const out: number[] = [];
    for (let k = 0; k < 20; k++) {
      const f = new Int16Array(frame);
      if (k === 2) f[17] = 10000;
      echo.push(f);
      out.push(...echo.next(frame));
    }
    const at = out.findIndex((v) => v !== 0);
    expect(at - (2 * frame + 17)).toBe(0.06 * rate);
    expect(out[at]).toBeCloseTo(1000, 6);
    expect(out.filter((v) => v !== 0)).toHaveLength(1);
  });

  it('the echo keeps its delay after the agent went quiet (the line drained) and when pushes bunch up', () => {
    const echo = new EchoPath({ rate: RATE });
    const frame = RATE / 100;
    // Nothing pushed for 200 ms: the delay line drains.
    for (let k = 0; k < 20; k++) echo.next(frame);
    const impulse = new Int16Array(frame);
    impulse[0] = 10000;
    echo.push(impulse);
    const out: number[] = [...echo.next(frame)];
    for (let k = 0; k < 10; k++) {
      echo.push(new Int16Array(frame));
      out.push(...echo.next(frame));
    }
    expect(out.findIndex((v) => v !== 0)).toBe(0.06 * RATE);
    // Ten frames at once, then pulls: the line holds no more than the delay and a third of it.
    const bunched = new EchoPath({ rate: RATE });
    for (let k = 0; k < 10; k++) bunched.push(new Int16Array(frame).fill(1));
    let held = 0;
    while (bunched.next(frame).some((v) => v !== 0)) held += frame;
    expect(held).toBeLessThanOrEqual(0.06 * RATE + 0.02 * RATE + frame);
  });
});
