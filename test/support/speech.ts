// Speech for the end-to-end tests, with no network: synthesis with festival (or espeak-ng), WAV files in
// and out, and batch transcription with the pocketsphinx CLI (Debian `pocketsphinx`, `pocketsphinx-en-us`).
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { AudioFrame, AudioResampler } from '@livekit/rtc-node';

const run = promisify(execFile);

/** Mono 16-bit PCM. */
export interface Pcm {
  samples: Int16Array;
  sampleRate: number;
}

/** The samples of `parts`, one after the other. */
export function concatSamples(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Reads a PCM WAV file (mono or interleaved channels, which are averaged). Streamed WAVs (espeak-ng
 * --stdout) carry placeholder sizes, so a data chunk runs to the end of the file when its size is too big.
 */
export function decodeWav(buf: Buffer): Pcm {
  if (buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') throw new Error('not a WAV file');
  let off = 12;
  let fmt: { format: number; channels: number; sampleRate: number; bits: number } | null = null;
  while (off + 8 <= buf.length) {
    const id = buf.toString('ascii', off, off + 4);
    let size = buf.readUInt32LE(off + 4);
    const body = off + 8;
    if (id === 'fmt ') {
      fmt = { format: buf.readUInt16LE(body), channels: buf.readUInt16LE(body + 2), sampleRate: buf.readUInt32LE(body + 4), bits: buf.readUInt16LE(body + 14) };
    } else if (id === 'data') {
      if (!fmt) throw new Error('WAV data before fmt');
      // 0xFFFE is WAVE_FORMAT_EXTENSIBLE, PCM in practice for these tools.
      if ((fmt.format !== 1 && fmt.format !== 0xfffe) || fmt.bits !== 16) throw new Error(`unsupported WAV: format ${fmt.format}, ${fmt.bits} bits`);
      if (size === 0 || body + size > buf.length) size = buf.length - body;
      const frames = Math.floor(size / 2 / fmt.channels);
      const samples = new Int16Array(frames);
      for (let i = 0; i < frames; i++) {
        let sum = 0;
        for (let c = 0; c < fmt.channels; c++) sum += buf.readInt16LE(body + (i * fmt.channels + c) * 2);
        samples[i] = Math.round(sum / fmt.channels);
      }
      return { samples, sampleRate: fmt.sampleRate };
    }
    off = body + size + (size & 1);
  }
  throw new Error('WAV without a data chunk');
}

export function readWav(file: string): Pcm {
  return decodeWav(readFileSync(file));
}

export function encodeWav({ samples, sampleRate }: Pcm): Buffer {
  const header = Buffer.alloc(44);
  const dataSize = samples.length * 2;
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + dataSize, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataSize, 40);
  return Buffer.concat([header, Buffer.from(samples.buffer, samples.byteOffset, dataSize)]);
}

export function writeWav(file: string, pcm: Pcm): void {
  writeFileSync(file, encodeWav(pcm));
}

/** Resamples with the rtc-node resampler (libsoxr underneath). */
export function resample(pcm: Pcm, sampleRate: number): Pcm {
  if (pcm.sampleRate === sampleRate) return pcm;
  const r = new AudioResampler(pcm.sampleRate, sampleRate, 1);
  const out = [...r.push(new AudioFrame(pcm.samples, pcm.sampleRate, 1, pcm.samples.length)), ...r.flush()];
  const total = out.reduce((n, f) => n + f.samplesPerChannel, 0);
  const samples = new Int16Array(total);
  let at = 0;
  for (const f of out) {
    samples.set(f.data.subarray(0, f.samplesPerChannel), at);
    at += f.samplesPerChannel;
  }
  return { samples, sampleRate };
}

export type SpeechEngine = 'festival' | 'espeak-ng';

/**
 * Synthesizes `text` to PCM. festival with the HTS voice (`festvox-us-slt-hts`) is the default: pocketsphinx
 * understands it best (about 3 % word errors against 83 % for plain espeak-ng).
 */
export async function synthesize(text: string, engine: SpeechEngine = 'festival'): Promise<Pcm> {
  const dir = mkdtempSync(path.join(tmpdir(), 'vap-tts-'));
  try {
    const out = path.join(dir, 'speech.wav');
    if (engine === 'festival') {
      const txt = path.join(dir, 'speech.txt');
      writeFileSync(txt, text);
      await run('text2wave', ['-eval', '(voice_cmu_us_slt_arctic_hts)', '-o', out, txt]);
    } else {
      await run('espeak-ng', ['-v', 'en-us', '-w', out, text]);
    }
    return readWav(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface TranscribeOptions {
  /** A JSGF grammar of the expected sentences, for exact recognition of a closed set. */
  jsgf?: string;
  /** For 8 kHz audio: fill the empty 4-8 kHz band (see fillUpperBand). On by default; off shows why. */
  fillUpperBand?: boolean;
}

/**
 * Transcribes speech with pocketsphinx_continuous (batch, en-US model). Returns the recognised words,
 * lower case, one utterance per line joined by spaces.
 */
export async function transcribe(audio: Pcm | string, opts: TranscribeOptions = {}): Promise<string> {
  const input = typeof audio === 'string' ? readWav(audio) : audio;
  // Digital silence before the speech (a recording that waited for the agent) throws the decoder off.
  let pcm = trimLeadingSilence(resample(input, 16000));
  if (input.sampleRate === 8000 && opts.fillUpperBand !== false) pcm = fillUpperBand(pcm);
  const dir = mkdtempSync(path.join(tmpdir(), 'vap-stt-'));
  try {
    const wav = path.join(dir, 'in.wav');
    writeWav(wav, pcm);
    const args = ['-infile', wav, '-samprate', '16000', '-logfn', '/dev/null'];
    if (opts.jsgf) {
      const g = path.join(dir, 'grammar.jsgf');
      writeFileSync(g, opts.jsgf);
      args.push('-jsgf', g);
    }
    const text = await new Promise<string>((resolve, reject) => {
      const p = spawn('pocketsphinx_continuous', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      p.stdout.on('data', (d) => (out += d));
      p.stderr.on('data', (d) => (err += d));
      p.once('error', reject);
      p.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`pocketsphinx_continuous exited ${code}: ${err.slice(-500)}`))));
    });
    return text.split('\n').map((l) => l.trim()).filter(Boolean).join(' ').toLowerCase();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The en-US acoustic model is wideband (16 kHz, mel filters up to 6.8 kHz). Telephone audio (8 kHz G.711)
 * upsampled to 16 kHz has nothing above 4 kHz, so the upper filters' log energies sit far below anything
 * the model was trained on and recognition collapses ("hm" for a clear sentence), even for festival's voice
 * resampled cleanly to 8 kHz. A low, fixed noise floor in the empty band (`level` RMS, int16 scale; a seeded
 * generator, so results repeat) brings those filters back into range without touching the speech band:
 * white noise at 8 kHz, upsampled (band-limited to 0-4 kHz), then mirrored to 4-8 kHz by flipping the sign
 * of every other sample.
 */
export function fillUpperBand(pcm: Pcm, level = 20): Pcm {
  if (pcm.sampleRate !== 16000) throw new Error('fillUpperBand takes 16 kHz audio (8 kHz audio upsampled)');
  let seed = 1;
  const random = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return (seed / 0x7fffffff) * 2 - 1;
  };
  const half = Math.ceil(pcm.samples.length / 2) + 64;
  const white = new Int16Array(half);
  // Uniform noise of RMS `level`.
  for (let i = 0; i < half; i++) white[i] = Math.round(random() * level * Math.sqrt(3));
  const low = resample({ samples: white, sampleRate: 8000 }, 16000).samples;
  const out = new Int16Array(pcm.samples.length);
  for (let i = 0; i < out.length; i++) {
    const v = pcm.samples[i]! + (i % 2 ? -1 : 1) * (low[i] ?? 0);
    out[i] = Math.max(-32768, Math.min(32767, v));
  }
  return { samples: out, sampleRate: 16000 };
}

/** Drops leading audio quieter than `rms` (int16 scale, 20 ms windows), keeping `keepMs` before the speech. */
export function trimLeadingSilence(pcm: Pcm, rms = 100, keepMs = 300): Pcm {
  const win = Math.round(pcm.sampleRate / 50);
  for (let i = 0; i + win <= pcm.samples.length; i += win) {
    let sum = 0;
    for (let j = i; j < i + win; j++) sum += pcm.samples[j]! * pcm.samples[j]!;
    if (Math.sqrt(sum / win) >= rms) {
      const start = Math.max(0, i - Math.round((keepMs / 1000) * pcm.sampleRate));
      return { ...pcm, samples: pcm.samples.subarray(start) };
    }
  }
  return pcm;
}

/** The words of `reference` (lower case, in order, each counted once) that appear in `hypothesis`. */
export function wordsFound(reference: string, hypothesis: string): string[] {
  const words = (t: string) => t.toLowerCase().replace(/[^a-z0-9' ]+/g, ' ').split(/\s+/).filter(Boolean);
  const heard = new Set(words(hypothesis));
  return [...new Set(words(reference))].filter((w) => heard.has(w));
}

/** Word error rate of `hypothesis` against `reference` (Levenshtein over words), for tolerant assertions. */
export function wordErrorRate(reference: string, hypothesis: string): number {
  const words = (s: string) => s.toLowerCase().replace(/[^a-z0-9' ]+/g, ' ').split(/\s+/).filter(Boolean);
  const r = words(reference);
  const h = words(hypothesis);
  if (r.length === 0) return h.length ? 1 : 0;
  let prev = Array.from({ length: h.length + 1 }, (_, j) => j);
  for (let i = 1; i <= r.length; i++) {
    const cur = [i];
    for (let j = 1; j <= h.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (r[i - 1] === h[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[h.length]! / r.length;
}

/** How long the agent's voice (festival) takes to say `text`, without its leading and trailing silence. */
export async function spokenSeconds(text: string): Promise<number> {
  const pcm = await synthesize(text);
  const loud = (i: number) => Math.abs(pcm.samples[i]!) > 300;
  let first = 0;
  let last = pcm.samples.length - 1;
  while (first < last && !loud(first)) first++;
  while (last > first && !loud(last)) last--;
  return (last - first) / pcm.sampleRate;
}

/** Loudness (dB) of each 20 ms frame. */
function envelope(pcm: Pcm): number[] {
  const win = Math.round(pcm.sampleRate / 50);
  const out: number[] = [];
  for (let i = 0; i + win <= pcm.samples.length; i += win) {
    let sum = 0;
    for (let j = i; j < i + win; j++) sum += pcm.samples[j]! * pcm.samples[j]!;
    out.push(10 * Math.log10(sum / win + 1));
  }
  return out;
}

function pearson(a: number[], b: number[]): number {
  const n = a.length;
  const ma = a.reduce((s, x) => s + x, 0) / n;
  const mb = b.reduce((s, x) => s + x, 0) / n;
  let num = 0;
  let va = 0;
  let vb = 0;
  for (let i = 0; i < n; i++) {
    num += (a[i]! - ma) * (b[i]! - mb);
    va += (a[i]! - ma) ** 2;
    vb += (b[i]! - mb) ** 2;
  }
  return va && vb ? num / Math.sqrt(va * vb) : 0;
}

/**
 * How closely `heard` contains `reference`, by the shape of their loudness over time: the best correlation of their
 * 20 ms envelopes over every offset that overlaps at least 3/4 of the reference (1: the same utterance). For a
 * known sentence of a deterministic voice heard over a phone line, where recognition of 8 kHz audio is unreliable:
 * the same sentence scores above 0.9, another sentence, music or silence well under 0.6.
 */
export function envelopeMatch(reference: Pcm, heard: Pcm): number {
  const r = envelope(resample(reference, heard.sampleRate));
  const h = envelope(heard);
  let best = 0;
  for (let lag = -Math.floor(r.length / 4); lag < h.length; lag++) {
    const from = Math.max(0, -lag);
    const to = Math.min(r.length, h.length - lag);
    if (to - from < 0.75 * r.length) continue;
    best = Math.max(best, pearson(r.slice(from, to), h.slice(from + lag, to + lag)));
  }
  return best;
}
