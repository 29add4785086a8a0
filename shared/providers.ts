// The provider layer shared by the media workers and the control plane: which key a provider call uses (the
// org's, else the platform's environment key), each provider's default API base URL and its override
// variable, and a one-shot (non-streaming) completion over each provider's own wire protocol: OpenAI chat
// completions (and compatible servers), Anthropic Messages, Gemini generateContent. The worker streams through
// the agents plugins; the control plane uses `complete` for post-call analysis. The HTTP call itself is
// injected, so each side sends it through its own SSRF-guarded client. `llmEndpoint` is the one rule on which
// key may go to which URL; shared/model-egress.ts the one rule on which addresses a model URL may reach.

/**
 * The org's decrypted provider keys. Owned here (shared/ imports no schema); schemas/internal.ts asserts
 * that its ProviderKeys schema has exactly this type.
 */
export interface ProviderKeys {
  openai?: string;
  anthropic?: string;
  gemini?: string;
  deepgram?: string;
  elevenlabs?: string;
  cartesia?: string;
}

type Env = Record<string, string | undefined>;

/** Codes of shared/agent-problems.ts that a provider's configuration can fail with. */
export type ProviderConfigCode = 'provider_key_missing' | 'local_model_missing' | 'unknown_provider' | 'invalid_configuration';

export class ProviderConfigError extends Error {
  readonly code: ProviderConfigCode;
  constructor(message: string, code: ProviderConfigCode = 'invalid_configuration') {
    super(message);
    this.name = 'ProviderConfigError';
    this.code = code;
  }
}

/** The platform's environment variable(s) for each provider key, first match wins. */
export const PLATFORM_KEY_ENV: Record<keyof ProviderKeys, string[]> = {
  openai: ['OPENAI_API_KEY'],
  anthropic: ['ANTHROPIC_API_KEY'],
  gemini: ['GOOGLE_API_KEY', 'GEMINI_API_KEY'],
  deepgram: ['DEEPGRAM_API_KEY'],
  elevenlabs: ['ELEVEN_API_KEY', 'ELEVENLABS_API_KEY'],
  cartesia: ['CARTESIA_API_KEY'],
};

/**
 * The org's key, else the platform's; throws when neither exists. For calls to the providers' own (or the
 * operator's) endpoints only: an LLM call whose URL a tenant may have chosen goes through `llmEndpoint`.
 */
export function resolveKey(provider: keyof ProviderKeys, keys: Partial<ProviderKeys>, env: Env = process.env): string {
  const own = keys[provider];
  if (own) return own;
  for (const name of PLATFORM_KEY_ENV[provider]) {
    const value = env[name];
    if (value) return value;
  }
  throw new ProviderConfigError(
    `no ${provider} key: add the org's ${provider} credential or set ${PLATFORM_KEY_ENV[provider].join(' or ')}`,
    'provider_key_missing',
  );
}

export type LlmProvider = 'openai' | 'anthropic' | 'gemini';

/** Where each provider's API lives, and the variable that moves it (a proxy, a regional endpoint, a test double). */
export const LLM_BASE_URLS: Record<LlmProvider, { default: string; env: string }> = {
  openai: { default: 'https://api.openai.com/v1', env: 'OPENAI_BASE_URL' },
  anthropic: { default: 'https://api.anthropic.com', env: 'ANTHROPIC_BASE_URL' },
  gemini: { default: 'https://generativelanguage.googleapis.com/v1beta', env: 'GEMINI_BASE_URL' },
};

/** Where an LLM call goes and the key that goes with it (null: send none). */
export interface LlmEndpoint {
  provider: LlmProvider;
  baseUrl: string;
  apiKey: string | null;
  /** The URL is the tenant's (a model's base_url): only the org's own key goes there, through the SSRF guard. */
  tenant: boolean;
}

/**
 * The one rule, for the workers and the control plane alike, on which key may travel to which URL:
 *  - a tenant's base_url gets the org's own key for that provider, or none: never a platform key, which
 *    would otherwise go to any server a tenant names;
 *  - otherwise the call goes to the operator's endpoint (the provider's official API, or the *_BASE_URL the
 *    operator set: their gateway, their choice) with the org's key, else the platform's, else none.
 * Gemini models take no base_url (the API stores one only for OpenAI-compatible servers, and the worker's
 * Gemini client cannot be given the guarded fetch), so one is refused rather than half-honoured.
 */
export function llmEndpoint(provider: LlmProvider, tenantBaseUrl: string | null | undefined, keys: Partial<ProviderKeys>, env: Env = process.env): LlmEndpoint {
  const own = keys[provider] || null;
  if (tenantBaseUrl) {
    if (provider === 'gemini') throw new ProviderConfigError('a gemini model takes no base_url (base_url is for OpenAI-compatible servers)');
    return { provider, baseUrl: tenantBaseUrl.replace(/\/+$/, ''), apiKey: own, tenant: true };
  }
  const platform = PLATFORM_KEY_ENV[provider].map((name) => env[name]).find(Boolean) ?? null;
  const baseUrl = (env[LLM_BASE_URLS[provider].env] || LLM_BASE_URLS[provider].default).replace(/\/+$/, '');
  return { provider, baseUrl, apiKey: own ?? platform, tenant: false };
}

