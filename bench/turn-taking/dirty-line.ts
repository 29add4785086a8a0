// The dirty lines of bench:turns's barge-in trials (docs/benchmarks.md, "Turn-taking"): for each condition, how
// to start a call on it (the line added to everything the caller sends, line-noise.ts) and the levels it was set
// at. Noise levels are set against the caller's speech: the active level of the corpus utterances spoken over the
// agent. The Deepgram stand-in hears speech by energy; on a noisy line its threshold is raised over the line's
// loudest 10 ms windows, so that it still transcribes the caller and not the noise: a real STT would mostly not
// transcribe a steady noise, and might transcribe the echo, which this does not measure. A line is made at the
// caller's rate: 48 kHz on a web call, 8 kHz on the SIP leg (the speech it is set against resampled to that rate
// first, so the SNR holds in the telephone band; Kellet's filter is pink up to half of any rate).
import { speakText, itemPcm, type CorpusItem, CORPUS_RATE, SPEECH_RMS } from './corpus.ts';
import { resample, type Pcm } from '../../test/support/speech.ts';
import { Babble, CLEAN, EchoPath, PinkNoise, activeSpeechPower, rmsForSnr, type LineCondition } from './line-noise.ts';
import { longReplyPcm, type CallOptions } from './rig.ts';
import { mixSeed } from '../../test/support/seeded-random.ts';

export interface LineOptions {
  /** Pink noise this far under the caller's speech (dB). */
  pinkSnrDb: number;
  babbleSnrDb: number;
  echoDelayMs: number;
  /** The echo's level against the agent's audio as the caller received it (dB). */
  echoGainDb: number;
  seed: number;
}

export interface LineSetup {
  condition: LineCondition;
  /** What was added, for the results. */
  describe: Record<string, unknown>;
  /** Options for each call on this line (each gets its own noise, or its own echo path). */
  callOptions(callIndex: number): CallOptions;
}

/** Voices of the babble: several speakers at once, none of them the caller's sentence. */
const BABBLE: [string, string, number][] = [
  ['en-gb', 'I told him the meeting was moved to Thursday afternoon but he never wrote it down.', 165],
  ['en-us+f4', 'We should get the blue one because the other colour will fade in the sun.', 180],
  ['en-gb-scotland', 'The bus was late again so I walked most of the way into town this morning.', 155],
  ['en-us+m3', 'Did you see the score last night, they came back in the final ten minutes.', 190],
  ['en-029', 'My sister is flying in on Saturday and staying with us for a couple of weeks.', 170],
  ['en-gb+f2', 'Put the kettle on, I will be down in a minute once I have found my glasses.', 160],
];

/** 10 ms windows of `x` (a rate's worth), their RMS. */
function windowRms(x: ArrayLike<number>, rate: number): number[] {
  const step = Math.round(rate / 100);
  const out: number[] = [];
  for (let at = 0; at + step <= x.length; at += step) {
    let sum = 0;
    for (let i = at; i < at + step; i++) sum += x[i]! * x[i]!;
    out.push(Math.sqrt(sum / step));
  }
  return out;
}

/** The stand-in's threshold over a line: half again over its loudest 10 ms windows, and never under the usual one. */
const thresholdOver = (loudest: number) => Math.max(SPEECH_RMS, Math.round(loudest * 1.5));

/** The lines of these conditions at `rate` (the caller's: each call's line and echo are at it). */
export async function prepareLines(conditions: readonly LineCondition[], speechItems: CorpusItem[], opts: LineOptions, rate = CORPUS_RATE): Promise<LineSetup[]> {
  const atRate = (pcm: Pcm) => resample(pcm, rate).samples;
  // The caller's speech level: the mean active power of the utterances spoken over the agent.
  const powers = speechItems.slice(0, 24).map((i) => activeSpeechPower(atRate(itemPcm(i)), rate));
  const speechPower = powers.reduce((a, b) => a + b, 0) / Math.max(1, powers.length);
  const speechDbfs = +(10 * Math.log10(speechPower / 32768 ** 2)).toFixed(1);
  const setups: LineSetup[] = [];
  for (const condition of conditions) {
    if (condition === 'clean') {
      setups.push({ condition, describe: { what: 'nothing added (the same microphone loop as the other lines)' }, callOptions: () => ({ line: CLEAN }) });
    } else if (condition === 'pink') {
      const rms = rmsForSnr(speechPower, opts.pinkSnrDb);
      const loudest = Math.max(...windowRms(new PinkNoise(rms, opts.seed).next(rate * 10), rate));
      setups.push({
        condition,
        describe: { what: 'pink noise', snr_db: opts.pinkSnrDb, speech_active_dbfs: speechDbfs, noise_rms: Math.round(rms), stt_speech_rms: thresholdOver(loudest) },
        callOptions: (i) => ({ line: new PinkNoise(rms, mixSeed(opts.seed, i)), sttSpeechRms: thresholdOver(loudest) }),
      });
    } else if (condition === 'babble') {
      const clips = await Promise.all(BABBLE.map(([voice, text, wpm]) => speakText(text, voice, wpm)));
      const rms = rmsForSnr(speechPower, opts.babbleSnrDb);
      const make = (seed: number) => new Babble(clips.map(atRate), rate * 6, rms, seed);
      const loudest = Math.max(...windowRms(make(opts.seed).next(rate * 6), rate));
      setups.push({
        condition,
        describe: { what: `babble: ${BABBLE.length} espeak-ng voices at once, looped (6 s)`, snr_db: opts.babbleSnrDb, speech_active_dbfs: speechDbfs, noise_rms: Math.round(rms), stt_speech_rms: thresholdOver(loudest) },
        callOptions: (i) => ({ line: make(mixSeed(opts.seed, i)), sttSpeechRms: thresholdOver(loudest) }),
      });
    } else {
      // The echo's loudest window: the agent's loudest, at the echo's gain (at the line's rate, or the TTS's 24 kHz
      // when that is lower).
      const replyRate = Math.min(rate, 24000);
      const reply = resample({ samples: await longReplyPcm(), sampleRate: 24000 }, replyRate).samples;
      const loudest = Math.max(...windowRms(reply, replyRate)) * 10 ** (opts.echoGainDb / 20);
      setups.push({
        condition,
        describe: { what: "the agent's audio as the caller received it, sent back later and quieter", delay_ms: opts.echoDelayMs, gain_db: opts.echoGainDb, stt_speech_rms: thresholdOver(loudest) },
        callOptions: () => {
          const echo = new EchoPath({ rate, delayMs: opts.echoDelayMs, gainDb: opts.echoGainDb });
          return { line: echo, onAgentAudio: (s) => echo.push(s), sttSpeechRms: thresholdOver(loudest) };
        },
      });
    }
  }
  return setups;
}
