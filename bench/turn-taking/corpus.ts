// Builds a turn-taking corpus's audio from its labels (corpus-file.ts) with espeak-ng: a paused utterance is
// synthesized as ONE utterance with its pauses as SSML breaks inside it (so the speech before a pause carries the
// voice's within-sentence intonation, not a finished sentence's fall; paused-speech.ts), its leading and trailing
// silence trimmed, resampled to 48 kHz (the rate the rtc client publishes at), each break's silence set to the
// label's length exactly. The result is cached under the temp folder,
// keyed by a hash of the labels, so a second run (or the tests) reads WAV files instead of synthesizing.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { concatSamples, readWav, resample, writeWav, type Pcm } from '../../test/support/speech.ts';
import { DEFAULT_CORPORA, corpusLabels, readCorpusFile, type CorpusFile, type LabelItem } from './corpus-file.ts';
import { SYNTHESIS, pausedSsml, splitAtBreaks } from './paused-speech.ts';

const run = promisify(execFile);

export const CORPUS_RATE = 48000;
/** A 10 ms window is speech above this RMS (int16 scale); also the rtc client's speech threshold. */
export const SPEECH_RMS = 300;

export interface SegmentSpan {
  text: string;
  /** Sample offsets at CORPUS_RATE: first and one past the last sample of speech. */
  start: number;
  end: number;
}

export interface CorpusItem extends LabelItem {
  sample_rate: number;
  /** Samples in the clip. */
  length: number;
  segments_at: SegmentSpan[];
  /** One past the last sample of speech (the end of the last segment). */
  speech_end: number;
  /** The inserted pauses as [start, end) sample offsets. */
  pauses_at: [number, number][];
  wav: string;
  /** Synthesized as one utterance with breaks (false: segment by segment, its breaks not found; or one segment). */
  one_utterance?: boolean;
}

function windowRms(s: Int16Array, from: number, to: number): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += s[i]! * s[i]!;
  return to > from ? Math.sqrt(sum / (to - from)) : 0;
}

/** The [first, end) samples of speech: from the first to the last 10 ms window above SPEECH_RMS. */
export function speechBounds(pcm: Pcm): [number, number] {
  const step = Math.round(pcm.sampleRate / 100);
  let first = -1;
  let last = -1;
  for (let at = 0; at < pcm.samples.length; at += step) {
    const end = Math.min(at + step, pcm.samples.length);
    if (windowRms(pcm.samples, at, end) > SPEECH_RMS) {
      if (first < 0) first = at;
      last = end;
    }
  }
  return first < 0 ? [0, 0] : [first, last];
}

async function synthSegment(text: string, voice: string, rate: number, dir: string, name: string): Promise<Pcm> {
  const out = path.join(dir, `${name}.seg.wav`);
  await run('espeak-ng', ['-v', voice, '-s', String(rate), '-w', out, text]);
  const pcm = resample(readWav(out), CORPUS_RATE);
  const [a, b] = speechBounds(pcm);
  return { samples: pcm.samples.slice(a, b), sampleRate: CORPUS_RATE };
}

