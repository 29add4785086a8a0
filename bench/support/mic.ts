// The caller's always-on microphone for the WebRTC benchmarks and the turn-taking rig.
import type { RtcClient } from '../../test/support/rtc-client.ts';
import type { Pcm } from '../../test/support/speech.ts';

/** A microphone that never stops: 100 ms of silence between the clips it is given, as a browser's. */
export class Mic {
  #queue: { pcm: Pcm; done: (r: { start: number; end: number }) => void }[] = [];
  #running = true;
  readonly #loop: Promise<void>;
  readonly #silence: Pcm = { samples: new Int16Array(4800), sampleRate: 48000 };

  constructor(client: RtcClient) {
    this.#loop = (async () => {
      while (this.#running) {
        const next = this.#queue.shift();
        const spoken = await client.speak(next?.pcm ?? this.#silence);
        // The source plays in real time: the clip's first sample left it its duration before the last.
        next?.done({ start: spoken.endedAt - spoken.durationMs, end: spoken.endedAt });
      }
    })();
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
