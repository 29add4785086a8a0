// A paused utterance spoken as one utterance (corpus.ts): espeak-ng reads SSML with a <break> per pause, so the
// speech before a pause keeps the intonation of a sentence that goes on; then the breaks are found in the audio
// (the longest silences) and each is set to the label's pause exactly, so the labels stay the truth.

/** Bumped when the synthesis changes: part of the corpus cache's key. */
export const SYNTHESIS = 'ssml-breaks-1';

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The SSML of the segments with a break of each pause between them. */
export function pausedSsml(segments: string[], pausesMs: number[]): string {
  const body = segments.map((s, i) => escapeXml(s) + (i < pausesMs.length ? ` <break time="${pausesMs[i]}ms"/> ` : '')).join('');
  return `<speak>${body}</speak>`;
}

/** A run of 10 ms windows at or under the speech threshold: [first sample, one past the last). */
function silentRuns(samples: Int16Array, sampleRate: number, rms: number): [number, number][] {
  const step = Math.round(sampleRate / 100);
  const runs: [number, number][] = [];
  let start = -1;
  for (let at = 0; at < samples.length; at += step) {
    const end = Math.min(at + step, samples.length);
    let sum = 0;
    for (let i = at; i < end; i++) sum += samples[i]! * samples[i]!;
    const quiet = Math.sqrt(sum / Math.max(1, end - at)) <= rms;
    if (quiet && start < 0) start = at;
    if (!quiet && start >= 0) {
      runs.push([start, at]);
      start = -1;
    }
  }
  if (start >= 0) runs.push([start, samples.length]);
  return runs;
}

/**
 * The speech between the breaks of a trimmed one-utterance clip: the pauses' count of longest interior silences,
 * in order. Null when they do not look like the breaks (each at least 0.8 of its pause and at most 700 ms over it,
 * espeak-ng adding its own pause at a punctuation mark): the caller then synthesizes the segments one by one.
 */
export function splitAtBreaks(pcm: { samples: Int16Array; sampleRate: number }, pausesMs: number[], rms: number): Int16Array[] | null {
  const runs = silentRuns(pcm.samples, pcm.sampleRate, rms).filter(([a, b]) => a > 0 && b < pcm.samples.length);
  if (runs.length < pausesMs.length) return null;
  const breaks = [...runs].sort((x, y) => y[1] - y[0] - (x[1] - x[0])).slice(0, pausesMs.length).sort((x, y) => x[0] - y[0]);
  const ms = (n: number) => (n / pcm.sampleRate) * 1000;
  if (breaks.some(([a, b], i) => ms(b - a) < 0.8 * pausesMs[i]! - 20 || ms(b - a) > pausesMs[i]! + 700)) return null;
  const out: Int16Array[] = [];
  let from = 0;
  for (const [a, b] of breaks) {
    out.push(pcm.samples.slice(from, a));
    from = b;
  }
  out.push(pcm.samples.slice(from));
  return out.some((s) => s.length === 0) ? null : out;
}