/** One text spoken by espeak-ng in a voice at a rate, trimmed to its speech, at CORPUS_RATE (no cache). */
export async function speakText(text: string, voice: string, rate: number): Promise<Pcm> {
  const dir = mkdtempSync(path.join(tmpdir(), 'vap-speak-'));
  try {
    return await synthSegment(text, voice, rate, dir, 'text');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The item's segments as speech: one SSML utterance with breaks, or (it could not be split) each on its own. */
async function speechOf(label: LabelItem, dir: string, oneUtterance = true): Promise<{ segments: Int16Array[]; joined: boolean }> {
  if (oneUtterance && label.segments.length > 1) {
    const out = path.join(dir, `${label.id}.ssml.wav`);
    await run('espeak-ng', ['-m', '-v', label.voice, '-s', String(label.rate), '-w', out, pausedSsml(label.segments, label.pauses_ms)]);
    const pcm = resample(readWav(out), CORPUS_RATE);
    const [a, b] = speechBounds(pcm);
    const split = splitAtBreaks({ samples: pcm.samples.slice(a, b), sampleRate: CORPUS_RATE }, label.pauses_ms, SPEECH_RMS);
    if (split) return { segments: split, joined: true };
  }
  const segments: Int16Array[] = [];
  for (let i = 0; i < label.segments.length; i++) segments.push((await synthSegment(label.segments[i]!, label.voice, label.rate, dir, `${label.id}-${i}`)).samples);
  return { segments, joined: false };
}

/** One label's audio, written into `dir` (as the corpus cache does; the prosody check calls it on a few). */
export async function buildItem(label: LabelItem, dir: string, opts: { oneUtterance?: boolean } = {}): Promise<CorpusItem> {
  const parts: Int16Array[] = [];
  const segments_at: SegmentSpan[] = [];
  const pauses_at: [number, number][] = [];
  let at = 0;
  const speech = await speechOf(label, dir, opts.oneUtterance ?? true);
  for (let i = 0; i < label.segments.length; i++) {
    const seg = { samples: speech.segments[i]! };
    segments_at.push({ text: label.segments[i]!, start: at, end: at + seg.samples.length });
    parts.push(seg.samples);
    at += seg.samples.length;
    if (i < label.pauses_ms.length) {
      const n = Math.round((label.pauses_ms[i]! / 1000) * CORPUS_RATE);
      pauses_at.push([at, at + n]);
      parts.push(new Int16Array(n));
      at += n;
    }
  }
  const samples = concatSamples(...parts);
  const wav = path.join(dir, `${label.id}.wav`);
  writeWav(wav, { samples, sampleRate: CORPUS_RATE });
  return { ...label, sample_rate: CORPUS_RATE, length: at, segments_at, speech_end: segments_at.at(-1)!.end, pauses_at, wav, one_utterance: speech.joined };
}

/** Where a corpus is cached: one folder per version of its labels. */
export function corpusDir(labels: LabelItem[]): string {
  const hash = createHash('sha256').update(JSON.stringify({ labels, rate: CORPUS_RATE, rms: SPEECH_RMS, synthesis: SYNTHESIS })).digest('hex').slice(0, 12);
  return path.join(process.env.VAP_CORPUS_CACHE ?? tmpdir(), `vap-turn-corpus-${labels[0]?.corpus ?? 'empty'}-${hash}`);
}

export interface LoadedCorpus {
  file: string;
  corpus: CorpusFile;
  items: CorpusItem[];
}

/** A corpus file's items, synthesized on first use and cached (manifest.json beside the WAV files). */
export async function loadCorpusFile(file: string, opts: { onProgress?: (m: string) => void } = {}): Promise<LoadedCorpus> {
  const corpus = readCorpusFile(file);
  const labels = corpusLabels(corpus);
  const dir = corpusDir(labels);
  const manifest = path.join(dir, 'manifest.json');
  if (existsSync(manifest)) return { file, corpus, items: JSON.parse(readFileSync(manifest, 'utf8')) as CorpusItem[] };
  mkdirSync(dir, { recursive: true });
  opts.onProgress?.(`synthesizing the turn-taking corpus ${corpus.name} (${labels.length} utterances) into ${dir}`);
  const items: CorpusItem[] = new Array(labels.length);
  // Two at a time: espeak-ng is quick, and the machine has two cores.
  let next = 0;
  const worker = async () => {
    while (next < labels.length) {
      const i = next++;
      items[i] = await buildItem(labels[i]!, dir);
    }
  };
  await Promise.all([worker(), worker()]);
  // Written last and renamed, so a run stopped half way leaves no manifest to trust.
  writeFileSync(`${manifest}.tmp`, JSON.stringify(items, null, 1));
  renameSync(`${manifest}.tmp`, manifest);
  return { file, corpus, items };
}

/** The built-in corpus's items (corpora/builtin.json). */
export async function loadCorpus(opts: { onProgress?: (m: string) => void } = {}): Promise<CorpusItem[]> {
  return (await loadCorpusFile(DEFAULT_CORPORA[0]!, opts)).items;
}

/** The item's audio at CORPUS_RATE. */
export function itemPcm(item: CorpusItem): Pcm {
  return readWav(item.wav);
}

/** Milliseconds of an offset in the item's samples. */
export const ms = (item: CorpusItem, samples: number) => (samples / item.sample_rate) * 1000;
