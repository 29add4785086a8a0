// Speech to text with no network: Debian's pocketsphinx (US English model), streamed through a small
// helper (pocketsphinx-stream.py, on python3-pocketsphinx) because the `pocketsphinx_continuous` CLI only
// prints whole utterances. The helper reports speech start, partial hypotheses, finals with word times
// and speech end, from pocketsphinx's own voice activity detection.
import {
  type APIConnectOptions,
  APIConnectionError,
  APIError,
  type AudioBuffer,
  DEFAULT_API_CONNECT_OPTIONS,
  createTimedString,
  mergeFrames,
  shortuuid,
  stt,
} from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

export interface LocalSTTOptions {
  /** Only English: Debian ships the `en-us` model. */
  language: string;
  /** A JSGF grammar (the text of a `.gram` file): recognition is limited to its sentences. */
  grammar?: string;
  /** Keyword spotting instead of free dictation: [phrase, threshold] pairs, e.g. ['book a table', 1e-20]. */
  keyphrases?: [string, number][];
  /** Silence that ends an utterance (pocketsphinx's VAD), in ms. */
  endSilenceMs: number;
  /** How often an interim transcript may be reported while speech goes on, in ms. */
  interimIntervalMs: number;
  pythonPath: string;
}

const SAMPLE_RATE = 16000;
/** The helper started ahead (LocalSTT.prewarm), with the command line it was started with. */
let spare: { key: string; child: ChildProcessWithoutNullStreams } | null = null;
const HELPER = fileURLToPath(new URL('./pocketsphinx-stream.py', import.meta.url));

const defaultOptions: LocalSTTOptions = {
  language: 'en-US',
  endSilenceMs: 400,
  interimIntervalMs: 200,
  // Debian's interpreter, where python3-pocketsphinx is installed (not a virtualenv's python3).
  pythonPath: '/usr/bin/python3',
};

type HelperEvent =
  | { type: 'ready' }
  | { type: 'start'; t: number }
  | { type: 'partial'; text: string }
  | { type: 'final'; text: string; start: number; end: number; confidence: number; words: [string, number, number, number][] }
  | { type: 'end'; t: number };

export class LocalSTT extends stt.STT {
  #opts: LocalSTTOptions;
  label = 'local.STT';

  constructor(opts: Partial<LocalSTTOptions> = {}) {
    super({ streaming: true, interimResults: true, alignedTranscript: 'word' });
    this.#opts = { ...defaultOptions, ...opts };
    if (!/^en\b/i.test(this.#opts.language)) {
      throw new Error(`local STT supports English only (got ${this.#opts.language})`);
    }
  }

  override get model(): string {
    return 'pocketsphinx-en-us';
  }

  override get provider(): string {
    return 'local';
  }

  updateOptions(opts: Partial<Pick<LocalSTTOptions, 'grammar' | 'keyphrases' | 'endSilenceMs' | 'interimIntervalMs'>>): void {
    this.#opts = { ...this.#opts, ...opts };
  }

  /** The helper's command line: a spare started with the same one can serve this STT. */
  #helperArgs(): string[] {
    const o = this.#opts;
    const config = {
      grammar: o.grammar,
      keyphrases: o.keyphrases,
      vadPostspeech: Math.max(1, Math.round(o.endSilenceMs / 10)),
      partialIntervalMs: o.interimIntervalMs,
    };
    return [o.pythonPath, HELPER, JSON.stringify(config)];
  }

  /**
   * Starts a helper now, to be taken by the next stream of an STT with the same options: loading pocketsphinx's
   * model takes ~0.3 s of CPU, which a job process pays in its prewarm instead of at its call's start, beside
   * the greeting. One spare per process (a job process serves one call).
   */
  static prewarm(opts: Partial<LocalSTTOptions> = {}): ChildProcessWithoutNullStreams {
    const args = new LocalSTT(opts).#helperArgs();
    spare?.child.kill('SIGKILL');
    const child = spawn(args[0]!, args.slice(1));
    // Its 'ready' line and any early error wait in the pipes for the stream that takes it.
    child.on('error', () => {});
    spare = { key: args.join('\0'), child };
    return child;
  }

