import { APIConnectionError, initializeLogger } from '@livekit/agents';
import type { TTSMetrics } from '@livekit/agents';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { collect, type Audio } from '../../test/support/tts-stream.ts';
import { LocalTTS } from './local-tts.ts';
import { WavStreamParser } from '../wav-stream.ts';

/** The error event's payload (the type itself is not exported by agents). */
type TTSError = { error: Error; recoverable: boolean };

beforeAll(() => {
  initializeLogger({ pretty: false, level: 'warn' });
});

const seconds = (audio: Audio[]) => audio.reduce((s, a) => s + a.frame.samplesPerChannel / a.frame.sampleRate, 0);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('WavStreamParser', () => {
  function wav(pcmBytes: number, size: number, extraChunk = false): Buffer {
    const fmt = Buffer.alloc(24);
    fmt.write('fmt ', 0, 'latin1');
    fmt.writeUInt32LE(16, 4);
    fmt.writeUInt16LE(1, 8);
    fmt.writeUInt16LE(1, 10);
    fmt.writeUInt32LE(16000, 12);
    fmt.writeUInt32LE(32000, 16);
    fmt.writeUInt16LE(2, 20);
    fmt.writeUInt16LE(16, 22);
    const list = Buffer.from('LIST\x03\x00\x00\x00abc\x00', 'latin1'); // odd size, padded
    const data = Buffer.alloc(8 + pcmBytes, 7);
    data.write('data', 0, 'latin1');
    data.writeUInt32LE(size, 4);
    const head = Buffer.from('RIFF\x00\x00\x00\x00WAVE', 'latin1');
    return Buffer.concat([head, fmt, ...(extraChunk ? [list] : []), data]);
  }

  it('reads a streamed WAV (placeholder sizes) to the end, byte by byte, on sample boundaries', () => {
    const parser = new WavStreamParser();
    const input = wav(101, 0x7ffff000, true);
    const out: Buffer[] = [];
    for (let i = 0; i < input.length; i++) out.push(...parser.push(input.subarray(i, i + 1)));
    expect(parser.format).toEqual({ sampleRate: 16000, numChannels: 1, bitsPerSample: 16 });
    expect(out.every((b) => b.length % 2 === 0)).toBe(true);
    expect(Buffer.concat(out).length).toBe(100);
  });

  it('reads WAVs with real sizes back to back', () => {
    const parser = new WavStreamParser();
    const pcm = parser.push(Buffer.concat([wav(10, 10), wav(6, 6)]));
    expect(Buffer.concat(pcm).length).toBe(16);
  });

  it('rejects what is not a WAV', () => {
    expect(() => new WavStreamParser().push(Buffer.from('this is no wave file'))).toThrow(/RIFF/);
  });
});

