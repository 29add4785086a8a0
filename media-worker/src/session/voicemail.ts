// Answering-machine detection, local and deterministic (no extra model, no network). Outbound calls use all of it;
// inbound calls (a number with a voicemail_message) use the cues and the beep only (opening.ts).
// Three signals, any of which classifies the callee as a machine:
//   - transcript cues of a voicemail greeting ("leave a message", "after the tone", "not available"...);
//   - a long greeting: a person answers with a few words ("Hello?"), a greeting runs on (at least
//     `longGreetingWords` words in the callee's utterances before the agent speaks);
//   - a beep: a steady pure tone (Goertzel filter bank between 400 and 2000 Hz) for at least 250 ms.
// A human verdict is given on a short first utterance without cues (at most `shortGreetingWords` words), and
// the call session holds it until the callee stays quiet after it (more speech reopens it: `reopen`). In
// between, no verdict: the local STT makes few, wrong words of a machine's 8 kHz greeting ("hi there have
// reached semi an"), which must not pass for a person's "Hello?"; the beep or the callee's silence decides.
import type { AudioFrame } from '@livekit/rtc-node';

export type AmdVerdict = 'machine' | 'human';

const CUES = [
  /\bleave (me )?(a|your) (brief |short )?message\b/,
  /\bafter the (tone|beep)\b/,
  /\b(at|after) the sound of the (tone|beep)\b/,
  /\b(is|am|are) (not|unable to|currently un) ?(available|able to (take|answer))\b/,
  /\bnot available\b/,
  /\bunavailable\b/,
  /\bcan'?t (take|come to|answer) (your|the) (call|phone)\b/,
  /\bvoice ?mail\b/,
  /\bmailbox\b/,
  /\brecord your message\b/,
  /\byou have reached\b/,
  // Contractions as greetings say them, with or without the STT's apostrophe ("you've", "youve").
  /\byou'?ve reached\b/,
  /\byou reached (the )?(voice|mail|office|desk|phone|line|number)/,
  /\bunable to (take|answer|come to) (your|the) (call|phone)\b/,
  /\bat the (tone|beep)\b/,
  /\bleave (your|a) name and (phone )?number\b/,
  /\baway from (the|my|our) (phone|desk)\b/,
  /\bplease leave\b/,
  /\bget back to you\b/,
];

export function transcriptLooksLikeVoicemail(text: string): boolean {
  // Typographic apostrophes ("you’ve") count as the plain one.
  const t = text.toLowerCase().replace(/[\u2018\u2019`]/g, "'").replace(/[^a-z' ]+/g, ' ').replace(/\s+/g, ' ');
  return CUES.some((re) => re.test(t));
}

export interface ClassifierOptions {
  longGreetingWords: number;
  shortGreetingWords: number;
}

export class VoicemailClassifier {
  #opts: ClassifierOptions;
  verdict: AmdVerdict | null = null;
  reason = '';
  #words = 0;
  constructor(opts: Partial<ClassifierOptions> = {}) {
    this.#opts = { longGreetingWords: 14, shortGreetingWords: 4, ...opts };
  }

  /** Feed a final transcript of the callee. Returns the verdict once there is one. */
  onTranscript(text: string): AmdVerdict | null {
    if (this.verdict) return this.verdict;
    if (transcriptLooksLikeVoicemail(text)) return this.#decide('machine', 'transcript_cue');
    const words = text.trim().split(/\s+/).filter(Boolean).length;
    const first = this.#words === 0;
    this.#words += words;
    if (this.#words >= this.#opts.longGreetingWords) return this.#decide('machine', 'long_greeting');
    if (first && words > 0 && words <= this.#opts.shortGreetingWords) return this.#decide('human', 'short_greeting');
    return null;
  }

  /** A 'human' verdict the callee's further speech took back: their words keep counting towards a long greeting,
   * and only a cue, the word count, a beep or their silence decides now. */
  reopen(): void {
    if (this.verdict !== 'human') return;
    this.verdict = null;
    this.reason = '';
  }

  onBeep(): AmdVerdict {
    return this.verdict ?? this.#decide('machine', 'beep');
  }

  /** A later signal (a beep, a greeting cue after a short first utterance) overrules the first verdict. */
  markMachine(reason: string): AmdVerdict {
    if (this.verdict === 'machine') return 'machine';
    return this.#decide('machine', reason);
  }

  #decide(v: AmdVerdict, reason: string): AmdVerdict {
    this.verdict = v;
    this.reason = reason;
    return v;
  }
}

/** Goertzel power of one frequency over a block, normalised by the block's energy (0..1). */
function tonality(samples: Int16Array, offset: number, n: number, sampleRate: number, freq: number, energy: number): number {
  const k = 2 * Math.cos((2 * Math.PI * freq) / sampleRate);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < n; i++) {
    const s0 = samples[offset + i]! + k * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  const power = s1 * s1 + s2 * s2 - k * s1 * s2;
  return energy > 0 ? (2 * power) / (n * energy) : 0;
}

/** Detects an answering machine's beep: one dominant frequency, loud enough, held for minDurationMs. */
export class BeepDetector {
  readonly freqs: number[];
  #minDurationMs: number;
  #runMs = 0;
  #runFreq = -1;
  detected = false;
  constructor(opts: { minDurationMs?: number } = {}) {
    this.#minDurationMs = opts.minDurationMs ?? 250;
    this.freqs = [];
    for (let f = 400; f <= 2000; f += 50) this.freqs.push(f);
  }

  /** Returns true on the frame where a beep is first confirmed. */
  push(frame: AudioFrame): boolean {
    if (this.detected) return false;
    const data = frame.data;
    const ch = frame.channels;
    const n = frame.samplesPerChannel;
    let mono = data;
    if (ch > 1) {
      mono = new Int16Array(n);
      for (let i = 0; i < n; i++) mono[i] = data[i * ch]!;
    }
    let energy = 0;
    for (let i = 0; i < n; i++) energy += mono[i]! * mono[i]!;
    const rms = Math.sqrt(energy / Math.max(1, n));
    const frameMs = (n / frame.sampleRate) * 1000;
    let best = -1;
    let bestScore = 0;
    if (rms > 800) {
      for (const f of this.freqs) {
        const score = tonality(mono, 0, n, frame.sampleRate, f, energy);
        if (score > bestScore) {
          bestScore = score;
          best = f;
        }
      }
    }
    // A pure tone puts nearly all of its energy in one bin; speech spreads it.
    if (bestScore > 0.6 && (this.#runFreq < 0 || Math.abs(best - this.#runFreq) <= 50)) {
      this.#runFreq = best;
      this.#runMs += frameMs;
      if (this.#runMs >= this.#minDurationMs) {
        this.detected = true;
        return true;
      }
    } else {
      this.#runMs = 0;
      this.#runFreq = -1;
    }
    return false;
  }
}
