// Picks the STT, TTS and LLM of a call from its configuration. Keys: the org's own provider key when the
// control plane sent one, otherwise the platform's (the worker's environment), except that a model's own
// base_url (the tenant's) gets only the org's key (shared/providers.ts, llmEndpoint) and reaches only what
// the model egress rule allows (shared/model-egress.ts). Base URLs can be moved with environment variables
// (self-hosted gateways, test doubles). See docs/decisions.md, "Providers".
import type { llm, stt, tts } from '@livekit/agents';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import * as elevenlabs from '@livekit/agents-plugin-elevenlabs';
import * as google from '@livekit/agents-plugin-google';
import * as openai from '@livekit/agents-plugin-openai';
import type { LlmSettings, ProviderKeys, Transcriber, Tts } from '../../../schemas/internal.ts';
import { AGENT_DEFAULTS } from '../../../schemas/agents.ts';
import { STT_DEFAULT_MODEL, TTS_DEFAULTS } from '../../../shared/voices.ts';
import OpenAI from 'openai';
import { PLATFORM_KEY_ENV, ProviderConfigError, llmEndpoint, missingKeyError, resolveKey, type LlmEndpoint } from '../../../shared/providers.ts';
import { checkModelUrl, modelFetch } from '../../../shared/model-egress.ts';
import { AnthropicLLM } from './anthropic-llm.ts';
import { CartesiaTTS } from './cartesia-tts.ts';
import { LlamaLLM } from './llama-llm.ts';
import { FirstClauseTTS } from './first-clause.ts';
import { LocalSTT } from '../../../shared/speech/local-stt.ts';
import { LocalTTS, type LocalTTSModel } from '../../../shared/speech/local-tts.ts';

export { AnthropicLLM, CartesiaTTS, LlamaLLM, LocalSTT, LocalTTS };

type Env = Record<string, string | undefined>;

/**
 * Transcriber settings as the session config carries them (schemas/internal.ts, derived from the agent schema);
 * `provider` widens to a string so an unknown one reaches the factory's error, and a missing model, voice or
 * language takes the catalogue's default (shared/voices.ts), the same one the control plane fills in.
 */
export type TranscriberConfig = Omit<Transcriber, 'provider' | 'model' | 'language'> & { provider: string; model?: string | null; language?: string | null };
export type TtsConfig = Omit<Tts, 'provider' | 'model' | 'voice_id'> & { provider: string; model?: string | null; voice_id?: string | null };
export type LlmConfig = Omit<LlmSettings, 'provider'> & { provider: string };

/** Agent behaviour that reaches the TTS. */
export interface VoiceOptions {
  /** Speaking rate, 1 = normal (the agent's `speed`). */
  speed?: number;
  /** The agent's `emotions`: expressive delivery where the provider has a control for it. */
  emotions?: boolean;
  /** The agent's language (BCP-47), for providers that take one. */
  language?: string;
}

// Key resolution and the provider error live in the layer shared with the control plane (shared/providers.ts).
export { PLATFORM_KEY_ENV, ProviderConfigError, resolveKey };

/** The part of a BCP-47 tag before the region ('en-US' -> 'en'). */
const baseLanguage = (language: string) => language.split(/[-_]/)[0]!.toLowerCase();

/** Spreads `value` when it is an object: `...optional(x && {key: x})` leaves `key` out when `x` is empty. */
const optional = <T extends object>(value: T | undefined | null | false | '' | 0): Partial<T> => value || {};

export function createSTT(transcriber: TranscriberConfig, keys: ProviderKeys, env: Env = process.env): stt.STT {
  const language = transcriber.language ?? AGENT_DEFAULTS.language;
  switch (transcriber.provider) {
    case 'deepgram':
      return new deepgram.STT({
        apiKey: resolveKey('deepgram', keys, env),
        model: transcriber.model ?? STT_DEFAULT_MODEL.deepgram,
        language,
        ...optional(env.DEEPGRAM_BASE_URL && { baseUrl: env.DEEPGRAM_BASE_URL.replace(/^http/, 'ws') }),
      });
    case 'openai':
      return new openai.STT({
        apiKey: resolveKey('openai', keys, env),
        language: baseLanguage(language),
        model: transcriber.model ?? STT_DEFAULT_MODEL.openai,
        ...optional(env.OPENAI_BASE_URL && { baseURL: env.OPENAI_BASE_URL }),
      });
    case 'local':
      return new LocalSTT({ language });
    default:
      throw new ProviderConfigError(`unknown transcriber provider: ${transcriber.provider}`);
  }
}

