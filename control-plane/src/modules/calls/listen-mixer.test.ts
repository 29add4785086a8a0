// The listen stream's frames and backpressure, without a room: each side on its own channel, silence where a side
// has nothing, both channels aligned, bounded queues; and a slow client losing frames, then closed.
import { describe, expect, it } from 'vitest';
import { FRAME_BYTES, FRAME_SAMPLES, StereoMixer } from './listen-mixer.ts';
import { FrameGate } from './listen-backpressure.ts';
import { sideOf } from './listen-room.ts';

const channel = (frame: Buffer, ch: 0 | 1) => Int16Array.from({ length: FRAME_SAMPLES }, (_, i) => frame.readInt16LE(i * 4 + ch * 2));
const constant = (v: number, n = FRAME_SAMPLES) => new Int16Array(n).fill(v);

describe('the stereo mixer', () => {
  it('puts the caller on channel 0 and the agent on 1, silence where a side has nothing', () => {
    const m = new StereoMixer();
    m.add('caller-track', 0);
    m.add('agent-track', 1);
    m.push('caller-track', constant(1000, FRAME_SAMPLES * 2));
    let f = m.frame();
    expect(f.length).toBe(FRAME_BYTES);
    expect(new Set(channel(f, 0))).toEqual(new Set([1000]));
    expect(new Set(channel(f, 1))).toEqual(new Set([0]));
    m.push('agent-track', constant(-2000));
    f = m.frame();
    expect(new Set(channel(f, 0))).toEqual(new Set([1000]));
    expect(new Set(channel(f, 1))).toEqual(new Set([-2000]));
    // Both queues empty: a frame of silence all the same (the stream keeps its pace).
    f = m.frame();
    expect(f.length).toBe(FRAME_BYTES);
    expect(f.every((b) => b === 0)).toBe(true);
  });

  it('waits for a whole frame of a track, sums a side, clips, bounds a queue at 200 ms, and forgets removed tracks', () => {
    const m = new StereoMixer();
    m.add('a', 1);
    m.add('b', 1);
    m.push('a', constant(30000, FRAME_SAMPLES / 2));
    expect(channel(m.frame(), 1).every((v) => v === 0)).toBe(true);
    m.push('a', constant(30000, FRAME_SAMPLES / 2));
    m.push('b', constant(10000));
    expect(new Set(channel(m.frame(), 1))).toEqual(new Set([32767]));
    // 1 s queued: only the newest 200 ms (10 frames) is kept.
    m.push(
      'a',
      Int16Array.from({ length: FRAME_SAMPLES * 50 }, (_, i) => Math.floor(i / FRAME_SAMPLES)),
    );
    const firsts = Array.from({ length: 11 }, () => channel(m.frame(), 1)[0]);
    expect(firsts).toEqual([40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 0]);
    m.remove('a');
    m.push('a', constant(5));
    expect(channel(m.frame(), 1).every((v) => v === 0)).toBe(true);
  });
});

describe("the participants' sides", () => {
  it('the web caller and the phone line are the caller; the agent, a person who took over and a transfer leg the agent', () => {
    expect(sideOf({ identity: 'user-c1', kind: 0 }, 'c1')).toBe(0);
    expect(sideOf({ identity: 'sip-c1', kind: 3 }, 'c1')).toBe(0);
    expect(sideOf({ identity: 'transfer-t1', kind: 3 }, 'c1')).toBe(1);
    expect(sideOf({ identity: 'agent-AJ_x', kind: 4 }, 'c1')).toBe(1);
    expect(sideOf({ identity: 'supervisor-p', kind: 0 }, 'c1')).toBe(1);
    // Another call's web caller in this room (it could not be) would not be taken for this caller.
    expect(sideOf({ identity: 'user-c2', kind: 0 }, 'c1')).toBe(1);
  });
});

describe('backpressure', () => {
  it('drops frames while the unsent data is over the limit, and says too_slow once it stayed over too long', () => {
    let now = 0;
    const gate = new FrameGate(1000, 10_000, () => now);
    const sent: Buffer[] = [];
    const sink = { bufferedAmount: 0, send: (f: Buffer) => void sent.push(f) };
    expect(gate.offer(sink, Buffer.alloc(4))).toBe('sent');
    sink.bufferedAmount = 5000;
    expect(gate.offer(sink, Buffer.alloc(4))).toBe('dropped');
    now = 9_000;
    expect(gate.offer(sink, Buffer.alloc(4))).toBe('dropped');
    // It caught up: the count of slowness starts again.
    sink.bufferedAmount = 0;
    expect(gate.offer(sink, Buffer.alloc(4))).toBe('sent');
    sink.bufferedAmount = 5000;
    now = 12_000;
    expect(gate.offer(sink, Buffer.alloc(4))).toBe('dropped');
    now = 22_001;
    expect(gate.offer(sink, Buffer.alloc(4))).toBe('too_slow');
    expect({ sent: sent.length, dropped: gate.dropped }).toEqual({ sent: 2, dropped: 4 });
  });
});
