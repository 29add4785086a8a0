// Cartesia text to speech over its HTTP bytes endpoint (POST /tts/bytes, raw pcm_s16le), read as it
// streams in. `stream()` speaks sentence by sentence. Written against the HTTP API directly because the
// agents cartesia plugin pins an older agents version.
import {
  type APIConnectOptions,
  APIConnectionError,
  APIStatusError,
  APITimeoutError,
  tokenize,
  tts,
} from '@livekit/agents';
import { type PcmEngine, PcmChunkedStream, SentenceSynthesizeStream } from './pcm-streams.ts';
import { FirstClauseTokenizer } from './first-clause.ts';
import { PcmFramer } from './pcm-framer.ts';

export const CARTESIA_API_VERSION = '2025-04-16';

export interface CartesiaTTSOptions {
  apiKey?: string;
  baseURL: string;
  model: string;
  /** A voice id. */
  voice: string;
  /** ISO 639-1, e.g. 'en'. */
  language: string;
  sampleRate: number;
  /** Speaking rate, 1 = normal. sonic-3: generation_config.speed (0.6-1.5); older models: experimental controls. */
  speed?: number;
  /**
   * sonic-3: one emotion name ('content', 'excited', ...) as generation_config.emotion (the first entry);
   * older models: experimental emotion controls such as 'positivity:high'.
   */
  emotion?: string[];
  sentenceTokenizer: tokenize.SentenceTokenizer;
}

const defaultOptions: CartesiaTTSOptions = {
  apiKey: process.env.CARTESIA_API_KEY,
  baseURL: 'https://api.cartesia.ai',
  model: 'sonic-3',
  voice: '794f9389-aac1-45b6-b726-9d9369183238',
  language: 'en',
  sampleRate: 24000,
  // Cartesia's bytes API takes whole texts, like OpenAI's: the reply goes first clause first.
  sentenceTokenizer: new FirstClauseTokenizer(),
};

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

/** The JSON body of a bytes request. */
export function cartesiaRequest(opts: CartesiaTTSOptions, transcript: string): Record<string, unknown> {
  const voice: Record<string, unknown> = { mode: 'id', id: opts.voice };
  const body: Record<string, unknown> = {
    model_id: opts.model,
    transcript,
    voice,
    output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: opts.sampleRate },
    language: opts.language,
  };
  const speed = opts.speed !== undefined && opts.speed !== 1 ? opts.speed : undefined;
  const emotion = opts.emotion?.length ? opts.emotion : undefined;
  if (opts.model.startsWith('sonic-3')) {
    const config: Record<string, unknown> = {};
    if (speed !== undefined) config.speed = clamp(speed, 0.6, 1.5);
    if (emotion) config.emotion = emotion[0];
    if (Object.keys(config).length) body.generation_config = config;
  } else if (speed !== undefined || emotion) {
    // Older models: speed is -1 (slowest) .. 0 (normal) .. 1 (fastest).
    voice.__experimental_controls = {
      ...(speed !== undefined ? { speed: clamp(speed - 1, -1, 1) } : {}),
      ...(emotion ? { emotion } : {}),
    };
  }
  return body;
}

export class CartesiaTTS extends tts.TTS {
  #opts: CartesiaTTSOptions;
  #engine: PcmEngine;
  label = 'cartesia.TTS';

  constructor(opts: Partial<CartesiaTTSOptions> = {}) {
    const merged = { ...defaultOptions, ...opts };
    super(merged.sampleRate, 1, { streaming: true });
    this.#opts = merged;
    if (!this.#opts.apiKey) {
      throw new Error('Cartesia API key is required, whether as an argument or as $CARTESIA_API_KEY');
    }
    this.#engine = {
      synthesizeText: (text, signal, timeoutMs, onPcm) => this.#fetchPcm(text, signal, timeoutMs, onPcm),
      frameStream: () => new PcmFramer(this.sampleRate, 1, Math.round(this.sampleRate / 50)),
    };
  }

  override get model(): string {
    return this.#opts.model;
  }

  override get provider(): string {
    return 'cartesia';
  }

  updateOptions(opts: Partial<Pick<CartesiaTTSOptions, 'model' | 'voice' | 'language' | 'speed' | 'emotion'>>): void {
    this.#opts = { ...this.#opts, ...opts };
  }

  synthesize(text: string, connOptions?: APIConnectOptions, abortSignal?: AbortSignal): PcmChunkedStream {
    return new PcmChunkedStream(this, this.#engine, text, connOptions, abortSignal);
  }

  stream(options?: { connOptions?: APIConnectOptions }): SentenceSynthesizeStream {
    return new SentenceSynthesizeStream(this, this.#engine, this.#opts.sentenceTokenizer, options?.connOptions);
  }

  async #fetchPcm(text: string, signal: AbortSignal, timeoutMs: number, onPcm: (pcm: Buffer) => void): Promise<void> {
    const transcript = text.trim();
    if (!transcript) return;
    // The timeout covers the wait for the response headers; the body then streams at its own pace.
    const timeout = AbortSignal.timeout(timeoutMs);
    const headersSignal = AbortSignal.any([signal, timeout]);
    let res: Response;
    try {
      res = await fetch(`${this.#opts.baseURL.replace(/\/$/, '')}/tts/bytes`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'X-API-Key': this.#opts.apiKey!,
          'Cartesia-Version': CARTESIA_API_VERSION,
        },
        body: JSON.stringify(cartesiaRequest(this.#opts, transcript)),
        signal: headersSignal,
      });
    } catch (error) {
      if (signal.aborted) return;
      if (timeout.aborted) throw new APITimeoutError({ message: `Cartesia did not answer within ${timeoutMs} ms` });
      throw new APIConnectionError({ message: `Cartesia request failed: ${(error as Error).message}` });
    }
    if (!res.ok) {
      const raw = await res.text().catch(() => '');
      let body: object | null = null;
      try {
        body = JSON.parse(raw) as object;
      } catch {
        body = raw ? { message: raw } : null;
      }
      throw new APIStatusError({
        message: `Cartesia returned ${res.status}`,
        options: { statusCode: res.status, body, requestId: res.headers.get('x-request-id') },
      });
    }
    if (!res.body) return;
    // PCM may split between chunks on an odd byte: carry it over.
    let carry: Buffer | undefined;
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const onAbort = () => void reader.cancel().catch(() => {});
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        let bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
        if (carry) {
          bytes = Buffer.concat([carry, bytes]);
          carry = undefined;
        }
        if (bytes.length % 2) {
          carry = Buffer.from(bytes.subarray(bytes.length - 1));
          bytes = bytes.subarray(0, bytes.length - 1);
        }
        if (bytes.length) onPcm(bytes);
      }
    } catch (error) {
      if (signal.aborted) return;
      throw new APIConnectionError({ message: `Cartesia audio stream broke: ${(error as Error).message}`, options: { retryable: false } });
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}
