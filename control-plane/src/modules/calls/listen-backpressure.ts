// The listen stream's backpressure: a client that reads slower than the audio comes loses frames instead of
// growing the server's send buffer, and one that stays behind too long is closed (listen-session.ts).

/** What the gate needs of a WebSocket (ws's): its unsent bytes, and a send. */
export interface FrameSink {
  readonly bufferedAmount: number;
  send(frame: Buffer, opts: { binary: true }): void;
}

export type Offer = 'sent' | 'dropped' | 'too_slow';

export class FrameGate {
  readonly #limit: number;
  readonly #tooSlowMs: number;
  readonly #now: () => number;
  #slowSince: number | null = null;
  dropped = 0;

  /** `limit`: unsent bytes above which frames are dropped; `tooSlowMs`: how long a client may stay above it. */
  constructor(limit: number, tooSlowMs: number, now: () => number = () => performance.now()) {
    this.#limit = limit;
    this.#tooSlowMs = tooSlowMs;
    this.#now = now;
  }

  offer(sink: FrameSink, frame: Buffer): Offer {
    if (sink.bufferedAmount > this.#limit) {
      this.dropped++;
      this.#slowSince ??= this.#now();
      return this.#now() - this.#slowSince > this.#tooSlowMs ? 'too_slow' : 'dropped';
    }
    this.#slowSince = null;
    sink.send(frame, { binary: true });
    return 'sent';
  }
}
