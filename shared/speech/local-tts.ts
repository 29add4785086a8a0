// Text to speech with no network: espeak-ng (streams as it synthesizes, first audio in milliseconds)
// or festival with the HTS voice `us-slt-hts` (sounds far better, synthesizes a sentence at a time).
// Festival spends ~0.36 s loading the voice, so a spare process is kept loaded and waiting for text.
import { type APIConnectOptions, tokenize, tts } from '@livekit/agents';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { type PcmEngine, PcmChunkedStream, SentenceSynthesizeStream } from './pcm-streams.ts';
import { runSynthesizer } from './speech-process.ts';
import { PcmFramer } from './pcm-framer.ts';

export type LocalTTSModel = 'espeak-ng' | 'festival';

export interface LocalTTSOptions {
  model: LocalTTSModel;
  /** espeak-ng: a voice such as 'en-us', 'en-gb', 'en-us+klatt'. festival: 'us-slt-hts'. */
  voice: string;
  /** Speaking rate, 1 = normal. espeak-ng: words per minute; festival: the HTS speech rate. */
  speed: number;
  /** Length of the audio frames handed to the session. */
  frameMs: number;
  /** Splits streamed text into sentences, each synthesized as it completes. */
  sentenceTokenizer: tokenize.SentenceTokenizer;
  espeakPath: string;
  festivalPath: string;
}

const ESPEAK_SAMPLE_RATE = 22050;
const ESPEAK_WPM = 175;

interface FestivalVoice {
  /** Festival voice function name, without the `voice_` prefix. */
  name: string;
  sampleRate: number;
}

/** Voices of the Debian festvox packages that setup installs. */
export const FESTIVAL_VOICES: Record<string, FestivalVoice> = {
  'us-slt-hts': { name: 'cmu_us_slt_arctic_hts', sampleRate: 32000 },
};

export const DEFAULT_VOICES: Record<LocalTTSModel, string> = { 'espeak-ng': 'en-us', festival: 'us-slt-hts' };

const ESPEAK_VOICE = /^[a-zA-Z0-9_-]+(\+[a-zA-Z0-9_-]+)?$/;

function defaultOptions(model: LocalTTSModel): LocalTTSOptions {
  return {
    model,
    voice: DEFAULT_VOICES[model],
    speed: 1,
    frameMs: 20,
    sentenceTokenizer: new tokenize.basic.SentenceTokenizer({ minSentenceLength: 20 }),
    espeakPath: 'espeak-ng',
    festivalPath: 'festival',
  };
}

function sampleRateOf(opts: LocalTTSOptions): number {
  if (opts.model === 'espeak-ng') return ESPEAK_SAMPLE_RATE;
  return FESTIVAL_VOICES[opts.voice]!.sampleRate;
}

/** A voice (or model) the local TTS does not have: a call's `voice_unavailable`. */
export class UnknownVoiceError extends Error {
  override name = 'UnknownVoiceError';
}

function validate(opts: LocalTTSOptions): void {
  if (opts.model === 'espeak-ng') {
    if (!ESPEAK_VOICE.test(opts.voice)) throw new UnknownVoiceError(`invalid espeak-ng voice: ${opts.voice}`);
  } else if (opts.model === 'festival') {
    if (!FESTIVAL_VOICES[opts.voice]) {
      throw new UnknownVoiceError(`unknown festival voice: ${opts.voice} (known: ${Object.keys(FESTIVAL_VOICES).join(', ')})`);
    }
  } else {
    throw new UnknownVoiceError(`unknown local TTS model: ${String(opts.model)}`);
  }
  if (!(opts.speed > 0)) throw new Error('speed must be positive');
}

/** Escapes text for a Scheme string literal. */
function schemeString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

