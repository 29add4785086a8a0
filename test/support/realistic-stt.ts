// What the Deepgram stand-in returns for a script: the words timed over their segments and, in its realistic
// mode, what a real streaming STT does to them (docs/benchmarks.md, "Turn-taking"). The oracle hands the
// script's own words and punctuation over as soon as they are heard; a real recogniser releases a word some time
// after it was said, finalizes some time after the speech stopped, punctuates from its own model (a period at
// the end of a turn most of the time, at a pause now and then) and mishears. Each kind of draw has its own seeded
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
  /** Chance that the end of the script's last segment (the true end of the turn) gets a period. */
  endPeriodProbability?: number;
  /** Chance that the end of a segment followed by a pause longer than pausePeriodMinMs gets a period. */
  pausePeriodProbability?: number;
  pausePeriodMinMs?: number;
  /** Chance that a word is misheard: substituted by another word, or dropped (half and half). */
  wordErrorRate?: number;
}

export const REALISTIC_DEFAULTS: Required<RealisticSttOptions> = {
  seed: 1,
  interimLagMs: { min: 150, max: 350 },
  finalDelayMs: { min: 100, max: 400 },
  endPeriodProbability: 0.85,
  pausePeriodProbability: 0.25,
  pausePeriodMinMs: 300,
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
  // One draw per word and per segment whatever the rates, so a rate changes which words, not the other draws.
  const words: HeardWord[] = [];
  for (const w of timedWords(segments)) {
    const release = w.end + uniform(lagRnd, options.interimLagMs);
    const misheard = errorRnd() < options.wordErrorRate;
    const dropped = errorRnd() < 0.5;
    const pick = errorRnd();
    const text = unpunctuated(w.text);
    if (!text) continue;
    if (!misheard) words.push({ ...w, text, release });
    else if (!dropped) {
      const choices = SUBSTITUTES.filter((s) => s !== text.toLowerCase());
      words.push({ ...w, text: choices[Math.floor(pick * choices.length)]!, release });
    }
  }
  // A period on the last word heard of a segment: at the true end with one chance, at a long pause with another.
  segments.forEach((seg, i) => {
    const next = segments[i + 1];
    const p = next === undefined ? options.endPeriodProbability : next.startMs - seg.endMs > options.pausePeriodMinMs ? options.pausePeriodProbability : 0;
    const period = periodRnd() < p;
    const last = words.findLast((w) => w.segment === i);
    if (period && last) last.text += '.';
  });
  // Released in order: an interim shows a prefix of the words, so a word waits for the one before it.
  for (let i = 1; i < words.length; i++) words[i]!.release = Math.max(words[i]!.release, words[i - 1]!.release);
  return { words, endMs, nextFinalDelay: () => uniform(finalRnd, options.finalDelayMs) };
}