/**
 * The platform's local model as an OpenAI-compatible endpoint of the operator's (LOCAL_LLM_BASE_URL: Ollama, a
 * llama.cpp server), for what the control plane asks a model itself (post-call analysis, text-mode agent tests);
 * null without one. A GGUF file (LLM_MODEL_PATH) runs on the workers only.
 */
export function localEndpoint(env: Env = process.env): LlmEndpoint | null {
  const url = env.LOCAL_LLM_BASE_URL;
  return url ? { provider: 'openai', baseUrl: url.replace(/\/+$/, ''), apiKey: null, tenant: false } : null;
}

/** The error for an operator endpoint with no key at all (the same words as resolveKey's). */
export function missingKeyError(provider: LlmProvider): ProviderConfigError {
  return new ProviderConfigError(`no ${provider} key: add the org's ${provider} credential or set ${PLATFORM_KEY_ENV[provider].join(' or ')}`, 'provider_key_missing');
}

export interface CompletionRequest {
  provider: LlmProvider;
  model: string;
  baseUrl: string;
  /** Null (or empty) sends no key: a tenant's server without the org's credential. */
  apiKey: string | null;
  system: string;
  user: string;
  maxTokens?: number;
  /** Ask for a JSON object where the provider has a switch for it. */
  json?: boolean;
}

export type HttpPost = (url: string, headers: Record<string, string>, body: string) => Promise<{ status: number; body: string }>;

export class CompletionError extends Error {
  override name = 'CompletionError';
  readonly status: number | null;
  constructor(message: string, status: number | null = null) {
    super(message);
    this.status = status;
  }
}

/** One completion, temperature 0; returns the model's text. */
export async function complete(req: CompletionRequest, post: HttpPost): Promise<string> {
  const maxTokens = req.maxTokens ?? 512;
  let url: string;
  let headers: Record<string, string> = { 'content-type': 'application/json' };
  let body: unknown;
  switch (req.provider) {
    case 'openai':
      url = `${req.baseUrl}/chat/completions`;
      if (req.apiKey) headers.authorization = `Bearer ${req.apiKey}`;
      body = {
        model: req.model,
        temperature: 0,
        max_tokens: maxTokens,
        ...(req.json ? { response_format: { type: 'json_object' } } : {}),
        messages: [
          { role: 'system', content: req.system },
          { role: 'user', content: req.user },
        ],
      };
      break;
    case 'anthropic':
      url = `${req.baseUrl}/v1/messages`;
      headers = { ...headers, ...(req.apiKey ? { 'x-api-key': req.apiKey } : {}), 'anthropic-version': '2023-06-01' };
      body = { model: req.model, max_tokens: maxTokens, temperature: 0, system: req.system, messages: [{ role: 'user', content: req.user }] };
      break;
    case 'gemini':
      url = `${req.baseUrl}/models/${encodeURIComponent(req.model)}:generateContent`;
      if (req.apiKey) headers = { ...headers, 'x-goog-api-key': req.apiKey };
      body = {
        systemInstruction: { parts: [{ text: req.system }] },
        contents: [{ role: 'user', parts: [{ text: req.user }] }],
        generationConfig: { temperature: 0, maxOutputTokens: maxTokens, ...(req.json ? { responseMimeType: 'application/json' } : {}) },
      };
      break;
    default:
      throw new ProviderConfigError(`unknown LLM provider: ${String(req.provider)}`, 'unknown_provider');
  }
  const res = await post(url, headers, JSON.stringify(body));
  if (res.status < 200 || res.status >= 300) throw new CompletionError(`${req.provider} answered ${res.status}: ${res.body.slice(0, 200)}`, res.status);
  let parsed: unknown;
  try {
    parsed = JSON.parse(res.body);
  } catch {
    throw new CompletionError(`${req.provider} answered with a body that is not JSON`);
  }
  type OpenAiBody = { choices?: { message?: { content?: unknown } }[] } | null;
  type AnthropicBody = { content?: { type: string; text?: string }[] } | null;
  type GeminiBody = { candidates?: { content?: { parts?: { text?: string }[] } }[] } | null;
  const text: unknown =
    req.provider === 'openai'
      ? (parsed as OpenAiBody)?.choices?.[0]?.message?.content
      : req.provider === 'anthropic'
        ? ((parsed as AnthropicBody)?.content ?? []).filter((b) => b.type === 'text').map((b) => b.text ?? '').join('')
        : ((parsed as GeminiBody)?.candidates?.[0]?.content?.parts ?? []).map((p) => p.text ?? '').join('');
  if (typeof text !== 'string') throw new CompletionError(`${req.provider} answered without text`);
  return text;
}