  /** @internal */
  _spawnHelper(): ChildProcessWithoutNullStreams {
    const args = this.#helperArgs();
    const taken = spare;
    spare = null;
    if (taken && taken.key === args.join('\0') && taken.child.exitCode === null && taken.child.signalCode === null) return taken.child;
    taken?.child.kill('SIGKILL');
    return spawn(args[0]!, args.slice(1));
  }

  protected async _recognize(buffer: AudioBuffer, abortSignal?: AbortSignal): Promise<stt.SpeechEvent> {
    const stream = this.stream();
    const onAbort = () => stream.close();
    abortSignal?.addEventListener('abort', onAbort, { once: true });
    const frame = mergeFrames(buffer);
    stream.pushFrame(frame);
    stream.endInput();
    const texts: string[] = [];
    let first: stt.SpeechData | undefined;
    try {
      for await (const ev of stream) {
        if (ev.type === stt.SpeechEventType.FINAL_TRANSCRIPT && ev.alternatives) {
          first ??= ev.alternatives[0];
          texts.push(ev.alternatives[0].text);
        }
      }
    } finally {
      abortSignal?.removeEventListener('abort', onAbort);
    }
    const duration = frame.samplesPerChannel / frame.sampleRate;
    return {
      type: stt.SpeechEventType.FINAL_TRANSCRIPT,
      alternatives: [
        {
          language: this.#opts.language as stt.SpeechData['language'],
          text: texts.join(' '),
          startTime: first?.startTime ?? 0,
          endTime: duration,
          confidence: first?.confidence ?? 0,
        },
      ],
    };
  }

  stream(options?: { connOptions?: APIConnectOptions }): LocalSpeechStream {
    return new LocalSpeechStream(this, this.#opts.language, options?.connOptions);
  }
}

/** The helper's stdin framing: a type byte, a little-endian uint32 length, the payload. */
function message(kind: 'A' | 'F', payload?: Uint8Array): Buffer {
  const header = Buffer.alloc(5);
  header.write(kind, 0, 'latin1');
  header.writeUInt32LE(payload?.byteLength ?? 0, 1);
  return payload ? Buffer.concat([header, payload]) : header;
}

/** Averages the channels: the base class's resampler is built for mono. */
function toMono(frame: AudioFrame): AudioFrame {
  if (frame.channels === 1) return frame;
  const mono = new Int16Array(frame.samplesPerChannel);
  for (let i = 0; i < frame.samplesPerChannel; i++) {
    let sum = 0;
    for (let c = 0; c < frame.channels; c++) sum += frame.data[i * frame.channels + c]!;
    mono[i] = Math.round(sum / frame.channels);
  }
  return new AudioFrame(mono, frame.sampleRate, 1, frame.samplesPerChannel);
}

export class LocalSpeechStream extends stt.SpeechStream {
  label = 'local.SpeechStream';
  #stt: LocalSTT;
  #language: string;

  constructor(stt: LocalSTT, language: string, connOptions: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) {
    super(stt, SAMPLE_RATE, connOptions);
    this.#stt = stt;
    this.#language = language;
  }

  override pushFrame(frame: AudioFrame): void {
    super.pushFrame(toMono(frame));
  }

  /** Also hands over the audio the resampler still holds (about 50 ms), which would otherwise be lost. */
  override endInput(): void {
    if (this.resampler && !this.input.closed && !this.closed) {
      for (const frame of this.resampler.flush()) this.input.put(frame);
    }
    super.endInput();
  }

