// Providers of fixed, known latency for the voice benchmarks, plus a VAD the benchmark drives by hand, so
// that what is left of voice-to-voice after subtracting them is the framework's (and our) overhead.
import { stt, tts, VAD, VADStream, VADEventType, type VADEvent, type APIConnectOptions, DEFAULT_API_CONNECT_OPTIONS } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Streaming STT that drains audio and emits a final transcript when told to. */
export class FixedSTT extends stt.STT {
  label = 'fixed.STT';
  streams = new Set<FixedSpeechStream>();
  constructor() {
    super({ streaming: true, interimResults: false });
  }
  async _recognize(): Promise<stt.SpeechEvent> {
    throw new Error('streaming only');
  }
  stream(opts?: { connOptions?: APIConnectOptions }): FixedSpeechStream {
    const s = new FixedSpeechStream(this, opts?.connOptions);
    this.streams.add(s);
    return s;
  }
  /** Emits `text` as a final transcript after `delayMs`. */
  finalAfter(text: string, delayMs: number): void {
    setTimeout(() => {
      for (const s of this.streams) s.emitFinal(text);
    }, delayMs);
  }
}

export class FixedSpeechStream extends stt.SpeechStream {
  label = 'fixed.SpeechStream';
  #stt: FixedSTT;
  constructor(s: FixedSTT, connOptions?: APIConnectOptions) {
    super(s, undefined, connOptions);
    this.#stt = s;
  }
  emitFinal(text: string): void {
    if (this.closed) return;
    const alt = { language: 'en' as never, text, startTime: 0, endTime: 0, confidence: 1 };
    this.queue.put({ type: stt.SpeechEventType.FINAL_TRANSCRIPT, alternatives: [alt] });
  }
  protected async run(): Promise<void> {
    try {
      for await (const _ of this.input) {
        // audio is ignored: transcripts are scripted
      }
    } finally {
      this.#stt.streams.delete(this);
    }
  }
}

/** Non-streaming TTS: the first frame after `ttfbMs`, then `audioMs` of a quiet tone. */
export class FixedTTS extends tts.TTS {
  label = 'fixed.TTS';
  ttfbMs: number;
  audioMs: number;
  constructor(opts: { ttfbMs: number; audioMs?: number }) {
    super(16000, 1, { streaming: false });
    this.ttfbMs = opts.ttfbMs;
    this.audioMs = opts.audioMs ?? 400;
  }
  synthesize(text: string, connOptions: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS, abortSignal?: AbortSignal): tts.ChunkedStream {
    return new FixedChunkedStream(text, this, connOptions, abortSignal);
  }
  stream(): tts.SynthesizeStream {
    throw new Error('not streaming');
  }
}

let req = 0;
class FixedChunkedStream extends tts.ChunkedStream {
  label = 'fixed.ChunkedStream';
  #tts: FixedTTS;
  constructor(text: string, t: FixedTTS, connOptions: APIConnectOptions, abortSignal?: AbortSignal) {
    super(text, t, connOptions, abortSignal);
    this.#tts = t;
  }
  protected async run(): Promise<void> {
    const requestId = `r${++req}`;
    await sleep(this.#tts.ttfbMs);
    const frames = Math.max(1, Math.round(this.#tts.audioMs / 20));
    for (let i = 0; i < frames; i++) {
      const d = new Int16Array(320);
      for (let j = 0; j < 320; j++) d[j] = Math.round(500 * Math.sin((2 * Math.PI * 440 * j) / 16000));
      this.queue.put({ requestId, segmentId: requestId, frame: new AudioFrame(d, 16000, 1, 320), final: i === frames - 1 });
    }
  }
}

/** A VAD whose speech events the benchmark emits. Drains its input so the audio pipeline never stalls. */
export class ScriptedVADStream extends VADStream {
  constructor(vad: VAD) {
    super(vad);
    void this.#drain();
  }
  async #drain(): Promise<void> {
    try {
      while (!this.closed) {
        const { done } = await this.inputReader.read();
        if (done) break;
      }
    } catch {
      /* detached */
    }
  }
  emit(type: VADEventType.START_OF_SPEECH | VADEventType.END_OF_SPEECH, speechMs = 0): void {
    const ev: VADEvent = {
      type, samplesIndex: 0, timestamp: Date.now(), speechDuration: speechMs, silenceDuration: 0, frames: [], probability: 1,
      inferenceDuration: 0, speaking: type === VADEventType.START_OF_SPEECH, rawAccumulatedSilence: 0, rawAccumulatedSpeech: 0,
    };
    this.sendVADEvent(ev);
  }
}

export class ScriptedVAD extends VAD {
  label = 'scripted.VAD';
  streams: ScriptedVADStream[] = [];
  constructor() {
    super({ updateInterval: 32 });
  }
  stream(): ScriptedVADStream {
    const s = new ScriptedVADStream(this);
    this.streams.push(s);
    return s;
  }
  speech(type: VADEventType.START_OF_SPEECH | VADEventType.END_OF_SPEECH, speechMs = 0): void {
    for (const s of this.streams) s.emit(type, speechMs);
  }
}
