// A turn-taking corpus file (bench/turn-taking/corpora/*.json; docs/benchmarks.md, "Turn-taking"): utterances in
// spoken segments with the pauses between them, and backchannels. Every gap between segments is inside the turn
// (a pause the caller makes); the end of the last segment is the end of the turn. `kind` (complete, pause, list)
// only groups the figures. This reads and checks a file and expands it into labels: an utterance without a voice
// and a rate is spoken in each espeak-ng voice at each rate (VOICES x RATES), as is each backchannel. The audio is
// synthesized from the labels at run time (corpus.ts); the labels are also the scripts the Deepgram stand-in
// transcribes.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const KINDS = ['complete', 'pause', 'list'] as const;
export type Kind = (typeof KINDS)[number];
export type Category = Kind | 'backchannel';

/** espeak-ng voices: a US male and a British female variant. */
export const VOICES = ['en-us', 'en-gb+f3'] as const;
/** espeak-ng rates (words per minute): its default, and a slower, deliberate speaker. */
export const RATES = [175, 140] as const;

export const CORPORA_DIR = path.join(import.meta.dirname, 'corpora');
/** The corpora a run takes when none is named: the rig's first corpus, and one written apart from the rules. */
export const DEFAULT_CORPORA = ['builtin.json', 'callers.json'].map((f) => path.join(CORPORA_DIR, f));

export interface UtteranceSpec {
  id: string;
  segments: string[];
  /** One per gap between segments (ms). */
  pauses_ms: number[];
  kind: Kind;
  /** Pins the voice and the rate (both or neither); else the utterance is spoken in every voice at every rate. */
  voice?: string;
  rate?: number;
}

export interface CorpusFile {
  name: string;
  description?: string;
  utterances: UtteranceSpec[];
  backchannels: string[];
}

export interface LabelItem {
  id: string;
  corpus: string;
  category: Category;
  voice: string;
  rate: number;
  segments: string[];
  /** Silence inserted after each segment but the last. */
  pauses_ms: number[];
  text: string;
}

const MAX_PAUSE_MS = 10_000;
const UTTERANCE_KEYS = new Set(['id', 'segments', 'pauses_ms', 'kind', 'voice', 'rate']);
const FILE_KEYS = new Set(['name', 'description', 'utterances', 'backchannels']);

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const spoken = (s: unknown): s is string => typeof s === 'string' && /[\p{L}\p{N}]/u.test(s);

