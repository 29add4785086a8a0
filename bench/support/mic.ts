// The caller's always-on microphone for the WebRTC benchmarks and the turn-taking rig, and what a caller on a
// line sends (LineFeed: the clips it is given, with the line's audio under them), which the SIP caller sends too.
import type { RtcClient } from '../../test/support/rtc-client.ts';
import { resample, type Pcm } from '../../test/support/speech.ts';

/** Audio added to everything the microphone sends (a dirty line: its noise, an echo), n samples at 48 kHz at a time. */
export interface LineSource {
  next(n: number): ArrayLike<number>;
}

const LINE_RATE = 48000;
const FRAME = LINE_RATE / 100;

/** When a clip's first and last samples left the caller (wall-clock ms). */
export type Spoken = { start: number; end: number };

/** A frame of what a caller on a line sends, and where a clip began or ended in it. */
export interface LineFrame {
  samples: Int16Array;
  /** A clip's first sample is this sample of the frame. */
  began?: number;
  /** A clip's last sample is before this sample of the frame; `settle` resolves its say() with when it was spoken. */
  ended?: { at: number; durationMs: number; settle: (r: Spoken) => void };
}

/**
 * The clips a caller is given to speak over a line, as frames at `rate`: each clip in turn (resampled to the rate),
 * silence between them, and the line's audio (none: silence) added to all of it, clipped to int16. A clip starts
 * with a frame. The sender times the clips (settle), as only it knows when a frame leaves.
 */
export class LineFeed {
  readonly #queue: { samples: Int16Array; settle: (r: Spoken) => void }[] = [];
  #clip: { samples: Int16Array; at: number; settle: (r: Spoken) => void } | null = null;

  readonly rate: number;
  readonly line: LineSource | undefined;

  constructor(rate: number, line?: LineSource) {
    this.rate = rate;
    this.line = line;
  }

  say(pcm: Pcm): Promise<Spoken> {
    return new Promise((settle) => this.#queue.push({ samples: resample(pcm, this.rate).samples, settle }));
  }

  next(n: number): LineFrame {
    const frame: LineFrame = { samples: new Int16Array(n) };
    if (!this.#clip) {
      const next = this.#queue.shift();
      if (next) {
        this.#clip = { ...next, at: 0 };
        frame.began = 0;
      }
    }
    const clip = this.#clip;
    const add = this.line?.next(n);
    for (let i = 0; i < n; i++) {
      const speech = clip && clip.at + i < clip.samples.length ? clip.samples[clip.at + i]! : 0;
      frame.samples[i] = Math.max(-32768, Math.min(32767, Math.round(speech + (add?.[i] ?? 0))));
    }
    if (clip) {
      clip.at += n;
      if (clip.at >= clip.samples.length) {
        frame.ended = { at: n - (clip.at - clip.samples.length), durationMs: (clip.samples.length / this.rate) * 1000, settle: clip.settle };
        this.#clip = null;
      }
    }
    return frame;
  }
}

/**
 * A microphone that never stops: 100 ms of silence between the clips it is given, as a browser's. On a line
 * (`line`), it sends 10 ms frames itself, each clip or silence with the line's audio added, so the line never stops
 * either: the far end hears the noise from the call's start, as on a real line.
 */
export class Mic {
  #queue: { pcm: Pcm; done: (r: Spoken) => void }[] = [];
  #running = true;
  readonly #feed: LineFeed | null;
  readonly #loop: Promise<void>;
  readonly #silence: Pcm = { samples: new Int16Array(4800), sampleRate: 48000 };

  constructor(client: RtcClient, line?: LineSource) {
    this.#feed = line ? new LineFeed(LINE_RATE, line) : null;
    this.#loop = this.#feed ? this.#lineLoop(client, this.#feed) : this.#clipLoop(client);
  }

  async #clipLoop(client: RtcClient): Promise<void> {
    while (this.#running) {
      const next = this.#queue.shift();
      const spoken = await client.speak(next?.pcm ?? this.#silence);
      // The source plays in real time: the clip's first sample left it its duration before the last.
      next?.done({ start: spoken.endedAt - spoken.durationMs, end: spoken.endedAt });
    }
  }

  async #lineLoop(client: RtcClient, feed: LineFeed): Promise<void> {
    while (this.#running) {
      const frame = feed.next(FRAME);
      const queuedMs = await client.sendFrame(frame.samples);
      if (frame.ended) {
        // Its last sample plays out once what is queued ahead of it has (less the frame's part after it); the
        // first, its duration before. (The clock is rtc-client's nowMs.)
        const end = performance.timeOrigin + performance.now() + queuedMs - ((FRAME - frame.ended.at) / LINE_RATE) * 1000;
        frame.ended.settle({ start: end - frame.ended.durationMs, end });
      }
    }
  }

  /** Resolves once the clip has played out, with the times its first and last samples left the source. */
  say(pcm: Pcm): Promise<Spoken> {
    return this.#feed ? this.#feed.say(pcm) : new Promise((done) => this.#queue.push({ pcm, done }));
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }
}
