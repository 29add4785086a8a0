// The call recorder: mixing of real-time sources into a mono WAV written as it goes, and the upload.
import { afterAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AudioFrame } from '@livekit/rtc-node';
import { RecordingMixer } from './mixer.ts';
import { uploadRecording, UploadError } from './upload.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
async function tempFile(name = 'r.wav'): Promise<string> {
  const d = await mkdtemp(path.join(tmpdir(), 'vap-rec-test-'));
  dirs.push(d);
  return path.join(d, name);
}

/** A constant-level frame (a DC level makes the mix easy to read back exactly). */
function level(value: number, rate: number, ms: number, channels = 1): AudioFrame {
  const n = Math.round((rate * ms) / 1000);
  return new AudioFrame(new Int16Array(n * channels).fill(value), rate, channels, n);
}

function parseWav(buf: Buffer) {
  expect(buf.toString('ascii', 0, 4)).toBe('RIFF');
  expect(buf.toString('ascii', 8, 12)).toBe('WAVE');
  expect(buf.toString('ascii', 12, 16)).toBe('fmt ');
  expect(buf.toString('ascii', 36, 40)).toBe('data');
  const dataBytes = buf.readUInt32LE(40);
  return {
    riffSize: buf.readUInt32LE(4),
    format: buf.readUInt16LE(20),
    channels: buf.readUInt16LE(22),
    sampleRate: buf.readUInt32LE(24),
    byteRate: buf.readUInt32LE(28),
    bits: buf.readUInt16LE(34),
    dataBytes,
    samples: new Int16Array(buf.buffer.slice(buf.byteOffset + 44, buf.byteOffset + 44 + dataBytes)),
  };
}

/** Feeds `ms` of a level in 20 ms frames, each arriving when it ends (a real-time source). */
function feed(m: RecordingMixer, source: string, value: number, rate: number, fromMs: number, ms: number, t0: number) {
  for (let t = fromMs; t < fromMs + ms; t += 20) m.push(source, level(value, rate, 20), t0 + t + 20);
}