/** Checks a parsed corpus file; throws one error that lists every problem found, each with where it is. */
export function parseCorpus(json: unknown, source: string): CorpusFile {
  const problems: string[] = [];
  const bad = (where: string, what: string) => problems.push(`${where}: ${what}`);
  if (!isObject(json)) throw new Error(`${source}: a corpus is a JSON object with "name", "utterances" and "backchannels"`);
  for (const k of Object.keys(json)) if (!FILE_KEYS.has(k)) bad(k, `unknown field (fields: ${[...FILE_KEYS].join(', ')})`);
  if (typeof json.name !== 'string' || !/^[\w.-]+$/.test(json.name)) bad('name', 'a name of letters, digits, "-", "_" or "." (it names the results)');
  if (json.description !== undefined && typeof json.description !== 'string') bad('description', 'a string');
  if (!Array.isArray(json.backchannels) || !json.backchannels.every(spoken)) bad('backchannels', 'a list of words to speak (may be empty)');
  if (!Array.isArray(json.utterances) || json.utterances.length === 0) bad('utterances', 'a non-empty list');
  const ids = new Set<string>();
  (Array.isArray(json.utterances) ? (json.utterances as unknown[]) : []).forEach((u, i) => {
    const at = `utterances[${i}]${isObject(u) && typeof u.id === 'string' ? ` ("${u.id}")` : ''}`;
    if (!isObject(u)) return bad(at, 'an object with id, segments, pauses_ms and kind');
    for (const k of Object.keys(u)) if (!UTTERANCE_KEYS.has(k)) bad(at, `unknown field "${k}" (fields: ${[...UTTERANCE_KEYS].join(', ')})`);
    if (typeof u.id !== 'string' || !/^[\w.+-]+$/.test(u.id)) bad(at, 'id: letters, digits, "-", "_", "+" or "."');
    else if (ids.has(u.id)) bad(at, 'id: used twice');
    else ids.add(u.id);
    const segments = u.segments;
    if (!Array.isArray(segments) || segments.length === 0 || !segments.every(spoken)) bad(at, 'segments: a non-empty list of texts to speak');
    const gaps = Array.isArray(segments) ? Math.max(0, segments.length - 1) : 0;
    if (!Array.isArray(u.pauses_ms)) bad(at, `pauses_ms: a list of ${gaps} pause(s) in ms (one per gap between segments)`);
    else {
      if (u.pauses_ms.length !== gaps) bad(at, `pauses_ms: ${u.pauses_ms.length} given, ${Array.isArray(segments) ? segments.length : '?'} segment(s) need ${gaps} (one per gap)`);
      u.pauses_ms.forEach((p, j) => {
        if (typeof p !== 'number' || !Number.isInteger(p) || p <= 0 || p > MAX_PAUSE_MS) bad(at, `pauses_ms[${j}]: a whole number of ms in 1-${MAX_PAUSE_MS}`);
      });
    }
    if (!KINDS.includes(u.kind as Kind)) bad(at, `kind: one of ${KINDS.join(', ')}`);
    if ((u.voice === undefined) !== (u.rate === undefined)) bad(at, 'voice and rate: both or neither');
    if (u.voice !== undefined && (typeof u.voice !== 'string' || !/^[\w+-]+$/.test(u.voice))) bad(at, 'voice: an espeak-ng voice name');
    if (u.rate !== undefined && (typeof u.rate !== 'number' || !Number.isInteger(u.rate) || u.rate < 80 || u.rate > 450)) bad(at, 'rate: espeak-ng words per minute, 80-450');
  });
  if (problems.length) {
    const shown = problems.slice(0, 20).map((p) => `  - ${p}`);
    if (problems.length > 20) shown.push(`  - and ${problems.length - 20} more`);
    throw new Error(`${source}: not a valid turn-taking corpus:\n${shown.join('\n')}`);
  }
  return json as unknown as CorpusFile;
}

/** Reads and checks a corpus file. */
export function readCorpusFile(file: string): CorpusFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: cannot read the corpus (${(err as Error).message})`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not JSON (${(err as Error).message})`, { cause: err });
  }
  return parseCorpus(json, file);
}

const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '');

/** Every item of the corpus in a fixed order: its utterances, then its backchannels, each in its voices and rates. */
export function corpusLabels(corpus: CorpusFile): LabelItem[] {
  const items: LabelItem[] = [];
  const variants = VOICES.flatMap((voice) => RATES.map((rate) => ({ voice: voice as string, rate: rate as number })));
  const add = (id: string, category: Category, segments: string[], pauses_ms: number[], voice: string, rate: number) =>
    items.push({ id, corpus: corpus.name, category, voice, rate, segments, pauses_ms, text: segments.join(' ') });
  for (const u of corpus.utterances) {
    if (u.voice !== undefined && u.rate !== undefined) add(u.id, u.kind, u.segments, u.pauses_ms, u.voice, u.rate);
    else for (const v of variants) add(`${u.id}-${slug(v.voice)}-${v.rate}`, u.kind, u.segments, u.pauses_ms, v.voice, v.rate);
  }
  for (const b of corpus.backchannels) for (const v of variants) add(`backchannel-${slug(b)}-${slug(v.voice)}-${v.rate}`, 'backchannel', [b], [], v.voice, v.rate);
  const seen = new Set<string>();
  for (const i of items) {
    if (seen.has(i.id)) throw new Error(`corpus ${corpus.name}: two items are named ${i.id} (an utterance's id clashes with another's voice and rate suffix)`);
    seen.add(i.id);
  }
  return items;
}

/** Mid-turn pauses of the corpus's utterances (each gap once, before voices and rates). */
export const midTurnPauses = (corpus: CorpusFile) => corpus.utterances.reduce((n, u) => n + u.pauses_ms.length, 0);