describe('LocalTTS (espeak-ng)', () => {
  it('synthesizes a sentence as 20 ms frames at 22.05 kHz, the last one final, with one metrics event', async () => {
    const engine = new LocalTTS({ model: 'espeak-ng', voice: 'en-us' });
    const metrics: TTSMetrics[] = [];
    engine.on('metrics_collected', (m) => metrics.push(m));
    const { audio } = await collect(engine.synthesize('Hello there. This is a test of the local voice.'));
    expect(engine.sampleRate).toBe(22050);
    expect(audio.length).toBeGreaterThan(50);
    expect(audio.slice(0, -1).every((a) => a.frame.samplesPerChannel === 441 && !a.final)).toBe(true);
    expect(audio.at(-1)!.final).toBe(true);
    expect(seconds(audio)).toBeGreaterThan(1.5);
    // Not silence.
    expect(audio.some((a) => a.frame.data.some((s) => Math.abs(s) > 1000))).toBe(true);
    await vi.waitFor(() => expect(metrics).toHaveLength(1));
    expect(metrics[0]).toMatchObject({ type: 'tts_metrics', label: 'local.TTS', streamed: false, metadata: { modelProvider: 'local', modelName: 'espeak-ng' } });
    expect(metrics[0]!.ttfbMs).toBeGreaterThanOrEqual(0);
  });

  it('speaks faster with a higher speed', async () => {
    const text = 'The quick brown fox jumps over the lazy dog.';
    const normal = seconds((await collect(new LocalTTS({ speed: 1 }).synthesize(text))).audio);
    const fast = seconds((await collect(new LocalTTS({ speed: 1.6 }).synthesize(text))).audio);
    expect(fast).toBeLessThan(normal * 0.8);
  });

  it('streams: one segment per flush, each ending in a final frame, then the end of stream', async () => {
    const engine = new LocalTTS();
    const stream = engine.stream();
    stream.pushText('Good morning, this is your assistant. ');
    stream.pushText('How can I help you today?');
    stream.flush();
    stream.pushText('Please tell me what you need.');
    stream.endInput();
    const { audio, ends } = await collect(stream);
    const segments = [...new Set(audio.map((a) => a.segmentId))];
    expect(segments).toHaveLength(2);
    expect(audio.filter((a) => a.final)).toHaveLength(2);
    expect(ends).toBe(1);
    expect(seconds(audio)).toBeGreaterThan(3);
  });

  it('kills the synthesizer when aborted', async () => {
    const engine = new LocalTTS({ speed: 0.5 });
    const controller = new AbortController();
    const long = 'This sentence goes on and on for a long time so that synthesis is still running. '.repeat(40);
    const stream = engine.synthesize(long, undefined, controller.signal);
    const first = await stream.next();
    expect(first.done).toBe(false);
    const pids = engine._runningPids;
    controller.abort();
    for await (const _ of stream) {
      // drain
    }
    await vi.waitFor(() => expect(pids.filter(alive)).toEqual([]));
    expect(engine._runningPids).toEqual([]);
  });

  it('reports a missing binary as a final error event and ends the stream', async () => {
    const engine = new LocalTTS({ espeakPath: '/nonexistent/espeak-ng' });
    const errors: TTSError[] = [];
    engine.on('error', (e) => errors.push(e));
    const { audio } = await collect(engine.synthesize('Hello.'));
    expect(audio).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toBeInstanceOf(APIConnectionError);
    expect((errors[0]!.error as APIConnectionError).retryable).toBe(false);
    expect(errors[0]!.recoverable).toBe(false);
  });

  it('rejects unknown voices and models at construction', () => {
    expect(() => new LocalTTS({ model: 'festival', voice: 'en-us' })).toThrow(/unknown festival voice/);
    expect(() => new LocalTTS({ voice: 'en us; rm -rf' })).toThrow(/invalid espeak-ng voice/);
    expect(() => new LocalTTS({ model: 'flite' as never })).toThrow(/unknown local TTS model/);
  });
});

describe('LocalTTS (festival)', () => {
  it('synthesizes with the HTS voice at 32 kHz, and faster with a higher speed', async () => {
    const text = 'Thank you for calling. How can I help?';
    const normal = new LocalTTS({ model: 'festival' });
    const fast = new LocalTTS({ model: 'festival', speed: 1.5 });
    try {
      expect(normal.sampleRate).toBe(32000);
      const a = (await collect(normal.synthesize(text))).audio;
      const b = (await collect(fast.synthesize(text))).audio;
      expect(a.at(-1)!.final).toBe(true);
      expect(seconds(a)).toBeGreaterThan(1.5);
      expect(seconds(b)).toBeLessThan(seconds(a) * 0.8);
    } finally {
      await normal.close();
      await fast.close();
    }
  });

  it('streams sentences through warm processes and keeps quotes and backslashes out of Scheme', async () => {
    const engine = new LocalTTS({ model: 'festival' });
    try {
      engine.prewarm();
      const stream = engine.stream();
      stream.pushText('She said "hello" to me. Then a back\\slash appeared in the text.');
      stream.endInput();
      const { audio, ends } = await collect(stream);
      expect(ends).toBe(1);
      expect(seconds(audio)).toBeGreaterThan(2);
      expect(audio.filter((a) => a.final)).toHaveLength(1);
    } finally {
      await engine.close();
    }
  });
});
