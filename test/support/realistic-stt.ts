// What the Deepgram stand-in returns for a script: the words timed over their segments and, in its realistic
// mode, what a real streaming STT does to them (docs/benchmarks.md, "Turn-taking"). The oracle hands the
// script's own words and punctuation over as soon as they are heard; a real recogniser releases a word some time
// after it was said, finalizes some time after the speech stopped, punctuates from its own model and mishears.
// Its punctuation is decided from what a recogniser has when it sends a message: the words so far and the silence
// so far (periodChance). Never from the script's labels (which segment is the last) nor from how long a pause
// will last: a pause after "four five six" and the true end after "four five six seven" look alike to it. Each kind of draw has its own seeded
// stream, so one script with one seed gives the same transcript and the same latencies on every run.
import { mixSeed, seededRandom, uniform } from './seeded-random.ts';

export interface Range {
  min: number;
  max: number;
}

export interface RealisticSttOptions {
  /** Mixed with each script's own seed (or its order on the connection): the same seeds give the same messages. */
  seed?: number;
  /** A word appears in an interim this long after its end, on the audio clock; uniform, drawn per word (ms). */
  interimLagMs?: Range;
  /** Silence in the audio after the last speech before the final (the endpoint); uniform, drawn per final (ms). */
  finalDelayMs?: Range;
  /**
   * Chance that the last word of a message gets a period once the silence after it reaches periodSilenceMs (less
   * before: the chance rises linearly from none at no silence), when that word can end a sentence.
   */
  periodProbability?: number;
  /** The same when the last word rarely ends a sentence (an article, a preposition, a conjunction, a filler). */
  openPeriodProbability?: number;
  periodSilenceMs?: number;
  /** Chance that a word is misheard: substituted by another word, or dropped (half and half). */
  wordErrorRate?: number;
}

export const REALISTIC_DEFAULTS: Required<RealisticSttOptions> = {
  seed: 1,
  interimLagMs: { min: 150, max: 350 },
  finalDelayMs: { min: 100, max: 400 },
  periodProbability: 0.8,
  openPeriodProbability: 0.03,
  periodSilenceMs: 300,
  wordErrorRate: 0,
};

export interface ScriptSpan {
  text: string;
  startMs: number;
  endMs: number;
}

export interface TimedWord {
  text: string;
  /** ms from the script's first speech. */
  start: number;
  end: number;
  /** Index of its segment in the script. */
  segment: number;
}

/** The script's words with times from the first segment's start, spread over each segment by length. */
export function timedWords(segments: ScriptSpan[]): TimedWord[] {
  const anchor = segments[0]?.startMs ?? 0;
  const out: TimedWord[] = [];
  segments.forEach((seg, segment) => {
    const words = seg.text.split(/\s+/).filter(Boolean);
    const total = words.reduce((n, w) => n + w.length + 1, 0);
    let at = seg.startMs - anchor;
    const span = seg.endMs - seg.startMs;
    for (const w of words) {
      const d = (span * (w.length + 1)) / total;
      out.push({ text: w, start: at, end: at + d, segment });
      at += d;
    }
  });
  return out;
}

export interface HeardWord extends TimedWord {
  /** The earliest audio time (ms from the script's first speech) at which an interim may show it. */
  release: number;
  /** Uniform in [0, 1): the word gets a period when it ends a message and this is under periodChance(). */
  periodDraw: number;
}

/**
 * Words a punctuation model seldom ends a sentence on, from the words alone: articles, prepositions, conjunctions,
 * fillers. (A recogniser's own list, kept apart from the end-of-turn rules' in the media worker.)
 */
const OPEN_WORDS = new Set(['a', 'an', 'the', 'to', 'of', 'for', 'with', 'at', 'in', 'on', 'from', 'by', 'and', 'or', 'but', 'because', 'so', 'um', 'uh', 'er', 'erm', 'hmm', 'my', 'your', 'our']);

/**
 * The chance that a recogniser ends its message on these words with a period, from the words so far (the last
 * one) and the silence after them so far (ms): nothing else.
 */
export function periodChance(words: readonly string[], silenceMs: number, options: Required<RealisticSttOptions>): number {
  const last = unpunctuated(words.at(-1) ?? '').toLowerCase();
  if (!last) return 0;
  const base = OPEN_WORDS.has(last) ? options.openPeriodProbability : options.periodProbability;
  return base * Math.min(1, Math.max(0, silenceMs) / Math.max(1, options.periodSilenceMs));
}

/** The words of a message as a recogniser sends them: a period on the last one when its draw says so. */
export function punctuated<W extends { text: string; periodDraw?: number }>(words: W[], silenceMs: number, options: Required<RealisticSttOptions>): W[] {
  const last = words.at(-1);
  if (!last || last.periodDraw === undefined) return words;
  if (last.periodDraw >= periodChance(words.map((w) => w.text), silenceMs, options)) return words;
  return [...words.slice(0, -1), { ...last, text: `${last.text}.` }];
}

export interface RealisticTranscript {
  words: HeardWord[];
  /** The end of the script's last segment (ms from its first speech): the true end of the turn. */
  endMs: number;
  /** The silence before the next final (ms), drawn in order. */
  nextFinalDelay(): number;
}

/** What misheard words become: short common words, none of them a word of the script it replaces. */
const SUBSTITUTES = ['the', 'and', 'in', 'it', 'that', 'on', 'this', 'then', 'can', 'so', 'now', 'well'];

/** The word without punctuation: the script's own marks are never copied (apostrophes and inner hyphens stay). */
export const unpunctuated = (w: string) => w.replace(/[^\p{L}\p{N}'-]+/gu, '').replace(/^['-]+|['-]+$/g, '');

/** The realistic mode's transcript of a script, from one seed (already mixed with the options' seed). */
export function realisticTranscript(segments: ScriptSpan[], options: Required<RealisticSttOptions>, seed: number): RealisticTranscript {
  const lagRnd = seededRandom(mixSeed(seed, 1));
  const finalRnd = seededRandom(mixSeed(seed, 2));
  const periodRnd = seededRandom(mixSeed(seed, 3));
  const errorRnd = seededRandom(mixSeed(seed, 4));
  const anchor = segments[0]?.startMs ?? 0;
  const endMs = segments.length ? segments.at(-1)!.endMs - anchor : 0;
  // One draw per word whatever the rates, so a rate changes which words, not the other draws.
  const words: HeardWord[] = [];
  for (const w of timedWords(segments)) {
    const release = w.end + uniform(lagRnd, options.interimLagMs);
    const periodDraw = periodRnd();
    const misheard = errorRnd() < options.wordErrorRate;
    const dropped = errorRnd() < 0.5;
    const pick = errorRnd();
    const text = unpunctuated(w.text);
    if (!text) continue;
    if (!misheard) words.push({ ...w, text, release, periodDraw });
    else if (!dropped) {
      const choices = SUBSTITUTES.filter((s) => s !== text.toLowerCase());
      words.push({ ...w, text: choices[Math.floor(pick * choices.length)]!, release, periodDraw });
    }
  }
  // No period here: the connection puts one on a message's last word as it sends it (punctuated()).
  // Released in order: an interim shows a prefix of the words, so a word waits for the one before it.
  for (let i = 1; i < words.length; i++) words[i]!.release = Math.max(words[i]!.release, words[i - 1]!.release);
  return { words, endMs, nextFinalDelay: () => uniform(finalRnd, options.finalDelayMs) };
}
