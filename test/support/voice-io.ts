// Audio I/O for running a real AgentSession with no room: synthesized speech as a phone line's input,
// and an output that "plays" frames in simulated real time (so interruptions behave as on a call).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ReadableStream, type ReadableStreamDefaultController } from 'node:stream/web';
import { AudioFrame } from '@livekit/rtc-node';
import { voice } from '@livekit/agents';

const run = promisify(execFile);
export const LINE_RATE = 16000;
const CACHE = path.join(tmpdir(), 'vap-speech-cache');

/** Mono s16 samples at LINE_RATE. */
export type Pcm = Int16Array;

/**
 * Speech for `text`, 16 kHz mono: festival (the us-slt-hts voice, which pocketsphinx understands best)
 * or espeak-ng. Cached on disk by engine and text.
 */
export async function synthesize(text: string, engine: 'festival' | 'espeak-ng' = 'festival'): Promise<Pcm> {
  mkdirSync(CACHE, { recursive: true });
  const key = createHash('sha1').update(`${engine}\0${text}`).digest('hex').slice(0, 16);
  const raw = path.join(CACHE, `${key}.s16`);
  if (!existsSync(raw)) {
    const wav = path.join(CACHE, `${key}.wav`);
    if (engine === 'festival') {
      const txt = path.join(CACHE, `${key}.txt`);
      writeFileSync(txt, text);
      await run('text2wave', ['-eval', '(voice_cmu_us_slt_arctic_hts)', '-o', wav, txt]);
    } else {
      await run('espeak-ng', ['-v', 'en-us', '-w', wav, text]);
    }
    await run('sox', [wav, '-t', 'raw', '-r', String(LINE_RATE), '-e', 'signed', '-b', '16', '-c', '1', raw]);
  }
  const buf = readFileSync(raw);
  return new Int16Array(buf.buffer, buf.byteOffset, buf.byteLength / 2).slice();
}

/** A pure tone (an answering machine's beep). */
export function tone(freq: number, ms: number, amplitude = 12000): Pcm {
  const n = Math.round((LINE_RATE * ms) / 1000);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * freq * i) / LINE_RATE));
  return out;
}

/** `speechMs` of a 220 Hz tone (speech to an energy detector), then `silenceMs` of silence, in 10 ms frames at `rate`. */
export function toneFrames(rate: number, speechMs: number, silenceMs: number, amplitude = 8000): AudioFrame[] {
  const step = rate / 100;
  return Array.from({ length: (speechMs + silenceMs) / 10 }, (_, i) => {
    const data = new Int16Array(step);
    if (i < speechMs / 10) for (let j = 0; j < step; j++) data[j] = Math.round(amplitude * Math.sin((2 * Math.PI * 220 * (i * step + j)) / rate));
    return new AudioFrame(data, rate, 1, step);
  });
}

/** A burst of seeded white noise (a knock or a bump on the line), peak `amplitude`. */
export function noiseBurst(ms: number, amplitude = 12000, seed = 1): Pcm {
  const n = Math.round((LINE_RATE * ms) / 1000);
  const out = new Int16Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out[i] = Math.round(((x / 2147483648) * 2 - 1) * amplitude);
  }
  return out;
}

export const silence = (ms: number): Pcm => new Int16Array(Math.round((LINE_RATE * ms) / 1000));

/**
 * A phone line: sends 20 ms frames continuously, paced at `speed` × real time; speech queued with say()
 * goes out in order, silence in between. `say` resolves when the last speech frame has been sent
 * (the user's end of speech). hold() stops the line's audio at a point in the queue until resume(): a test
 * drives the call's audio time there, as a loaded machine would, where the session runs behind the line.
 */
export class LineAudioInput extends voice.AudioInput {
  readonly frameMs = 20;
  readonly speed: number;
  readonly sampleRate: number;
  #controller!: ReadableStreamDefaultController<AudioFrame>;
  #queue: ({ pcm: Pcm; offset: number; done: (t: number) => void } | { hold: () => void })[] = [];
  #held = false;
  #timer: NodeJS.Timeout | null = null;
  #started = 0;
  #sent = 0;
  #closed = false;
  /** Called with each frame sent. */
  onFrame: ((f: AudioFrame) => void) | null = null;

  constructor(opts: { speed?: number; sampleRate?: number } = {}) {
    super();
    this.speed = opts.speed ?? 1;
    // Speech queued with say() is LINE_RATE audio; another rate is for silence-only lines (benchmarks).
    this.sampleRate = opts.sampleRate ?? LINE_RATE;
    const source = new ReadableStream<AudioFrame>({
      start: (c) => {
        this.#controller = c;
      },
    });
    this.multiStream.addInputStream(source);
  }

  /** The readable stream of frames, before it is handed to the session (to wrap it). */
  get source(): ReadableStream<AudioFrame> {
    return this.multiStream.stream;
  }

