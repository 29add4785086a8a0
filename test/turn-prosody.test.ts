// The turn-taking corpus's paused speech sounds paused (bench/turn-taking/corpus.ts, paused-speech.ts): synthesized
// as one espeak-ng utterance with SSML breaks, the speech before a mid-turn pause (a segment with no closing
// punctuation) does not end on a finished sentence's pitch fall, while the true end does. Synthesized segment by
// segment (as the corpus was before), both end on the same fall, and the check says so: it can fail.
// Ten paused utterances of the tuning corpus tuning-long.json in one voice and rate; espeak-ng is deterministic.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildItem, itemPcm } from '../bench/turn-taking/corpus.ts';
import { CORPORA_DIR, corpusLabels, readCorpusFile } from '../bench/turn-taking/corpus-file.ts';
import { endingSemitones, pitchTrack } from '../bench/turn-taking/pitch.ts';
import { pausedSsml, splitAtBreaks } from '../bench/turn-taking/paused-speech.ts';

const labels = corpusLabels(readCorpusFile(path.join(CORPORA_DIR, 'tuning-long.json')))
  .filter((l) => l.category === 'pause' && l.voice === 'en-us' && l.rate === 175)
  .slice(0, 10);
const dir = mkdtempSync(path.join(tmpdir(), 'vap-prosody-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The pitch movement (semitones) over the last 600 ms of speech before each open mid-turn pause, and at each true end. */
async function endings(oneUtterance: boolean): Promise<{ beforePause: number[]; atEnd: number[]; joined: number }> {
  const beforePause: number[] = [];
  const atEnd: number[] = [];
  let joined = 0;
  for (const label of labels) {
    const item = await buildItem({ ...label, id: `${label.id}-${oneUtterance ? 'one' : 'seg'}` }, dir, { oneUtterance });
    if (item.one_utterance) joined++;
    const pcm = itemPcm(item);
    item.segments_at.forEach((s, i) => {
      const st = endingSemitones(pitchTrack(pcm, Math.max(0, s.end - Math.round(0.6 * pcm.sampleRate)), s.end));
      if (!Number.isFinite(st)) return;
      if (i === item.segments_at.length - 1) atEnd.push(st);
      else if (!/[.?!]$/.test(s.text.trim())) beforePause.push(st);
    });
  }
  return { beforePause, atEnd, joined };
}

describe('paused speech in the turn-taking corpus', () => {
  it('writes each pause as an SSML break, and finds the breaks again in the audio', () => {
    expect(pausedSsml(['My number is', 'four & five'], [900])).toBe('<speak>My number is <break time="900ms"/> four &amp; five</speak>');
    // 200 ms of tone, 900 ms of silence, 200 ms of tone, a 50 ms gap, 200 ms of tone (8 kHz).
    const tone = (ms: number) => Int16Array.from({ length: ms * 8 }, (_, i) => Math.round(5000 * Math.sin(i / 3)));
    const gap = (ms: number) => new Int16Array(ms * 8);
    const samples = Int16Array.from([...tone(200), ...gap(900), ...tone(200), ...gap(50), ...tone(200)]);
    const parts = splitAtBreaks({ samples, sampleRate: 8000 }, [900], 300);
    expect(parts?.map((p) => p.length / 8)).toEqual([200, 450]);
    // A break far shorter than its label is not taken for it: the segments are then synthesized one by one.
    expect(splitAtBreaks({ samples, sampleRate: 8000 }, [2000], 300)).toBeNull();
  });

  it('one utterance with breaks: the speech before an open pause falls less than at the true end', { timeout: 900_000 }, async () => {
    const one = await endings(true);
    expect(one.joined).toBe(labels.length);
    expect(one.beforePause.length).toBeGreaterThanOrEqual(10);
    expect(one.atEnd.length).toBeGreaterThanOrEqual(8);
    // A final fall at the true end (under -1.5 semitones on average), and over 0.8 semitones less of one before pauses.
    expect(mean(one.atEnd)).toBeLessThan(-1.5);
    expect(mean(one.beforePause) - mean(one.atEnd)).toBeGreaterThan(0.8);
  });

  it('segment by segment (the old synthesis): every segment ends on the same fall, and the check tells', { timeout: 900_000 }, async () => {
    const seg = await endings(false);
    expect(seg.joined).toBe(0);
    expect(Math.abs(mean(seg.beforePause) - mean(seg.atEnd))).toBeLessThan(0.8);
  });
});
