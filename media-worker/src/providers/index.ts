// Picks the STT, TTS and LLM of a call from its configuration. Keys: the org's own provider key when the
// control plane sent one, otherwise the platform's (the worker's environment), except that a model's own
// base_url (the tenant's) gets only the org's key (shared/providers.ts, llmEndpoint) and reaches only what
// the model egress rule allows (shared/model-egress.ts). Base URLs can be moved with environment variables
// (self-hosted gateways, test doubles). The STT and TTS factories live in shared/speech/providers.ts (the
// control plane's simulated caller of a voice-mode test builds its speech with them too). See
// docs/decisions/014-media-worker.md, "Providers (`media-worker/src/providers/`)".
import type { llm } from '@livekit/agents';
import * as google from '@livekit/agents-plugin-google';
import * as openai from '@livekit/agents-plugin-openai';
import type { LlmSettings, ProviderKeys } from '../../../schemas/internal.ts';
import OpenAI from 'openai';
import { PLATFORM_KEY_ENV, ProviderConfigError, llmEndpoint, missingKeyError, resolveKey, type LlmEndpoint } from '../../../shared/providers.ts';
import { checkModelUrl, modelFetch } from '../../../shared/model-egress.ts';
import { CartesiaTTS } from '../../../shared/speech/cartesia-tts.ts';
import { LocalSTT } from '../../../shared/speech/local-stt.ts';
import { LocalTTS } from '../../../shared/speech/local-tts.ts';
import { optional } from '../../../shared/speech/providers.ts';
import { AnthropicLLM } from './anthropic-llm.ts';
import { LlamaLLM } from './llama-llm.ts';

export { AnthropicLLM, CartesiaTTS, LlamaLLM, LocalSTT, LocalTTS };
export {
  EXPRESSIVE_INSTRUCTIONS,
  createSTT,
  createTTS,
  inputSampleRateFor,
  type TranscriberConfig,
  type TtsConfig,
  type VoiceOptions,
} from '../../../shared/speech/providers.ts';
// Key resolution and the provider error live in the layer shared with the control plane (shared/providers.ts).
export { PLATFORM_KEY_ENV, ProviderConfigError, resolveKey };

type Env = Record<string, string | undefined>;
export type LlmConfig = Omit<LlmSettings, 'provider'> & { provider: string };

/** Placeholder key for OpenAI-compatible servers that need none (local llama.cpp, vLLM, Ollama). */
const NO_KEY = 'not-needed';

/**
 * An OpenAI client whose requests go through the model egress guard (shared/model-egress.ts): a tenant's
 * base_url reaches only public addresses or the operator's LLM_PRIVATE_HOSTS. The key is the endpoint's
 * (llmEndpoint: never a platform key for a tenant's URL); the SDK needs a string, hence the placeholder.
 */
function openaiClient(endpoint: Pick<LlmEndpoint, 'baseUrl' | 'tenant' | 'apiKey'>, env: Env): OpenAI {
  checkModelUrl(endpoint, env);
  return new OpenAI({
    baseURL: endpoint.baseUrl,
    apiKey: endpoint.apiKey ?? NO_KEY,
    maxRetries: 0,
    fetch: modelFetch(endpoint, env),
    // The SDK would add the platform's OPENAI_ORG_ID / OPENAI_PROJECT_ID / OPENAI_ADMIN_KEY from the environment.
    ...(endpoint.tenant ? { organization: null, project: null, adminAPIKey: null } : {}),
  });
}

export function createLLM(config: LlmConfig, keys: ProviderKeys, env: Env = process.env): llm.LLM {
  const common = {
    ...optional(config.temperature !== null && config.temperature !== undefined && { temperature: config.temperature }),
  };
  switch (config.provider) {
    case 'openai': {
      // A custom base URL is any OpenAI-compatible server, which may need no key.
      const endpoint = llmEndpoint('openai', config.base_url, keys, env);
      if (!endpoint.tenant && !endpoint.apiKey) throw missingKeyError('openai');
      return new openai.LLM({
        client: openaiClient(endpoint, env),
        model: config.model,
        ...common,
        ...optional(config.max_tokens && { maxCompletionTokens: config.max_tokens }),
      });
    }
    case 'gemini': {
      // llmEndpoint refuses a tenant base_url for Gemini; the plugin talks to Google's API (the operator's).
      const endpoint = llmEndpoint('gemini', config.base_url, keys, env);
      if (!endpoint.apiKey) throw missingKeyError('gemini');
      return new google.LLM({
        apiKey: endpoint.apiKey,
        model: config.model,
        ...common,
        ...optional(config.max_tokens && { maxOutputTokens: config.max_tokens }),
      });
    }
    case 'anthropic': {
      const endpoint = llmEndpoint('anthropic', config.base_url, keys, env);
      if (!endpoint.tenant && !endpoint.apiKey) throw missingKeyError('anthropic');
      checkModelUrl(endpoint, env);
      return new AnthropicLLM({
        apiKey: endpoint.apiKey ?? NO_KEY,
        model: config.model,
        ...common,
        ...optional(config.max_tokens && { maxTokens: config.max_tokens }),
        baseURL: endpoint.baseUrl,
        fetch: modelFetch(endpoint, env),
        tenant: endpoint.tenant,
      });
    }
    case 'local': {
      // A GGUF file on the worker wins; otherwise a local OpenAI-compatible server.
      if (env.LLM_MODEL_PATH) {
        return new LlamaLLM({
          modelPath: env.LLM_MODEL_PATH,
          ...common,
          ...optional(config.max_tokens && { maxTokens: config.max_tokens }),
        });
      }
      const baseURL = config.base_url ?? env.LOCAL_LLM_BASE_URL;
      if (!baseURL) {
        throw new ProviderConfigError('local LLM needs LLM_MODEL_PATH (a GGUF file) or LOCAL_LLM_BASE_URL (an OpenAI-compatible server) on the worker', 'local_model_missing');
      }
      // Keyless either way; a base_url of the call is the tenant's, LOCAL_LLM_BASE_URL the operator's.
      return new openai.LLM({
        client: openaiClient({ baseUrl: baseURL, tenant: !!config.base_url, apiKey: null }, env),
        model: config.model,
        ...common,
        ...optional(config.max_tokens && { maxCompletionTokens: config.max_tokens }),
      });
    }
    default:
      throw new ProviderConfigError(`unknown LLM provider: ${config.provider}`, 'unknown_provider');
  }
}