  protected async run(): Promise<void> {
    const child = this.#stt._spawnHelper();
    const requestId = shortuuid('local_stt_');
    let stderr = '';
    let ready = false;
    let samplesSinceUsage = 0;
    let lastFinal = '';
    const offset = () => this.startTimeOffset;

    const put = (ev: stt.SpeechEvent) => {
      if (!this.queue.closed) this.queue.put(ev);
    };
    const data = (text: string, start: number, end: number, confidence: number, words?: [string, number, number, number][]) => ({
      language: this.#language as stt.SpeechData['language'],
      text,
      startTime: offset() + start,
      endTime: offset() + end,
      confidence,
      words: words?.map(([word, s, e, c]) =>
        createTimedString({ text: word, startTime: offset() + s, endTime: offset() + e, confidence: c }),
      ),
    });
    const reportUsage = () => {
      if (samplesSinceUsage === 0) return;
      put({ type: stt.SpeechEventType.RECOGNITION_USAGE, requestId, recognitionUsage: { audioDuration: samplesSinceUsage / SAMPLE_RATE } });
      samplesSinceUsage = 0;
    };

    const onAbort = () => child.kill('SIGKILL');
    this.abortSignal.addEventListener('abort', onAbort, { once: true });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 8192) stderr += chunk.toString('utf8');
    });
    child.stdin.on('error', () => {});

    const exited = new Promise<{ code: number | null; error?: NodeJS.ErrnoException }>((resolve) => {
      child.on('error', (error) => resolve({ code: null, error }));
      child.on('close', (code) => resolve({ code }));
    });

    const readOutput = async () => {
      for await (const line of createInterface({ input: child.stdout })) {
        let ev: HelperEvent;
        try {
          ev = JSON.parse(line) as HelperEvent;
        } catch {
          continue;
        }
        switch (ev.type) {
          case 'ready':
            ready = true;
            break;
          case 'start':
            lastFinal = '';
            put({ type: stt.SpeechEventType.START_OF_SPEECH, requestId });
            break;
          case 'partial':
            put({ type: stt.SpeechEventType.INTERIM_TRANSCRIPT, requestId, alternatives: [data(ev.text, 0, 0, 0)] });
            break;
          case 'final':
            lastFinal = ev.text;
            put({
              type: stt.SpeechEventType.FINAL_TRANSCRIPT,
              requestId,
              alternatives: [data(ev.text, ev.start, ev.end, ev.confidence, ev.words)],
            });
            break;
          case 'end':
            put({
              type: stt.SpeechEventType.END_OF_SPEECH,
              requestId,
              speechEndTime: Date.now(),
              alternatives: [data(lastFinal, ev.t, ev.t, 0)],
            });
            reportUsage();
            break;
        }
      }
    };

    const write = (buf: Buffer) =>
      child.stdin.write(buf) ? Promise.resolve() : new Promise<void>((resolve) => child.stdin.once('drain', resolve));

    const writeInput = async () => {
      for await (const item of this.input) {
        if (this.abortSignal.aborted || child.exitCode !== null) break;
        if (item === LocalSpeechStream.FLUSH_SENTINEL) {
          await write(message('F'));
          continue;
        }
        if (item.samplesPerChannel === 0) continue;
        samplesSinceUsage += item.samplesPerChannel;
        await write(message('A', new Uint8Array(item.data.buffer, item.data.byteOffset, item.data.byteLength)));
      }
      child.stdin.end();
    };

    try {
      const [, , result] = await Promise.all([readOutput(), writeInput(), exited]);
      if (this.abortSignal.aborted) return;
      if (result.error) {
        const missing = result.error.code === 'ENOENT';
        throw new APIConnectionError({
          message: missing ? `${this.#stt.label}: python3 not found (run scripts/setup.sh)` : result.error.message,
          options: { retryable: !missing },
        });
      }
      if (result.code !== 0) {
        // Failing before `ready` is a set-up problem (missing package, bad grammar): retrying will not help.
        throw new APIError(`pocketsphinx helper exited with code ${result.code}`, {
          body: { stderr: stderr.trim().split('\n').slice(-5).join('\n') },
          retryable: ready,
        });
      }
      reportUsage();
    } finally {
      this.abortSignal.removeEventListener('abort', onAbort);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }
}