  start(): void {
    if (this.#timer) return;
    this.#started = performance.now();
    this.#sent = 0;
    const tick = () => {
      if (this.#closed) return;
      const due = Math.floor(((performance.now() - this.#started) * this.speed) / this.frameMs);
      while (this.#sent < due && !this.#held) {
        const head = this.#queue[0];
        if (head && 'hold' in head) {
          this.#queue.shift();
          this.#held = true;
          head.hold();
          break;
        }
        this.#sendFrame();
        this.#sent++;
      }
      this.#timer = setTimeout(tick, Math.max(1, this.frameMs / this.speed / 2));
    };
    tick();
  }

  say(pcm: Pcm): Promise<number> {
    return new Promise((done) => this.#queue.push({ pcm, offset: 0, done }));
  }

  /** Stops the line after what is queued so far: no frame at all (not even silence) until resume(). Resolves
   * when the line has stopped. */
  hold(): Promise<void> {
    return new Promise((hold) => this.#queue.push({ hold }));
  }

  /** Sends again from where the line stopped, paced from now (the stopped time is not made up). */
  resume(): void {
    if (!this.#held) return;
    this.#held = false;
    this.#started = performance.now() - (this.#sent * this.frameMs) / this.speed;
  }

  get speaking(): boolean {
    return this.#queue.some((q) => 'pcm' in q);
  }

  #sendFrame(): void {
    const n = (this.sampleRate * this.frameMs) / 1000;
    const data = new Int16Array(n);
    const head = this.#queue[0];
    if (head && 'pcm' in head) {
      const take = Math.min(n, head.pcm.length - head.offset);
      data.set(head.pcm.subarray(head.offset, head.offset + take));
      head.offset += take;
      if (head.offset >= head.pcm.length) {
        this.#queue.shift();
        head.done(performance.now());
      }
    }
    const frame = new AudioFrame(data, this.sampleRate, 1, n);
    this.onFrame?.(frame);
    try {
      this.#controller.enqueue(frame);
    } catch {
      this.#closed = true;
    }
  }

  override async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    try {
      this.#controller.close();
    } catch {
      // already closed
    }
    await super.close();
  }
}

/**
 * Plays frames in simulated real time; records them, and when each segment's first frame arrived. It can pause
 * like the room's output (agents-js holds a reply on the caller's sound): a paused segment's clock stands still.
 */
export class CaptureAudioOutput extends voice.AudioOutput {
  readonly speed: number;
  frames: AudioFrame[] = [];
  /** performance.now() of each segment's first frame. */
  segmentStarts: number[] = [];
  interruptions = 0;
  /** Pauses, and resumes of a paused segment; performance.now() of each pause. */
  pauses = 0;
  resumes = 0;
  pauseTimes: number[] = [];
  keepFrames: boolean;
  #segStart = 0;
  #segAudioMs = 0;
  #inSegment = false;
  #flushed = false;
  /** Wall time the current segment spent paused, and when the running pause began (null: playing). */
  #pausedMs = 0;
  #pausedAt: number | null = null;
  #finishTimer: NodeJS.Timeout | null = null;
  onFirstFrame: ((t: number) => void) | null = null;

  constructor(opts: { sampleRate?: number; speed?: number; keepFrames?: boolean } = {}) {
    super(opts.sampleRate, undefined, { pause: true });
    this.speed = opts.speed ?? 1;
    this.keepFrames = opts.keepFrames ?? true;
  }

  override async captureFrame(frame: AudioFrame): Promise<void> {
    await super.captureFrame(frame);
    if (!this.#inSegment) {
      this.#inSegment = true;
      this.#flushed = false;
      this.#segStart = performance.now();
      this.#segAudioMs = 0;
      this.#pausedMs = 0;
      if (this.#pausedAt !== null) this.#pausedAt = this.#segStart;
      this.segmentStarts.push(this.#segStart);
      this.onFirstFrame?.(this.#segStart);
      this.onPlaybackStarted(Date.now());
    }
    this.#segAudioMs += (frame.samplesPerChannel / frame.sampleRate) * 1000;
    if (this.keepFrames) this.frames.push(frame);
  }

  override flush(): void {
    super.flush();
    if (!this.#inSegment) return;
    this.#flushed = true;
    this.#scheduleFinish();
  }

  override pause(): void {
    super.pause();
    if (this.#pausedAt !== null) return;
    this.#pausedAt = performance.now();
    if (!this.#inSegment) return;
    this.pauses++;
    this.pauseTimes.push(this.#pausedAt);
    if (this.#finishTimer) clearTimeout(this.#finishTimer);
    this.#finishTimer = null;
  }

  override resume(): void {
    super.resume();
    if (this.#pausedAt === null) return;
    if (this.#inSegment) {
      this.#pausedMs += performance.now() - this.#pausedAt;
      this.resumes++;
    }
    this.#pausedAt = null;
    if (this.#inSegment && this.#flushed) this.#scheduleFinish();
  }

  get paused(): boolean {
    return this.#pausedAt !== null;
  }

  #scheduleFinish(): void {
    if (this.#pausedAt !== null) return;
    if (this.#finishTimer) clearTimeout(this.#finishTimer);
    const remaining = this.#segStart + this.#pausedMs + this.#segAudioMs / this.speed - performance.now();
    const audioMs = this.#segAudioMs;
    this.#finishTimer = setTimeout(() => {
      this.#finishTimer = null;
      this.#inSegment = false;
      this.onPlaybackFinished({ playbackPosition: audioMs / 1000, interrupted: false });
    }, Math.max(0, remaining));
  }

  /** Whether a segment is playing or paused (from its first frame until its playback finished or was cleared). */
  get playing(): boolean {
    return this.#inSegment;
  }

  /** How much of the current segment has played, in audio milliseconds (0 when none is playing). */
  get playedMs(): number {
    if (!this.#inSegment) return 0;
    const now = performance.now();
    const paused = this.#pausedMs + (this.#pausedAt !== null ? now - this.#pausedAt : 0);
    return Math.min(this.#segAudioMs, (now - this.#segStart - paused) * this.speed);
  }

  clearBuffer(): void {
    if (!this.#inSegment) return;
    if (this.#finishTimer) clearTimeout(this.#finishTimer);
    this.#finishTimer = null;
    const played = this.playedMs;
    this.#inSegment = false;
    this.interruptions++;
    this.onPlaybackFinished({ playbackPosition: played / 1000, interrupted: true });
  }
}
