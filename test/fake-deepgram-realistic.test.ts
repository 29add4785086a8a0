// The Deepgram stand-in's realistic mode, over its WebSocket: each property read from the messages themselves
// (their audio clock, `start` + `duration`, and their words' times), never from when they arrived, so the
// assertions hold on a busy machine. The audio is tone bursts of known length: the speech ends where the script
// says it does, to the 10 ms window.
import { WebSocket } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeDeepgram, type FakeDeepgram, type RealisticSttOptions, type Script } from './support/fake-deepgram.ts';
import { REALISTIC_DEFAULTS, periodChance, punctuated, realisticTranscript, unpunctuated } from './support/realistic-stt.ts';

const RATE = 16000;
/** The client streams 20 ms chunks, as the deepgram plugin does at most. */
const CHUNK_MS = 20;

interface DgWord {
  word: string;
  start: number;
  end: number;
  punctuated_word: string;
}
interface DgResults {
  type: 'Results';
  is_final: boolean;
  speech_final: boolean;
  start: number;
  duration: number;
  channel: { alternatives: { transcript: string; words: DgWord[] }[] };
}
type DgMessage = DgResults | { type: 'SpeechStarted' | 'Metadata' };

/** Speech (a 200 Hz tone, far over the speech threshold) for each text, silence for each number (ms). */
function utterance(parts: ({ text: string; ms: number } | number)[], seed?: number): { samples: Int16Array; script: Script; speechEndsMs: number[] } {
  const chunks: Int16Array[] = [];
  const script: Script = { segments: [], ...(seed === undefined ? {} : { seed }) };
  const speechEndsMs: number[] = [];
  let at = 0;
  for (const p of parts) {
    const ms = typeof p === 'number' ? p : p.ms;
    const n = (ms / 1000) * RATE;
    const c = new Int16Array(n);
    if (typeof p !== 'number') {
      for (let i = 0; i < n; i++) c[i] = Math.round(8000 * Math.sin((2 * Math.PI * 200 * i) / RATE));
      script.segments.push({ text: p.text, startMs: at, endMs: at + ms });
      speechEndsMs.push(at + ms);
    }
    chunks.push(c);
    at += ms;
  }
  const samples = new Int16Array((at / 1000) * RATE);
  let o = 0;
  for (const c of chunks) {
    samples.set(c, o);
    o += c.length;
  }
  return { samples, script, speechEndsMs };
}

/** Streams the audio (as fast as the socket takes it: the stand-in reads the audio's own clock), then closes. */
async function transcribe(dg: FakeDeepgram, samples: Int16Array, script: Script): Promise<DgMessage[]> {
  const ws = new WebSocket(`${dg.url}/v1/listen?encoding=linear16&sample_rate=${RATE}&channels=1&interim_results=true`, { headers: { authorization: 'Token test-key' } });
  const messages: DgMessage[] = [];
  const closed = new Promise<void>((resolve) => ws.addEventListener('close', () => resolve()));
  ws.addEventListener('message', (ev) => messages.push(JSON.parse(String(ev.data)) as DgMessage));
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve());
    ws.addEventListener('error', () => reject(new Error('WebSocket error')));
  });
  const conn = await dg.nextConnection();
  conn.expect(script);
  const step = (CHUNK_MS / 1000) * RATE;
  for (let i = 0; i < samples.length; i += step) {
    const chunk = samples.subarray(i, i + step);
    ws.send(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if ((i / step) % 25 === 0) await new Promise((r) => setImmediate(r));
  }
  ws.send(JSON.stringify({ type: 'CloseStream' }));
  await closed;
  return messages;
}

const results = (ms: DgMessage[]) => ms.filter((m): m is DgResults => m.type === 'Results');
const interims = (ms: DgMessage[]) => results(ms).filter((m) => !m.is_final);
const finals = (ms: DgMessage[]) => results(ms).filter((m) => m.is_final);
/** The audio the stand-in had received when it sent the message (ms). */
const clockMs = (m: DgResults) => (m.start + m.duration) * 1000;
const wordsOf = (m: DgResults) => m.channel.alternatives[0]!.words;
const text = (m: DgResults) => m.channel.alternatives[0]!.transcript;

const PAUSED = [
  { text: "I'd like to book a table for", ms: 1400 },
  900,
  { text: 'four people on Friday evening.', ms: 1500 },
  800,
];

let dg: FakeDeepgram;
const realistic = (o: RealisticSttOptions = {}) => dg.setRealistic(o);

beforeAll(async () => {
  dg = await startFakeDeepgram({ apiKeys: ['test-key'] });
});
afterAll(async () => {
  await dg.close();
});

