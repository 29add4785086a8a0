// Why an agent cannot run, in one vocabulary for the two places that say it (docs/decisions/037-day-one.md,
// "An agent that cannot run"):
//  - the API, when an agent or a model is saved or read: `warnings` in the answer (the control plane's checks below,
//    against the organisation's credentials and the platform's environment);
//  - the media worker, when a call's agent cannot be built: the call fails at once with end_reason
//    `configuration_error` and an `error` of the same codes (media-worker/src/call/setup-failure.ts).
// Messages name the cause and the fix. They never carry a key, and never an operator's file path: a tenant reads
// them, and a web call's caller may too.
import { PLATFORM_KEY_ENV, type ProviderKeys } from './providers.ts';
import { checkModelUrl } from './model-egress.ts';
import { SsrfBlockedError } from './ssrf.ts';

export const AGENT_PROBLEM_CODES = [
  /** No key for the provider: neither the organisation's credential nor the platform's environment. */
  'provider_key_missing',
  /** The model's base_url reaches a host the model egress rule refuses (a private address not in LLM_PRIVATE_HOSTS). */
  'model_host_refused',
  /** Provider `local` on a platform with neither LOCAL_LLM_BASE_URL nor LLM_MODEL_PATH. */
  'local_model_missing',
  /** LLM_MODEL_PATH names no readable GGUF file on the worker. */
  'model_file_missing',
  /** A provider this worker does not know (a newer control plane). */
  'unknown_provider',
  /** The voice cannot be used by the worker (a local voice missing there). */
  'voice_unavailable',
  /** Any other setting the worker could not build the agent with. */
  'invalid_configuration',
] as const;
export type AgentProblemCode = (typeof AGENT_PROBLEM_CODES)[number];

export interface AgentProblem {
  code: AgentProblemCode;
  message: string;
  /** The field of the resource at fault (`provider`, `base_url`, `llm_id`, `transcriber.provider`...); null: none. */
  field: string | null;
}

type Env = Record<string, string | undefined>;
type KeyProvider = keyof ProviderKeys;

const PROVIDER_NAMES: Record<KeyProvider, string> = {
  openai: 'OpenAI',
  anthropic: 'Anthropic',
  gemini: 'Gemini',
  deepgram: 'Deepgram',
  elevenlabs: 'ElevenLabs',
  cartesia: 'Cartesia',
};

const isKeyProvider = (p: string): p is KeyProvider => p in PLATFORM_KEY_ENV;

/** Whether a key for the provider exists: the organisation's credential, else the platform's environment. */
export function hasKey(provider: KeyProvider, orgKeys: ReadonlySet<string>, env: Env): boolean {
  return orgKeys.has(provider) || PLATFORM_KEY_ENV[provider].some((name) => !!env[name]);
}

/** The words of a missing key: which credential to add, or which variable the operator sets. */
export function missingKeyMessage(what: string, provider: KeyProvider): string {
  const vars = PLATFORM_KEY_ENV[provider].join(' or ');
  return `${what} uses ${PROVIDER_NAMES[provider]} and there is no ${provider} key: add the organisation's ${provider} credential (POST /v1/integrations) or set ${vars} on the platform`;
}

export const LOCAL_MODEL_MISSING =
  'there is no local model on this platform: the operator sets LOCAL_LLM_BASE_URL (an OpenAI-compatible server such as Ollama or a llama.cpp server) or LLM_MODEL_PATH (a GGUF file) on the control plane and the workers';

/** The words of a refused model host, naming LLM_PRIVATE_HOSTS with the host to add. */
export function refusedHostMessage(what: string, baseUrl: string, reason: string): string {
  let host = baseUrl;
  try {
    host = new URL(baseUrl).hostname.replace(/^\[|\]$/g, '');
  } catch {
    // an invalid URL: the reason says so
  }
  return `${what} (base_url ${baseUrl}) cannot be reached: ${reason}. The operator can allow this private host with LLM_PRIVATE_HOSTS=${host} on the control plane and the workers`;
}

/** The reason of a refusal, without the guard's own hint (the message gives its own). */
const reasonOf = (err: SsrfBlockedError) => err.message.replace(/\s*\(an operator can allow[^)]*\)\s*$/, '');

export interface ModelFacts {
  provider: string;
  base_url: string | null;
}

/**
 * What keeps a model from running, as known here: its key, its base_url's host (the check that needs no DNS), a
 * local model's settings. `field` prefixes the fields (`''` on the model itself, `llm_id` on an agent).
 */
export function modelProblems(model: ModelFacts, orgKeys: ReadonlySet<string>, env: Env, on: 'model' | 'agent' = 'model'): AgentProblem[] {
  const what = on === 'model' ? 'This model' : "The agent's model";
  const field = (f: string) => (on === 'model' ? f : 'llm_id');
  if (model.base_url) {
    // A tenant's server: it may need no key (the org's goes there if it has one), but it must be reachable.
    try {
      checkModelUrl({ baseUrl: model.base_url, tenant: true }, env);
    } catch (err) {
      if (!(err instanceof SsrfBlockedError)) throw err;
      return [{ code: 'model_host_refused', message: refusedHostMessage(what, model.base_url, reasonOf(err)), field: field('base_url') }];
    }
    return [];
  }
  if (model.provider === 'local') {
    if (env.LOCAL_LLM_BASE_URL || env.LLM_MODEL_PATH) return [];
    return [{ code: 'local_model_missing', message: `${what} uses provider local and ${LOCAL_MODEL_MISSING}`, field: field('provider') }];
  }
  if (isKeyProvider(model.provider) && !hasKey(model.provider, orgKeys, env)) {
    return [{ code: 'provider_key_missing', message: missingKeyMessage(what, model.provider), field: field('provider') }];
  }
  return [];
}

/** What keeps an agent's speech from running: a cloud STT or TTS without a key (local speech needs none). */
export function speechProblems(agent: { transcriber: { provider: string }; tts: { provider: string } }, orgKeys: ReadonlySet<string>, env: Env): AgentProblem[] {
  const out: AgentProblem[] = [];
  const stt = agent.transcriber.provider;
  if (isKeyProvider(stt) && !hasKey(stt, orgKeys, env)) {
    out.push({ code: 'provider_key_missing', message: missingKeyMessage("The agent's speech-to-text (transcriber)", stt), field: 'transcriber.provider' });
  }
  const tts = agent.tts.provider;
  if (isKeyProvider(tts) && !hasKey(tts, orgKeys, env)) {
    out.push({ code: 'provider_key_missing', message: missingKeyMessage("The agent's voice (tts)", tts), field: 'tts.provider' });
  }
  return out;
}