/**
 * The sample rate to take the caller's audio at: the one the STT works at, so nothing resamples it twice
 * (the room's audio stream resamples Opus's 48 kHz natively; Silero and the turn detector also work at
 * 16 kHz). OpenAI's streaming STT works at 24 kHz, agents-js's default for room input.
 */
export function inputSampleRateFor(provider: TranscriberConfig['provider']): number {
  return provider === 'openai' ? 24000 : 16000;
}

/** ElevenLabs accepts speeds from 0.7 to 1.2. */
const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

export function createTTS(config: TtsConfig, keys: ProviderKeys, voice: VoiceOptions = {}, env: Env = process.env): tts.TTS {
  const speed = voice.speed ?? 1;
  switch (config.provider) {
    case 'openai': {
      const model = config.model ?? TTS_DEFAULTS.openai.model;
      // OpenAI's speech endpoint takes whole texts: the reply goes to it first clause first (first-clause.ts).
      return new FirstClauseTTS(new openai.TTS({
        apiKey: resolveKey('openai', keys, env),
        model,
        voice: (config.voice_id ?? TTS_DEFAULTS.openai.voice_id) as openai.TTSOptions['voice'],
        speed: clamp(speed, 0.25, 4),
        // Only the gpt-4o TTS models follow instructions; tts-1 ignores them.
        ...optional(voice.emotions && model.startsWith('gpt-4o') && { instructions: EXPRESSIVE_INSTRUCTIONS }),
        ...optional(env.OPENAI_BASE_URL && { baseURL: env.OPENAI_BASE_URL }),
      }));
    }
    case 'deepgram':
      return new deepgram.TTS({
        apiKey: resolveKey('deepgram', keys, env),
        // Deepgram names voices as models (aura-2-thalia-en).
        model: config.voice_id ?? TTS_DEFAULTS.deepgram.voice_id,
        ...optional(speed !== 1 && { speed: clamp(speed, 0.7, 1.5) }),
        ...optional(env.DEEPGRAM_BASE_URL && { baseUrl: env.DEEPGRAM_BASE_URL }),
      });
    case 'elevenlabs':
      return new elevenlabs.TTS({
        apiKey: resolveKey('elevenlabs', keys, env),
        ...optional(config.voice_id && { voiceId: config.voice_id }),
        ...optional(config.model && { model: config.model }),
        ...optional(voice.language && { language: baseLanguage(voice.language) }),
        ...optional(
          (speed !== 1 || voice.emotions) && {
            voiceSettings: {
              // Lower stability and some style exaggeration make delivery follow the text's emotion.
              stability: voice.emotions ? 0.35 : 0.5,
              similarity_boost: 0.75,
              ...(voice.emotions ? { style: 0.4 } : {}),
              speed: clamp(speed, 0.7, 1.2),
            },
          },
        ),
        ...optional(env.ELEVENLABS_BASE_URL && { baseURL: env.ELEVENLABS_BASE_URL }),
      });
    case 'cartesia':
      return new CartesiaTTS({
        apiKey: resolveKey('cartesia', keys, env),
        ...optional(config.voice_id && { voice: config.voice_id }),
        ...optional(config.model && { model: config.model }),
        ...optional(voice.language && { language: baseLanguage(voice.language) }),
        speed,
        ...optional(voice.emotions && { emotion: ['positivity'] }),
        ...optional(env.CARTESIA_BASE_URL && { baseURL: env.CARTESIA_BASE_URL }),
      });
    case 'local':
      return new LocalTTS({
        model: (config.model ?? TTS_DEFAULTS.local.model) as LocalTTSModel,
        ...optional(config.voice_id && { voice: config.voice_id }),
        speed,
      });
    default:
      throw new ProviderConfigError(`unknown TTS provider: ${config.provider}`);
  }
}

/** What the gpt-4o TTS models are told when the agent has `emotions` on. */
export const EXPRESSIVE_INSTRUCTIONS =
  'Speak naturally and expressively: let your tone follow the emotion of the words (warm, excited, sorry, reassuring).';

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
        throw new ProviderConfigError('local LLM needs LLM_MODEL_PATH (a GGUF file) on the worker or a base_url');
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
      throw new ProviderConfigError(`unknown LLM provider: ${config.provider}`);
  }
}
