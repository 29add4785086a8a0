import { beforeAll, describe, expect, it } from 'vitest';
import { AudioByteStream, initializeLogger } from '@livekit/agents';
import type { AudioFrame } from '@livekit/rtc-node';
import { PcmFramer } from './pcm-framer.ts';

/** Deterministic bytes: a seeded generator, so a failure reproduces. */
function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Splits `all` into chunks of random sizes (0 to max bytes), odd sizes included. */
function chunks(all: Uint8Array, max: number, seed: number): Uint8Array[] {
  const sizes = bytes(all.length, seed);
  const out: Uint8Array[] = [];
  for (let at = 0, i = 0; at < all.length; i++) {
    const n = Math.min(all.length - at, ((sizes[i % sizes.length]! * 257 + i) % max) + (i % 3 === 0 ? 0 : 1));
    out.push(all.subarray(at, at + n));
    at += n;
  }
  return out;
}

const view = (f: AudioFrame) => ({ rate: f.sampleRate, ch: f.channels, n: f.samplesPerChannel, data: Array.from(f.data) });

beforeAll(() => {
  initializeLogger({ pretty: false, level: 'warn' });
});

describe('PcmFramer', () => {
  it('makes the frames agents-js AudioByteStream makes, for any chunking', () => {
    for (const [rate, perFrame, seed] of [
      [24000, 480, 1],
      [22050, 441, 2],
      [16000, 1600, 3],
      [8000, 160, 4],
    ] as const) {
      // Whole samples in all: AudioByteStream's flush makes a mono frame of what is left.
      const all = bytes(2 * (perFrame * 7 + 123), seed);
      const ours = new PcmFramer(rate, 1, perFrame);
      const theirs = new AudioByteStream(rate, 1, perFrame);
      const a: AudioFrame[] = [];
      const b: AudioFrame[] = [];
      for (const c of chunks(all, 3 * perFrame, seed + 10)) {
        a.push(...ours.write(Buffer.from(c)));
        b.push(...theirs.write(Buffer.from(c)));
      }
      a.push(...ours.flush());
      b.push(...theirs.flush());
      expect(a.map(view)).toEqual(b.map(view));
      expect(a.length).toBe(8);
    }
  });

  it('owns its frames: reusing a chunk after the write changes none of them', () => {
    const framer = new PcmFramer(8000, 1, 4);
    const chunk = new Uint8Array([1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0]);
    const [frame] = framer.write(chunk);
    chunk.fill(9);
    const [rest] = framer.write(new Uint8Array([7, 0, 8, 0]));
    expect(Array.from(frame!.data)).toEqual([1, 2, 3, 4]);
    expect(Array.from(rest!.data)).toEqual([5, 6, 7, 8]);
  });

  it('keeps a byte that splits a sample until its other half comes', () => {
    const framer = new PcmFramer(8000, 1, 2);
    expect(framer.write(new Uint8Array([1, 0, 2]))).toEqual([]);
    const [frame] = framer.write(new Uint8Array([0]));
    expect(Array.from(frame!.data)).toEqual([1, 2]);
    expect(framer.flush()).toEqual([]);
  });

  it('flushes what is left as a shorter frame, and drops half a sample', () => {
    const framer = new PcmFramer(8000, 2, 4);
    framer.write(new Uint8Array([1, 0, 2, 0, 3, 0, 4, 0]));
    const [short] = framer.flush();
    expect(short!.samplesPerChannel).toBe(2);
    expect(short!.channels).toBe(2);
    framer.write(new Uint8Array([1, 0, 2]));
    expect(framer.flush()).toEqual([]);
  });

  it('writes a large chunk in time linear in its size (no per-byte array)', () => {
    // 10 s of 24 kHz audio in one write: the frames cover it exactly.
    const framer = new PcmFramer(24000, 1, 480);
    const frames = framer.write(new Uint8Array(480_000));
    expect(frames).toHaveLength(500);
    expect(frames.every((f) => f.samplesPerChannel === 480 && f.data.byteOffset === 0)).toBe(true);
  });
});