describe('Deepgram stand-in, realistic mode, over its WebSocket', () => {
  it('is off by default: a connection is the oracle unless the mode is set', async () => {
    const def = await startFakeDeepgram();
    try {
      const { samples, script } = utterance([{ text: 'Hello there.', ms: 600 }, 600]);
      const messages = await transcribe(def, samples, script);
      expect(def.connections[0]!.realistic).toBeNull();
      expect(finals(messages).map(text)).toEqual(['Hello there.']);
    } finally {
      await def.close();
    }
  });

  it('an interim never shows a word before its end plus the least lag (150 ms) on the audio clock, and the lags vary', async () => {
    realistic({ seed: 3 });
    const { samples, script } = utterance(PAUSED);
    const messages = await transcribe(dg, samples, script);
    const firstSeen = new Map<string, number>();
    for (const m of interims(messages)) {
      for (const w of wordsOf(m)) {
        // Word times are the audio's (s), from the utterance's first speech (here the stream's start).
        expect(clockMs(m) - w.end * 1000).toBeGreaterThanOrEqual(150 - 1e-6);
        const key = `${w.word}@${w.start}`;
        if (!firstSeen.has(key)) firstSeen.set(key, clockMs(m) - w.end * 1000);
      }
    }
    const lags = [...firstSeen.values()];
    expect(lags.length).toBeGreaterThanOrEqual(6);
    expect(Math.max(...lags) - Math.min(...lags)).toBeGreaterThan(50);
    // Each interim of a stretch shows the one before it and more words, in order; a final starts the next stretch.
    let before: string[] = [];
    for (const m of results(messages)) {
      const words = wordsOf(m).map((w) => w.word);
      if (m.is_final) {
        before = [];
        continue;
      }
      expect(words.slice(0, before.length)).toEqual(before);
      expect(words.length).toBeGreaterThan(before.length);
      before = words;
    }
    expect(finals(messages).map(text).join(' ')).toMatch(/^I'd like to book a table for\.? four people on Friday evening\.?$/);
  });

  it('each final comes 100-400 ms of audio after the speech it closes, drawn per final', async () => {
    realistic({ seed: 5 });
    const parts = [
      { text: 'My number is', ms: 800 },
      900,
      { text: 'five five five', ms: 900 },
      900,
      { text: 'one two three', ms: 900 },
      900,
      { text: 'four five six seven.', ms: 1000 },
      800,
    ];
    const { samples, script, speechEndsMs } = utterance(parts);
    const messages = await transcribe(dg, samples, script);
    const fs = finals(messages);
    expect(fs).toHaveLength(4);
    const delays = fs.map((m, i) => clockMs(m) - speechEndsMs[i]!);
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(100);
      // The first chunk that holds the drawn silence: a chunk (20 ms) at most over the draw.
      expect(d).toBeLessThan(400 + CHUNK_MS);
    }
    expect(new Set(delays.map((d) => Math.round(d / 10))).size).toBeGreaterThan(1);
    // Every final is an endpoint, as Deepgram's with endpointing on.
    expect(fs.every((m) => m.speech_final)).toBe(true);
  });

  it("strips the script's punctuation and puts its own periods where the words so far can end and silence follows", async () => {
    const parts = [{ text: 'Well, I would like', ms: 900 }, 600, { text: 'to book?', ms: 600 }, 250, { text: 'a table for', ms: 600 }, 700, { text: 'two!', ms: 400 }, 800];
    const certain = { finalDelayMs: { min: 100, max: 100 }, periodSilenceMs: 1 };
    realistic({ ...certain, periodProbability: 1, openPeriodProbability: 0 });
    const always = await transcribe(dg, utterance(parts).samples, utterance(parts).script);
    // "for" is an open word: no period before the pause after it, though the silence is the same.
    expect(finals(always).map(text)).toEqual(['Well I would like.', 'to book.', 'a table for', 'two.']);
    realistic({ ...certain, periodProbability: 0, openPeriodProbability: 0 });
    const never = await transcribe(dg, utterance(parts).samples, utterance(parts).script);
    expect(finals(never).map(text).join(' ')).toBe('Well I would like to book a table for two');
    for (const m of results(never)) expect(text(m)).not.toMatch(/[.,?!]/);
  });

  it('punctuates a pause exactly as it would the true end after the same words: never from the labels or the pause to come', async () => {
    const said = { text: 'My number is four five six', ms: 1400 };
    let periods = 0;
    for (let seed = 1; seed <= 8; seed++) {
      realistic({ seed });
      const end = finals(await transcribe(dg, utterance([said, 900], 3).samples, utterance([said, 900], 3).script)).map(text);
      const paused = [said, 1500, { text: 'seven', ms: 400 }, 900];
      const pause = finals(await transcribe(dg, utterance(paused, 3).samples, utterance(paused, 3).script)).map(text);
      expect(pause[0]).toBe(end[0]);
      if (end[0]!.endsWith('.')) periods++;
    }
    // Both ways come up over the seeds (a test of equality on a constant would prove nothing).
    expect(periods).toBeGreaterThan(0);
    expect(periods).toBeLessThan(8);
  });

  it('mishears words at the configured rate (substituted or dropped), and at rate 0 hears them all', async () => {
    const parts = [{ text: 'Please send my parcel tomorrow morning', ms: 1800 }, 800];
    realistic({ wordErrorRate: 1, seed: 11 });
    const wrong = finals(await transcribe(dg, utterance(parts).samples, utterance(parts).script)).flatMap((m) => wordsOf(m).map((w) => w.word));
    expect(wrong.length).toBeLessThan(6);
    for (const w of wrong) expect(['please', 'send', 'my', 'parcel', 'tomorrow', 'morning']).not.toContain(w);
    realistic({ wordErrorRate: 0, periodProbability: 0, seed: 11 });
    const right = finals(await transcribe(dg, utterance(parts).samples, utterance(parts).script)).map(text);
    expect(right).toEqual(['Please send my parcel tomorrow morning']);
  });

  it('is reproducible: the same script and seed give the same messages on another connection, another seed does not', async () => {
    realistic({ seed: 42, wordErrorRate: 0.2 });
    const run = async (seed: number) => {
      const { samples, script } = utterance(PAUSED, seed);
      return results(await transcribe(dg, samples, script)).map((m) => ({ final: m.is_final, clock: Math.round(clockMs(m)), text: text(m) }));
    };
    const a = await run(7);
    const b = await run(7);
    const c = await run(8);
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
  });
});

