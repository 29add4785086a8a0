// The turn-taking corpus files (bench/turn-taking/corpora/*.json): the committed ones are valid and hold what the
// benchmark counts on, and a bad file is refused with every problem named.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CORPORA, RATES, VOICES, corpusLabels, midTurnPauses, parseCorpus, readCorpusFile } from '../bench/turn-taking/corpus-file.ts';

const good = { name: 'mini', utterances: [{ id: 'u1', segments: ['part one', 'part two'], pauses_ms: [900], kind: 'pause' }], backchannels: ['mm-hmm', 'okay'] };
const problems = (json: unknown) => {
  try {
    parseCorpus(json, 'mini.json');
  } catch (err) {
    return (err as Error).message;
  }
  return 'accepted';
};

describe('turn-taking corpus files', () => {
  it('reads the format: each utterance and backchannel in every voice at every rate, unless it pins one', () => {
    const labels = corpusLabels(parseCorpus(good, 'mini.json'));
    const variants = VOICES.length * RATES.length;
    expect(labels).toHaveLength(3 * variants);
    expect(labels[0]).toMatchObject({ id: 'u1-enus-175', corpus: 'mini', category: 'pause', segments: ['part one', 'part two'], pauses_ms: [900], text: 'part one part two' });
    expect(labels.filter((l) => l.category === 'backchannel').map((l) => l.text)).toContain('mm-hmm');
    const pinned = corpusLabels(parseCorpus({ ...good, utterances: [{ ...good.utterances[0], voice: 'en-us', rate: 140 }] }, 'mini.json'));
    expect(pinned.filter((l) => l.category !== 'backchannel').map((l) => [l.id, l.voice, l.rate])).toEqual([['u1', 'en-us', 140]]);
  });

  it('refuses a bad file, naming each problem and where it is', () => {
    expect(problems(good)).toBe('accepted');
    expect(problems([])).toMatch(/a corpus is a JSON object/);
    const msg = problems({
      name: 'bad name!',
      utterances: [
        { id: 'a', segments: ['one', 'two', 'three'], pauses_ms: [500], kind: 'pause' },
        { id: 'a', segments: ['x'], pauses_ms: [], kind: 'question' },
        { id: 'b', segments: [''], pauses_ms: [], kind: 'complete', pause_ms: [1] },
        { id: 'c', segments: ['one', 'two'], pauses_ms: [-3], kind: 'pause', voice: 'en-us' },
      ],
      backchannels: 'okay',
    });
    expect(msg).toMatch(/^mini\.json: not a valid turn-taking corpus/);
    expect(msg).toMatch(/name: a name of letters/);
    expect(msg).toMatch(/backchannels: a list of words/);
    expect(msg).toMatch(/utterances\[0\] \("a"\): pauses_ms: 1 given, 3 segment\(s\) need 2 \(one per gap\)/);
    expect(msg).toMatch(/utterances\[1\] \("a"\): id: used twice/);
    expect(msg).toMatch(/utterances\[1\] \("a"\): kind: one of complete, pause, list/);
    expect(msg).toMatch(/utterances\[2\] \("b"\): unknown field "pause_ms"/);
    expect(msg).toMatch(/utterances\[2\] \("b"\): segments: a non-empty list of texts/);
    expect(msg).toMatch(/utterances\[3\] \("c"\): pauses_ms\[0\]: a whole number of ms/);
    expect(msg).toMatch(/utterances\[3\] \("c"\): voice and rate: both or neither/);
  });

  it('says which file is not JSON, or cannot be read', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'vap-corpus-'));
    const file = path.join(dir, 'broken.json');
    writeFileSync(file, '{ "name": ');
    expect(() => readCorpusFile(file)).toThrow(/broken\.json: not JSON/);
    expect(() => readCorpusFile(path.join(dir, 'missing.json'))).toThrow(/missing\.json: cannot read the corpus/);
  });

  it('the committed corpora are valid: the built-in one keeps its 200 items, the callers one has 80 pauses and more', () => {
    const [builtin, callers] = DEFAULT_CORPORA.map(readCorpusFile);
    expect(builtin!.name).toBe('builtin');
    expect(corpusLabels(builtin!)).toHaveLength(200);
    expect(callers!.name).toBe('callers');
    expect(midTurnPauses(callers!)).toBeGreaterThanOrEqual(80);
    for (const kind of ['complete', 'pause', 'list']) expect(callers!.utterances.some((u) => u.kind === kind)).toBe(true);
    expect(callers!.backchannels.length).toBeGreaterThan(0);
  });
});
