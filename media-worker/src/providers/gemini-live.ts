// Gemini Live as a call's realtime (speech-to-speech) model: the google plugin's RealtimeModel, built from the
// model record's `realtime` settings, under the same key and egress rules as OpenAI Realtime (realtime.ts;
// docs/security.md, "Realtime models"):
//  - the endpoint is llmEndpoint's: Google's API or the operator's GEMINI_BASE_URL, with the org's key, else the
//    platform's; a Gemini model takes no tenant base_url (llmEndpoint refuses one), so no tenant URL is reached;
//  - the URL is checked by the model egress rule before the model is built (checkModelUrl), and the upgrade runs
//    through the guard (guarded-websocket.ts).
// The plugin connects through @google/genai's `live.connect`, whose Node WebSocket (the `ws` package) is made by a
// factory the SDK's `Live` object holds, given only a URL and headers. The narrowest hook found: `Live.prototype.
// connect` is wrapped once, and a connection made within a guarded session's async scope (AsyncLocalStorage, entered
// when the worker's model opens the session, whose connection loop then runs in it) first gets a factory whose
// socket is undici's WebSocket over the guard's dispatcher. Every other GoogleGenAI client in the process connects
// as before.
import { AsyncLocalStorage } from 'node:async_hooks';
import { Live } from '@google/genai';
import type { llm } from '@livekit/agents';
import * as google from '@livekit/agents-plugin-google';
import type { LlmSettings, ProviderKeys } from '../../../schemas/internal.ts';
import type { RealtimeSettings } from '../../../schemas/models.ts';
import { llmEndpoint, missingKeyError } from '../../../shared/providers.ts';
import { checkModelUrl, modelEgressOptions } from '../../../shared/model-egress.ts';
import type { SsrfOptions } from '../../../shared/ssrf.ts';
import { guardedWebSocket } from './guarded-websocket.ts';

type Env = Record<string, string | undefined>;
type RealtimeInputConfig = NonNullable<ConstructorParameters<typeof google.realtime.RealtimeModel>[0]>['realtimeInputConfig'];

export interface LiveGuard {
  ssrf: SsrfOptions;
  timeoutMs: number;
  onSession?: ((session: llm.RealtimeSession) => void) | undefined;
}

/** The plugin's activity detection for the record's turn detection: Gemini's own (with the silence), or off (the platform's). */
export function geminiActivityDetection(s: RealtimeSettings): RealtimeInputConfig {
  if (s.turn_detection === 'platform') return { automaticActivityDetection: { disabled: true } };
  return { automaticActivityDetection: { disabled: false, ...(s.silence_duration_ms ? { silenceDurationMs: s.silence_duration_ms } : {}) } };
}

/** The SDK's base URL and API version from the endpoint's: GEMINI_BASE_URL names the version the SDK adds itself. */
export function liveBase(baseUrl: string): { baseUrl: string; apiVersion?: string } {
  const m = /^(.*?)\/(v1(?:alpha|beta)?)$/.exec(baseUrl);
  return m ? { baseUrl: m[1]!, apiVersion: m[2]! } : { baseUrl };
}

// ---- The hook on @google/genai's Live --------------------------------------------------------------------------

interface LiveCallbacks {
  onopen?: () => void;
  onmessage: (e: unknown) => void;
  onerror: (e: unknown) => void;
  onclose: (e: unknown) => void;
}

/** The SDK's WebSocket interface (connect, send, close), over the guarded socket. */
class GuardedLiveSocket {
  #ws: ReturnType<typeof guardedWebSocket> | undefined;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly callbacks: LiveCallbacks;
  readonly guard: LiveGuard;
  constructor(url: string, headers: Record<string, string>, callbacks: LiveCallbacks, guard: LiveGuard) {
    this.url = url;
    this.headers = headers;
    this.callbacks = callbacks;
    this.guard = guard;
  }