describe('RecordingMixer', () => {
  it('mixes both sides onto one timeline in a mono 16-bit WAV with correct sizes', async () => {
    const file = await tempFile();
    const t0 = 1_000_000;
    let now = t0;
    const m = new RecordingMixer({ path: file, sampleRate: 16000, now: () => now });
    // Caller speaks 0–1 s, agent 1.5–2.5 s, both 2.0–2.5 s (an interruption).
    feed(m, 'caller', 1000, 16000, 0, 1000, t0);
    feed(m, 'agent', 3000, 16000, 1500, 1000, t0);
    feed(m, 'caller', 1000, 16000, 2000, 500, t0);
    now = t0 + 2500;
    const info = await m.close();
    expect(info.durationSeconds).toBe(2.5);

    const buf = await readFile(file);
    const wav = parseWav(buf);
    expect(wav).toMatchObject({ format: 1, channels: 1, sampleRate: 16000, byteRate: 32000, bits: 16, dataBytes: 2.5 * 16000 * 2 });
    expect(wav.riffSize).toBe(buf.length - 8);
    expect(buf.length).toBe(44 + wav.dataBytes);
    const at = (s: number) => wav.samples[Math.round(s * 16000)];
    expect(at(0.5)).toBe(1000); // caller alone
    expect(at(1.25)).toBe(0); // nobody
    expect(at(1.75)).toBe(3000); // agent alone
    expect(at(2.25)).toBe(4000); // both, summed
    expect(wav.samples.filter((v) => v === 0).length).toBe(0.5 * 16000);
  });

  it('writes as it goes and keeps only the unsettled tail in memory', async () => {
    const file = await tempFile();
    const t0 = 5_000_000;
    const m = new RecordingMixer({ path: file, sampleRate: 8000, now: () => t0 });
    for (let s = 0; s < 10; s++) {
      feed(m, 'caller', 500, 8000, s * 1000, 1000, t0);
      m.flush(t0 + (s + 1) * 1000);
    }
    // Everything but the last 600 ms settle window is written already.
    expect(m.writtenSamples).toBe(Math.round(9.4 * 8000));
    expect(m.file.dataBytes).toBe(m.writtenSamples * 2);
    const info = await m.close();
    expect(info.durationSeconds).toBe(10);
    expect((await stat(file)).size).toBe(44 + 10 * 8000 * 2);
  });

  it('resamples and downmixes other formats, and places a source that paused where it resumed', async () => {
    const file = await tempFile();
    const t0 = 0;
    const m = new RecordingMixer({ path: file, sampleRate: 16000, now: () => t0 });
    // 48 kHz stereo agent audio for 1 s, then a 2 s pause, then 1 s more.
    for (let t = 0; t < 1000; t += 10) m.push('agent', level(2000, 48000, 10, 2), t0 + t + 10);
    for (let t = 3000; t < 4000; t += 10) m.push('agent', level(2000, 48000, 10, 2), t0 + t + 10);
    const info = await m.close();
    // The resampler holds back a few samples at the edges; the timeline stays 4 s long within that.
    expect(Math.abs(info.durationSeconds - 4)).toBeLessThan(0.02);
    const wav = parseWav(await readFile(file));
    expect(wav.sampleRate).toBe(16000);
    const at = (s: number) => wav.samples[Math.round(s * 16000)]!;
    expect(Math.abs(at(0.5) - 2000)).toBeLessThan(20);
    expect(at(2)).toBe(0);
    expect(Math.abs(at(3.5) - 2000)).toBeLessThan(20);
  });

  it('drops audio that arrives after its place was written, and clips loud sums', async () => {
    const file = await tempFile();
    const t0 = 0;
    const m = new RecordingMixer({ path: file, sampleRate: 8000, now: () => t0 });
    feed(m, 'a', 30000, 8000, 0, 1000, t0);
    feed(m, 'b', 30000, 8000, 0, 1000, t0);
    m.flush(t0 + 2000);
    expect(m.writtenSamples).toBe(Math.round(1.4 * 8000));
    // A frame that belongs at 0.5 s shows up now: too late.
    m.push('c', level(100, 8000, 20), t0 + 520);
    expect(m.droppedSamples).toBe(160);
    const info = await m.close();
    const wav = parseWav(await readFile(file));
    expect(info.dataBytes).toBe(wav.dataBytes);
    expect(wav.samples[100]).toBe(32767);
  });
});

describe('uploadRecording', () => {
  const received: { headers: IncomingMessage['headers']; body: Buffer }[] = [];
  let answers: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(answers.shift() ?? 204).end();
    });
  });
  const url = async () => {
    if (!server.listening) await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/internal/v1/calls/x/recording?expires=1&signature=s`;
  };
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('streams the file with its type and length, retrying 5xx and 429', async () => {
    const file = await tempFile('up.wav');
    const body = Buffer.alloc(300_000, 9);
    await writeFile(file, body);
    answers = [503, 429, 204];
    received.length = 0;
    const retries: number[] = [];
    const res = await uploadRecording({ url: await url(), path: file, contentType: 'audio/wav', baseDelayMs: 1, maxDelayMs: 2, onRetry: (i) => retries.push(i.status ?? 0) });
    expect(res).toEqual({ attempts: 3, bytes: body.length });
    expect(retries).toEqual([503, 429]);
    expect(received).toHaveLength(3);
    for (const r of received) {
      expect(r.headers['content-type']).toBe('audio/wav');
      expect(r.headers['content-length']).toBe(String(body.length));
      expect(r.body.equals(body)).toBe(true);
    }
  });

  it('gives up at once on a refused URL, and after the last attempt on errors', async () => {
    const file = await tempFile('up2.wav');
    await writeFile(file, Buffer.alloc(10));
    answers = [403];
    received.length = 0;
    const refused = await uploadRecording({ url: await url(), path: file, contentType: 'audio/wav', baseDelayMs: 1 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(UploadError);
    expect((refused as UploadError).status).toBe(403);
    expect(received).toHaveLength(1);

    // Nothing listens on port 9: connection refused every time.
    const down = await uploadRecording({ url: 'http://127.0.0.1:9/x', path: file, contentType: 'audio/wav', attempts: 3, baseDelayMs: 1, maxDelayMs: 2 }).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(UploadError);
    expect((down as Error).message).toMatch(/after 3 attempts/);
  });
});
