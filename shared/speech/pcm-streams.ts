// The two stream shapes of a TTS whose engine turns one piece of text into 16-bit mono PCM (local
// processes, Cartesia's bytes endpoint): `synthesize()` speaks the whole text; `stream()` splits streamed
// text into sentences and speaks each as soon as it is complete, one after another.
import {
  type APIConnectOptions,
  APIError,
  DEFAULT_API_CONNECT_OPTIONS,
  shortuuid,
  type tokenize,
  tts,
} from '@livekit/agents';
import type { AudioFrame } from '@livekit/rtc-node';
import { runAttempts } from './chunked-attempts.ts';
import type { PcmFramer } from './pcm-framer.ts';

/** Speaks `text`, handing PCM (at the TTS's sample rate) to `onPcm` as it arrives. */
export type SynthesizeText = (text: string, signal: AbortSignal, timeoutMs: number, onPcm: (pcm: Buffer) => void) => Promise<void>;

export interface PcmEngine {
  synthesizeText: SynthesizeText;
  /** Cuts PCM into the frames handed to the session. */
  frameStream(): PcmFramer;
}

/** Holds back the newest frame so the last one of a segment can be marked final. */
class FrameEmitter {
  #bytes: PcmFramer;
  #held?: AudioFrame;
  #put: (frame: AudioFrame, final: boolean) => void;

  constructor(bytes: PcmFramer, put: (frame: AudioFrame, final: boolean) => void) {
    this.#bytes = bytes;
    this.#put = put;
  }

  write(pcm: Buffer): void {
    for (const frame of this.#bytes.write(pcm)) this.#push(frame);
  }

  /** Emits what the byte stream still holds, keeping the last frame back. */
  drain(): void {
    for (const frame of this.#bytes.flush()) this.#push(frame);
  }

  /** Emits the held frame, as the segment's last (final) or not. */
  release(final: boolean): void {
    if (this.#held) this.#put(this.#held, final);
    this.#held = undefined;
  }

  #push(frame: AudioFrame): void {
    this.release(false);
    this.#held = frame;
  }
}

export class PcmChunkedStream extends tts.ChunkedStream {
  label: string;
  #tts: tts.TTS;
  #engine: PcmEngine;
  #connOptions: APIConnectOptions;

  constructor(
    owner: tts.TTS,
    engine: PcmEngine,
    text: string,
    connOptions?: APIConnectOptions,
    abortSignal?: AbortSignal,
  ) {
    super(text, owner, connOptions, abortSignal);
    this.label = `${owner.label.replace(/\.TTS$/, '')}.ChunkedStream`;
    this.#tts = owner;
    this.#engine = engine;
    this.#connOptions = connOptions ?? DEFAULT_API_CONNECT_OPTIONS;
  }

  protected async run(): Promise<void> {
    const requestId = shortuuid();
    const queue = this.queue;
    let sent = false;
    const frames = new FrameEmitter(this.#engine.frameStream(), (frame, final) => {
      sent = true;
      if (!queue.closed) queue.put({ requestId, segmentId: requestId, frame, final });
    });
    try {
      await runAttempts(
        this.#tts,
        this.#connOptions,
        this.abortSignal,
        async () => {
          await this.#engine.synthesizeText(this.inputText, this.abortSignal, this.#connOptions.timeoutMs, (pcm) =>
            frames.write(pcm),
          );
          frames.drain();
          frames.release(true);
        },
        () => sent,
      );
    } finally {
      queue.close();
    }
  }
}

export class SentenceSynthesizeStream extends tts.SynthesizeStream {
  label: string;
  #engine: PcmEngine;
  #tokenizer: tokenize.SentenceTokenizer;

  constructor(owner: tts.TTS, engine: PcmEngine, tokenizer: tokenize.SentenceTokenizer, connOptions?: APIConnectOptions) {
    super(owner, connOptions);
    this.label = `${owner.label.replace(/\.TTS$/, '')}.SynthesizeStream`;
    this.#engine = engine;
    this.#tokenizer = tokenizer;
  }

  protected async run(): Promise<void> {
    const requestId = shortuuid();
    const sentences = this.#tokenizer.stream();
    let segmentId = '';
    const frames = new FrameEmitter(this.#engine.frameStream(), (frame, final) => {
      if (!this.queue.closed) this.queue.put({ requestId, segmentId, frame, final });
    });

    const forwardInput = async () => {
      for await (const input of this.input) {
        if (this.abortSignal.aborted) break;
        if (input === SentenceSynthesizeStream.FLUSH_SENTINEL) sentences.flush();
        else sentences.pushText(input);
      }
      sentences.endInput();
    };

    const synthesizeSentences = async () => {
      for await (const sentence of sentences) {
        if (this.abortSignal.aborted) break;
        if (segmentId && sentence.segmentId !== segmentId) frames.release(true);
        segmentId = sentence.segmentId;
        this.markStarted();
        await this.#engine.synthesizeText(sentence.token, this.abortSignal, this.connOptions.timeoutMs, (pcm) =>
          frames.write(pcm),
        );
        frames.drain();
      }
      frames.release(true);
      if (!this.queue.closed) this.queue.put(tts.SynthesizeStream.END_OF_STREAM);
    };

    try {
      await Promise.all([forwardInput(), synthesizeSentences()]);
    } catch (error) {
      if (this.abortSignal.aborted) return;
      throw error instanceof APIError ? error : new APIError(`${this.label} failed: ${(error as Error).message}`, { retryable: false });
    } finally {
      sentences.close();
    }
  }
}