describe('realistic transcripts (the draws behind the mode)', () => {
  const segments = [
    { text: 'I called yesterday', startMs: 0, endMs: 1000 },
    { text: 'about the leak', startMs: 1600, endMs: 2400 },
    { text: 'in the kitchen', startMs: 2650, endMs: 3400 },
  ];
  const draws = Array.from({ length: 4000 }, (_, seed) => realisticTranscript(segments, { ...REALISTIC_DEFAULTS, wordErrorRate: 0.1 }, seed));

  it('gives a period from the last word and the silence so far only', () => {
    const o = REALISTIC_DEFAULTS;
    expect(periodChance(['about', 'the', 'leak'], 300, o)).toBeCloseTo(0.8);
    expect(periodChance(['about', 'the', 'leak'], 150, o)).toBeCloseTo(0.4);
    expect(periodChance(['about', 'the', 'leak'], 0, o)).toBe(0);
    expect(periodChance(['about', 'the'], 2000, o)).toBeCloseTo(0.03);
    // Over the draws, the last word of a message after 300 ms of silence: 80 % get a period.
    const clean = Array.from({ length: 4000 }, (_, seed) => realisticTranscript(segments, o, seed));
    const share = clean.filter((t) => punctuated(t.words.slice(0, 3), 300, o).at(-1)?.text.endsWith('.')).length / clean.length;
    expect(Math.abs(share - 0.8)).toBeLessThan(0.03);
  });

  it('mishears about the configured share of words, and keeps no punctuation but its own periods', () => {
    const words = draws.flatMap((t) => t.words);
    const scripted = new Set(segments.flatMap((s) => s.text.toLowerCase().split(' ')));
    const total = draws.length * 9;
    const heardRight = words.filter((w) => scripted.has(unpunctuated(w.text).toLowerCase())).length;
    // Half the misheard words are dropped, half replaced (a replacement may be a scripted word: "the", "in").
    expect(1 - heardRight / total).toBeGreaterThan(0.07);
    expect(1 - heardRight / total).toBeLessThan(0.13);
    for (const w of words) expect(w.text).toMatch(/^[\p{L}\p{N}'-]+\.?$/u);
  });

  it('releases every word after its end, by 150-350 ms unless the word before it is later, and in order', () => {
    for (const t of draws.slice(0, 200)) {
      t.words.forEach((w, i) => {
        expect(w.release - w.end).toBeGreaterThanOrEqual(150);
        if (i > 0) expect(w.release).toBeGreaterThanOrEqual(t.words[i - 1]!.release);
        if (i === 0) expect(w.release - w.end).toBeLessThanOrEqual(350);
      });
    }
  });

  it('draws final delays in 100-400 ms', () => {
    const d = draws.slice(0, 200).flatMap((t) => [t.nextFinalDelay(), t.nextFinalDelay()]);
    expect(Math.min(...d)).toBeGreaterThanOrEqual(100);
    expect(Math.max(...d)).toBeLessThanOrEqual(400);
    expect(Math.max(...d) - Math.min(...d)).toBeGreaterThan(250);
  });
});
