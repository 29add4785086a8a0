// The caller's always-on microphone for the WebRTC benchmarks and the turn-taking rig.
import type { RtcClient } from '../../test/support/rtc-client.ts';
import { resample, type Pcm } from '../../test/support/speech.ts';

/** Audio added to everything the microphone sends (a dirty line: its noise, an echo), n samples at 48 kHz at a time. */
export interface LineSource {
  next(n: number): ArrayLike<number>;
}

const LINE_RATE = 48000;
const FRAME = LINE_RATE / 100;

/**
 * A microphone that never stops: 100 ms of silence between the clips it is given, as a browser's. On a line
 * (`line`), it sends 10 ms frames itself, each clip or silence with the line's audio added, so the line never stops
 * either: the far end hears the noise from the call's start, as on a real line.
 */
export class Mic {
  #queue: { pcm: Pcm; done: (r: { start: number; end: number }) => void }[] = [];
  #running = true;
  readonly #loop: Promise<void>;
  readonly #silence: Pcm = { samples: new Int16Array(4800), sampleRate: 48000 };

  constructor(client: RtcClient, line?: LineSource) {
    this.#loop = line ? this.#lineLoop(client, line) : this.#clipLoop(client);
  }

  async #clipLoop(client: RtcClient): Promise<void> {
    while (this.#running) {
      const next = this.#queue.shift();
      const spoken = await client.speak(next?.pcm ?? this.#silence);
      // The source plays in real time: the clip's first sample left it its duration before the last.
      next?.done({ start: spoken.endedAt - spoken.durationMs, end: spoken.endedAt });
    }
  }

  async #lineLoop(client: RtcClient, line: LineSource): Promise<void> {
    let clip: { samples: Int16Array; at: number; done: (r: { start: number; end: number }) => void } | null = null;
    while (this.#running) {
      if (!clip) {
        const next = this.#queue.shift();
        if (next) clip = { samples: resample(next.pcm, LINE_RATE).samples, at: 0, done: next.done };
      }
      const add = line.next(FRAME);
      const frame = new Int16Array(FRAME);
      for (let i = 0; i < FRAME; i++) {
        const speech = clip && clip.at + i < clip.samples.length ? clip.samples[clip.at + i]! : 0;
        frame[i] = Math.max(-32768, Math.min(32767, Math.round(speech + (add[i] ?? 0))));
      }
      const queuedMs = await client.sendFrame(frame);
      if (clip) {
        clip.at += FRAME;
        if (clip.at >= clip.samples.length) {
          // Its last sample plays out once what is queued ahead of it has (less the frame's part after it); the
          // first, its duration before. (The clock is rtc-client's nowMs.)
          const end = performance.timeOrigin + performance.now() + queuedMs - ((clip.at - clip.samples.length) / LINE_RATE) * 1000;
          clip.done({ start: end - (clip.samples.length / LINE_RATE) * 1000, end });
          clip = null;
        }
      }
    }
  }

  /** Resolves once the clip has played out, with the times its first and last samples left the source. */
  say(pcm: Pcm): Promise<{ start: number; end: number }> {
    return new Promise((done) => this.#queue.push({ pcm, done }));
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }
}
