// A realtime (speech-to-speech) model for a call: the openai plugin's RealtimeModel (OpenAI Realtime over a
// WebSocket), or for provider gemini the google plugin's (Gemini Live: gemini-live.ts), built from the model record's
// `realtime` settings, under the same key and egress rules as the text LLMs (docs/security.md, "Realtime models"):
//  - the key is llmEndpoint's: a tenant's base_url gets only the org's own key (or a placeholder that is no key),
//    never the platform's; the platform key goes only to the operator's endpoint (api.openai.com or OPENAI_BASE_URL);
//  - the WebSocket URL is checked as the model egress rule checks a base_url (checkModelUrl), and the upgrade's
//    connection resolves its host through the guard's own lookup: the address that was checked is the one connected
//    to (no DNS rebinding between the check and the upgrade), and a redirect of the upgrade is an error (WebSocket's
//    own rule), never followed.
// The plugin connects with `new WebSocket(url, {headers})` (the `ws` package) inside its session; the session here
// replaces that one step (createWsConn) with undici's WebSocket over the guarded dispatcher (guarded-websocket.ts),
// and keeps everything else of the plugin as it is (it reads only readyState, send, close and the on* handlers,
// which both classes share).
import type { llm } from '@livekit/agents';
import * as openai from '@livekit/agents-plugin-openai';
import type { WebSocket } from 'undici';
import type { LlmSettings, ProviderKeys } from '../../../schemas/internal.ts';
import type { RealtimeSettings } from '../../../schemas/models.ts';
import { ProviderConfigError, llmEndpoint, missingKeyError } from '../../../shared/providers.ts';
import { checkModelUrl, modelEgressOptions } from '../../../shared/model-egress.ts';
import type { SsrfOptions } from '../../../shared/ssrf.ts';
import { createGeminiLiveModel } from './gemini-live.ts';
import { guardedWebSocket } from './guarded-websocket.ts';

type Env = Record<string, string | undefined>;

/** A tenant's server that takes no key still gets a string: the plugin refuses an empty key. */
const NO_KEY = 'not-needed';
/** The provider's input transcription: the caller's words for the transcript, the analysis and the knowledge search. */
export const REALTIME_TRANSCRIPTION_MODEL = 'gpt-4o-mini-transcribe';

/** The plugin's turn detection for the record's: the provider's (server or semantic VAD), or none (the platform's). */
export function realtimeTurnDetection(s: RealtimeSettings): openai.realtime.TurnDetectionType | null {
  if (s.turn_detection === 'platform') return null;
  if (s.turn_detection === 'server_vad') {
    return { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: s.silence_duration_ms ?? 500, create_response: true, interrupt_response: true };
  }
  return { type: 'semantic_vad', eagerness: s.eagerness, create_response: true, interrupt_response: true };
}

interface Guard {
  ssrf: SsrfOptions;
  onSession?: ((session: llm.RealtimeSession) => void) | undefined;
}

/** The plugin's session, connecting through the egress guard. */
class GuardedRealtimeSession extends openai.realtime.RealtimeSession {}

/**
 * The plugin's connection step (realtime_model.ts, createWsConn), with the guard: the same URL and headers, the URL
 * checked, and the host resolved by the guard's lookup. Set on the prototype: the plugin calls it from its
 * constructor's task, before an instance could be patched.
 */
Object.defineProperty(GuardedRealtimeSession.prototype, 'createWsConn', {
  value: function createWsConn(this: { _options: { baseURL: string; model: string; apiKey?: string; connOptions: { timeoutMs: number } }; oaiRealtimeModel: GuardedRealtimeModel }): Promise<WebSocket> {
    const o = this._options;
    const url = openai.realtime.processBaseURL({ baseURL: o.baseURL, model: o.model, isAzure: false });
    const ws = guardedWebSocket(url, { headers: { 'User-Agent': 'LiveKit-Agents-JS', Authorization: `Bearer ${o.apiKey}` }, ssrf: this.oaiRealtimeModel.guard.ssrf, timeoutMs: o.connOptions.timeoutMs });
    return new Promise((resolve, reject) => {
      let waiting = true;
      const settle = (err: Error | null) => {
        if (!waiting) return;
        waiting = false;
        if (err) {
          ws.close();
          reject(err);
        } else resolve(ws);
      };
      ws.addEventListener('open', () => settle(null), { once: true });
      ws.addEventListener('error', (ev) => settle(new Error((ev as { message?: string }).message || 'OpenAI Realtime API connection failed')), { once: true });
      // Closed before it opened: refused, or not open within the bound (guardedWebSocket closes it then).
      ws.addEventListener('close', () => settle(new Error('OpenAI Realtime API connection closed')), { once: true });
    });
  },
});

export class GuardedRealtimeModel extends openai.realtime.RealtimeModel {
  readonly guard: Guard;
  constructor(options: ConstructorParameters<typeof openai.realtime.RealtimeModel>[0] & { guard: Guard }) {
    const { guard, ...rest } = options;
    super(rest);
    this.guard = guard;
  }

  override session(): openai.realtime.RealtimeSession {
    const session = new GuardedRealtimeSession(this);
    this.guard.onSession?.(session);
    return session;
  }
}

/** True for a call config whose model is a realtime (speech-to-speech) model. */
export const isRealtime = (config: Pick<LlmSettings, 'realtime'>): config is LlmSettings & { realtime: RealtimeSettings } => !!config.realtime;

/**
 * The call's realtime model. `onSession` sees each session the plugin opens (the call's latency figures listen to its
 * server events: session/realtime-turns.ts).
 */
export function createRealtimeModel(
  config: LlmSettings & { realtime: RealtimeSettings },
  keys: ProviderKeys,
  env: Env = process.env,
  onSession?: (session: llm.RealtimeSession) => void,
): llm.RealtimeModel {
  if (config.provider === 'gemini') return createGeminiLiveModel(config, keys, env, onSession);
  if (config.provider !== 'openai') throw new ProviderConfigError(`realtime models are served for providers openai and gemini, not ${config.provider}`, 'unknown_provider');
  const endpoint = llmEndpoint('openai', config.base_url, keys, env);
  if (!endpoint.tenant && !endpoint.apiKey) throw missingKeyError('openai');
  checkModelUrl(endpoint, env);
  const s = config.realtime;
  return new GuardedRealtimeModel({
    baseURL: endpoint.baseUrl,
    apiKey: endpoint.apiKey ?? NO_KEY,
    model: config.model,
    voice: s.voice,
    turnDetection: realtimeTurnDetection(s),
    inputAudioTranscription: { model: REALTIME_TRANSCRIPTION_MODEL },
    // One connection attempt and a short back-off: a call cannot wait through the plugin's default retries.
    connOptions: { maxRetry: 1, retryIntervalMs: 500, timeoutMs: 10_000 },
    guard: { ssrf: modelEgressOptions(endpoint, env), onSession },
  });
}