  connect(): void {
    const ws = guardedWebSocket(this.url, { headers: this.headers, ssrf: this.guard.ssrf, timeoutMs: this.guard.timeoutMs });
    // The API sends JSON in binary frames: as ArrayBuffers the SDK decodes them at once, in order.
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => this.callbacks.onopen?.();
    ws.onmessage = (e) => this.callbacks.onmessage(e);
    ws.onerror = (e) => this.callbacks.onerror(e);
    ws.onclose = (e) => this.callbacks.onclose(e);
    this.#ws = ws;
  }

  send(message: string): void {
    if (!this.#ws) throw new Error('WebSocket is not connected');
    this.#ws.send(message);
  }

  /**
   * A normal closure, said as such: the SDK closes with no code, and a close echoed with none reaches the plugin
   * as 1005, which it reports as a failed session (on each of its own reconnects).
   */
  close(): void {
    if (!this.#ws) throw new Error('WebSocket is not connected');
    this.#ws.close(1000);
  }
}

const scope = new AsyncLocalStorage<LiveGuard>();
let hooked = false;

/** Wraps Live.prototype.connect once (see the top of this file). */
function hookLiveConnect(): void {
  if (hooked) return;
  hooked = true;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with its Live below
  const connect = Live.prototype.connect;
  Live.prototype.connect = function guardedConnect(this: Live, params) {
    const guard = scope.getStore();
    if (guard) {
      (this as unknown as { webSocketFactory: { create(url: string, headers: Record<string, string>, callbacks: LiveCallbacks): GuardedLiveSocket } }).webSocketFactory = {
        create: (url, headers, callbacks) => new GuardedLiveSocket(url, headers, callbacks, guard),
      };
    }
    return connect.call(this, params);
  };
}

/** The plugin's model whose sessions connect through the guard. */
export class GuardedGeminiLiveModel extends google.realtime.RealtimeModel {
  readonly guard: LiveGuard;
  constructor(options: ConstructorParameters<typeof google.realtime.RealtimeModel>[0] & { guard: LiveGuard }) {
    const { guard, ...rest } = options;
    super(rest);
    this.guard = guard;
    hookLiveConnect();
  }

  override session() {
    // The session's connection loop starts in its constructor: it runs, reconnects included, within the guard's scope.
    const session = scope.run(this.guard, () => super.session());
    this.guard.onSession?.(session);
    return session;
  }
}

/** The call's Gemini Live model (realtime.ts, createRealtimeModel, for provider gemini). */
export function createGeminiLiveModel(
  config: LlmSettings & { realtime: RealtimeSettings },
  keys: ProviderKeys,
  env: Env = process.env,
  onSession?: (session: llm.RealtimeSession) => void,
): llm.RealtimeModel {
  // A base_url is refused here (a Gemini model takes none): only the operator's endpoint is reached.
  const endpoint = llmEndpoint('gemini', config.base_url, keys, env);
  if (!endpoint.apiKey) throw missingKeyError('gemini');
  checkModelUrl(endpoint, env);
  const s = config.realtime;
  const { baseUrl, apiVersion } = liveBase(endpoint.baseUrl);
  const timeoutMs = 10_000;
  return new GuardedGeminiLiveModel({
    apiKey: endpoint.apiKey,
    vertexai: false,
    model: config.model,
    voice: s.voice,
    realtimeInputConfig: geminiActivityDetection(s),
    // The caller's words and the model's, for the transcript, the analysis and the knowledge search.
    inputAudioTranscription: {},
    outputAudioTranscription: {},
    httpOptions: { baseUrl },
    ...(apiVersion ? { apiVersion } : {}),
    // One connection attempt and a short back-off: a call cannot wait through the plugin's default retries.
    connOptions: { maxRetry: 1, retryIntervalMs: 500, timeoutMs },
    guard: { ssrf: modelEgressOptions(endpoint, env), timeoutMs, onSession },
  });
}
