// The offline recogniser the phone e2e tests use, on telephone audio: festival's voice taken to 8 kHz and
// through a G.711 µ-law round trip, as a caller hears it. The en-US model is wideband, so transcribe() fills
// the empty upper band of 8 kHz audio (speech.ts, fillUpperBand). These cases show that it needs to, that the
// fill makes no words out of silence, and that the closed set of greetings tells each greeting from the others.
import { describe, expect, it } from 'vitest';
import { concatSamples, envelopeMatch, resample, synthesize, transcribe, wordsFound, type Pcm } from './support/speech.ts';
import { ulawDecode, ulawEncode } from './support/g711.ts';
import { FIRST_MESSAGE, GREETINGS, GREETINGS_GRAMMAR, spelled } from './support/greetings.ts';

function telephone(pcm: Pcm): Pcm {
  const narrow = resample(pcm, 8000);
  return { samples: narrow.samples.map((s) => ulawDecode(ulawEncode(s))), sampleRate: 8000 };
}

describe('offline recognition of telephone audio', { timeout: 120_000 }, () => {
  it('reads a sentence from 8 kHz G.711 audio once the empty upper band is filled, and not without', async () => {
    const phone = telephone(await synthesize(FIRST_MESSAGE));
    const filled = await transcribe(phone);
    expect(wordsFound(FIRST_MESSAGE, filled).length, filled).toBeGreaterThanOrEqual(4);
    const bare = await transcribe(phone, { fillUpperBand: false });
    expect(wordsFound(FIRST_MESSAGE, bare).length, bare).toBeLessThan(3);
    expect(await transcribe(phone, { jsgf: GREETINGS_GRAMMAR, fillUpperBand: false })).not.toBe(spelled(FIRST_MESSAGE));
  });

  it('finds no words in telephone silence, and few of the first message in another greeting', async () => {
    const silence: Pcm = { samples: new Int16Array(8000 * 3).map((_, i) => ulawDecode(i % 2 ? 0xff : 0x7f)), sampleRate: 8000 };
    expect(await transcribe(silence)).toBe('');
    expect(await transcribe(silence, { jsgf: GREETINGS_GRAMMAR })).toBe('');
    const other = await transcribe(telephone(await synthesize(GREETINGS[1]!)));
    expect(wordsFound(FIRST_MESSAGE, other).length, other).toBeLessThan(2);
  });

  it('tells each greeting of the closed set from the others over a telephone line', async () => {
    for (const greeting of GREETINGS) {
      expect(await transcribe(telephone(await synthesize(greeting)), { jsgf: GREETINGS_GRAMMAR })).toBe(spelled(greeting));
    }
  });
});

describe('matching a known sentence by its loudness envelope (envelopeMatch)', { timeout: 120_000 }, () => {
  const BRIEFING = 'Hello, Ada is calling about a broken tooth and wants an appointment today.';

  it('finds the sentence over a telephone line, after other sound, and not another sentence, a tune or silence', async () => {
    const reference = await synthesize(BRIEFING);
    const line = telephone(reference);
    // Heard as a phone leg hears it: half a second of a tone first, then the sentence, then quiet.
    const tone = Int16Array.from({ length: 4000 }, (_, i) => Math.round(6000 * Math.sin((2 * Math.PI * 523.25 * i) / 8000)));
    const heard: Pcm = { samples: concatSamples(tone, line.samples, new Int16Array(8000)), sampleRate: 8000 };
    expect(envelopeMatch(reference, heard)).toBeGreaterThan(0.9);

    // Sentences as long as it or longer (a shorter one cannot hold 3/4 of it, and scores 0).
    for (const other of [
      'The weather in the mountains will be cold and windy again tomorrow morning.',
      'Hello, I have a caller on the line who asked to speak with a person. I am putting them through now.',
    ]) {
      expect(envelopeMatch(reference, telephone(await synthesize(other))), other).toBeLessThan(0.7);
    }
    // A tune of the hold music's notes, a quarter second each with a decay, for five seconds.
    const notes = [523.25, 587.33, 659.25, 783.99, 880.0];
    const tune = Int16Array.from({ length: 40000 }, (_, i) => {
      const f = notes[Math.floor(i / 2000) % notes.length]!;
      return Math.round(8000 * Math.exp(-(i % 2000) / 800) * Math.sin((2 * Math.PI * f * i) / 8000));
    });
    expect(envelopeMatch(reference, { samples: tune, sampleRate: 8000 })).toBeLessThan(0.7);
    expect(envelopeMatch(reference, { samples: new Int16Array(40000), sampleRate: 8000 })).toBe(0);
  });
});

