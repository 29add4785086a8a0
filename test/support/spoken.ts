// Spoken utterances for the STT stand-ins' tests: espeak-ng's speech for each text, trimmed to its speech and
// joined by silences, with the script (the label) that tells a stand-in which words are where.
import type { stt } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { speechBounds } from '../../bench/turn-taking/corpus.ts';
import { resample, synthesize, type Pcm } from './speech.ts';

export interface SpokenScript {
  segments: { text: string; startMs: number; endMs: number }[];
}

/** Texts (spoken) and numbers (silences, ms), in order, at `rate`; the script's offsets are the audio's. */
export async function spoken(parts: (string | number)[], rate = 16000): Promise<{ pcm: Pcm; script: SpokenScript; samples: Int16Array }> {
  const chunks: Int16Array[] = [];
  const script: SpokenScript = { segments: [] };
  let at = 0;
  for (const p of parts) {
    let samples: Int16Array;
    if (typeof p === 'number') samples = new Int16Array(Math.round((p / 1000) * rate));
    else {
      const speech = resample(await synthesize(p, 'espeak-ng'), rate);
      const [a, b] = speechBounds(speech);
      samples = speech.samples.slice(a, b);
      script.segments.push({ text: p, startMs: (at / rate) * 1000, endMs: ((at + samples.length) / rate) * 1000 });
    }
    chunks.push(samples);
    at += samples.length;
  }
  const samples = new Int16Array(at);
  let o = 0;
  for (const c of chunks) {
    samples.set(c, o);
    o += c.length;
  }
  return { pcm: { samples, sampleRate: rate }, script, samples };
}

/** Pushes audio into an STT stream in 10 ms frames at real time, as a room's audio stream does. */
export async function playInto(stream: stt.SpeechStream, pcm: Pcm): Promise<void> {
  const step = pcm.sampleRate / 100;
  const t0 = performance.now();
  for (let i = 0, k = 0; i < pcm.samples.length; i += step, k++) {
    const frame = new Int16Array(step);
    frame.set(pcm.samples.subarray(i, Math.min(i + step, pcm.samples.length)));
    stream.pushFrame(new AudioFrame(frame, pcm.sampleRate, 1, step));
    const wait = t0 + (k + 1) * 10 - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
}