export class LocalTTS extends tts.TTS {
  #opts: LocalTTSOptions;
  #festival?: FestivalPool;
  #running = new Set<ChildProcessWithoutNullStreams>();
  #engine: PcmEngine = {
    synthesizeText: (text, signal, timeoutMs, onPcm) => this.#synthesizeText(text, signal, timeoutMs, onPcm),
    frameStream: () => new PcmFramer(this.sampleRate, 1, Math.round((this.sampleRate * this.#opts.frameMs) / 1000)),
  };
  label = 'local.TTS';

  constructor(opts: Partial<LocalTTSOptions> = {}) {
    const merged = { ...defaultOptions(opts.model ?? 'espeak-ng'), ...opts };
    if (opts.voice === undefined || opts.voice === null) merged.voice = DEFAULT_VOICES[merged.model];
    validate(merged);
    super(sampleRateOf(merged), 1, { streaming: true });
    this.#opts = merged;
  }

  override get model(): string {
    return this.#opts.model;
  }

  override get provider(): string {
    return 'local';
  }

  get voice(): string {
    return this.#opts.voice;
  }

  /** Voice and speed changes apply to the next sentence. The model (and so the sample rate) is fixed. */
  updateOptions(opts: { voice?: string; speed?: number }): void {
    const next = { ...this.#opts, ...opts };
    validate(next);
    if (sampleRateOf(next) !== this.sampleRate) throw new Error('the new voice has another sample rate');
    this.#opts = next;
    this.#festival?.close();
    this.#festival = undefined;
  }

  /** Loads festival's voice ahead of the first sentence (no-op for espeak-ng). */
  prewarm(): void {
    if (this.#opts.model === 'festival') this.#pool().prewarm();
  }

  synthesize(text: string, connOptions?: APIConnectOptions, abortSignal?: AbortSignal): PcmChunkedStream {
    return new PcmChunkedStream(this, this.#engine, text, connOptions, abortSignal);
  }

  stream(options?: { connOptions?: APIConnectOptions }): SentenceSynthesizeStream {
    return new SentenceSynthesizeStream(this, this.#engine, this.#opts.sentenceTokenizer, options?.connOptions);
  }

  /** Stops the spare festival process and any synthesis still running. */
  override async close(): Promise<void> {
    this.#festival?.close();
    this.#festival = undefined;
    for (const child of this.#running) child.kill('SIGKILL');
  }

  /** @internal Process ids of the synthesizers now running (tests check that aborts kill them). */
  get _runningPids(): number[] {
    return [...this.#running].map((c) => c.pid).filter((pid): pid is number => pid !== undefined);
  }

  /** Synthesizes one piece of text, handing PCM to `onPcm` as the engine writes it. */
  async #synthesizeText(
    text: string,
    signal: AbortSignal,
    timeoutMs: number,
    onPcm: (pcm: Buffer) => void,
  ): Promise<void> {
    const spoken = text.replace(/\s+/g, ' ').trim();
    if (!spoken) return;
    const opts = this.#opts;
    let child: ChildProcessWithoutNullStreams;
    if (opts.model === 'espeak-ng') {
      const wpm = Math.min(450, Math.max(80, Math.round(ESPEAK_WPM * opts.speed)));
      child = spawn(opts.espeakPath, ['--stdout', '-v', opts.voice, '-s', String(wpm)]);
      // On stdin, so text that starts with '-' is never read as an option.
      child.stdin.end(spoken);
    } else {
      child = this.#pool().take();
      child.stdin.end(`(utt.save.wave (SynthText ${schemeString(spoken)}) "-" 'riff)\n`);
    }
    this.#running.add(child);
    child.once('close', () => this.#running.delete(child));
    child.once('error', () => this.#running.delete(child));
    await runSynthesizer(
      child,
      {
        engine: opts.model,
        signal,
        timeoutMs,
        expectedSampleRate: this.sampleRate,
        requireAudio: /[\p{L}\p{N}]/u.test(spoken),
      },
      onPcm,
    );
  }

  #pool(): FestivalPool {
    if (!this.#festival) {
      const voice = FESTIVAL_VOICES[this.#opts.voice]!;
      let setup = `(voice_${voice.name})\n`;
      // HTS voices take their speaking rate from hts_engine's -r parameter (Duration_Stretch has no effect).
      if (this.#opts.speed !== 1) setup += `(set! hts_engine_params (append hts_engine_params '(("-r" ${this.#opts.speed}))))\n`;
      this.#festival = new FestivalPool(this.#opts.festivalPath, setup);
    }
    return this.#festival;
  }
}

/**
 * One festival process per utterance (its exit marks the end of the audio), taken from a spare that has
 * already loaded the voice. The next spare starts when the taken process exits, so its voice loading
 * never competes with a synthesis for the CPU; a sentence taken before then starts a process of its own.
 */
class FestivalPool {
  #path: string;
  #setup: string;
  #spare?: ChildProcessWithoutNullStreams;
  #closed = false;

  constructor(path: string, setup: string) {
    this.#path = path;
    this.#setup = setup;
  }

  prewarm(): void {
    if (!this.#closed && !this.#alive(this.#spare)) this.#spare = this.#spawn();
  }

  take(): ChildProcessWithoutNullStreams {
    const child = this.#alive(this.#spare) ? this.#spare! : this.#spawn();
    this.#spare = undefined;
    child.once('close', () => this.prewarm());
    return child;
  }

  close(): void {
    this.#closed = true;
    const spare = this.#spare;
    this.#spare = undefined;
    if (!spare) return;
    spare.kill('SIGKILL');
    // Nothing reads an unused spare's output: release its pipes, or they keep the event loop alive.
    spare.stdout.destroy();
    spare.stderr.destroy();
    spare.stdin.destroy();
  }

  #alive(child?: ChildProcessWithoutNullStreams): boolean {
    return !!child && child.exitCode === null && child.signalCode === null && !child.killed;
  }

  #spawn(): ChildProcessWithoutNullStreams {
    // stdbuf: festival writes through stdio, so without it the tail of the audio waits for exit.
    const child = spawn('stdbuf', ['-o0', this.#path, '--pipe']);
    child.on('error', () => {}); // reported by runSynthesizer once the process is used
    child.stdin.on('error', () => {});
    child.stdin.write(this.#setup);
    return child;
  }
}
