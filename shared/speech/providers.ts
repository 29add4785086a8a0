// The STT and TTS of a call from its transcriber and tts settings, for the media workers (the agent's own
// speech) and the control plane (a voice-mode agent test's simulated caller) alike. Keys: resolveKey's rule
// (shared/providers.ts): the org's key, else a platform key found in `env`; these endpoints are the
// providers' own or the operator's (a *_BASE_URL variable: a gateway, a test double), never a tenant's URL.
import { initializeLogger, loggerOptions, type stt, type tts } from '@livekit/agents';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import * as elevenlabs from '@livekit/agents-plugin-elevenlabs';
import * as openai from '@livekit/agents-plugin-openai';
import { DEFAULT_LANGUAGE, STT_DEFAULT_MODEL, TTS_DEFAULTS, isTurnModel } from '../voices.ts';
import { ProviderConfigError, resolveKey, type ProviderKeys } from '../providers.ts';
import { CartesiaTTS } from './cartesia-tts.ts';
import { FirstClauseTTS } from './first-clause.ts';
import { LocalSTT } from './local-stt.ts';
import { LocalTTS, type LocalTTSModel } from './local-tts.ts';

type Env = Record<string, string | undefined>;

/** The variables that move each speech provider's API (the operator's: a gateway, a regional endpoint, a test double). */
export const SPEECH_BASE_URL_ENV = ['DEEPGRAM_BASE_URL', 'OPENAI_BASE_URL', 'ELEVENLABS_BASE_URL', 'CARTESIA_BASE_URL'] as const;
export type SpeechBaseUrlEnv = (typeof SPEECH_BASE_URL_ENV)[number];

/**
 * The plugins log through the framework's logger, which must exist before one is built: a process other than
 * the worker (which makes its own) makes a quiet one.
 */
export function ensureAgentsLogger(): void {
  if (!loggerOptions()) initializeLogger({ pretty: false, level: 'warn' });
}

/**
 * The transcriber and TTS settings the factories read, of the session config's (schemas/internal.ts, derived from
 * the agent schema, which satisfies these; shared/ owns the shape and does not import schemas/). `provider` is a
 * string so an unknown one reaches the factory's error; a missing model, voice or language takes the catalogue's
 * default (shared/voices.ts), the same one the control plane fills in.
 */
export interface TranscriberConfig {
  provider: string;
  model?: string | null;
  language?: string | null;
}
export interface TtsConfig {
  provider: string;
  model?: string | null;
  voice_id?: string | null;
}

/** Agent behaviour that reaches the TTS. */
export interface VoiceOptions {
  /** Speaking rate, 1 = normal (the agent's `speed`). */
  speed?: number;
  /** The agent's `emotions`: expressive delivery where the provider has a control for it. */
  emotions?: boolean;
  /** The agent's language (BCP-47), for providers that take one. */
  language?: string;
}

/** The part of a BCP-47 tag before the region ('en-US' -> 'en'). */
export const baseLanguage = (language: string) => language.split(/[-_]/)[0]!.toLowerCase();

/** Spreads `value` when it is an object: `...optional(x && {key: x})` leaves `key` out when `x` is empty. */
export const optional = <T extends object>(value: T | undefined | null | false | '' | 0): Partial<T> => value || {};

/**
 * What the engine transcribes: a call's live audio, whose turns the provider's own endpointing ends, or whole
 * clips, each ended by the client's flush (the simulated caller's utterances). OpenAI's realtime STT then has no
 * server VAD and commits on the flush: a clip's tail of silence may be shorter than the VAD's silence.
 */
export type SttUse = 'live' | 'clips';

export function createSTT(transcriber: TranscriberConfig, keys: ProviderKeys, env: Env = process.env, use: SttUse = 'live'): stt.STT {
  const language = transcriber.language ?? DEFAULT_LANGUAGE;
  switch (transcriber.provider) {
    case 'deepgram': {
      const model = transcriber.model ?? STT_DEFAULT_MODEL.deepgram;
      const baseUrl = env.DEEPGRAM_BASE_URL?.replace(/^http/, 'ws').replace(/\/+$/, '');
      // Flux (a model with its own end of turn) streams through Deepgram's v2 API: the plugin's STTv2. Its turn
      // options are the call's (media-worker/src/session/stt-turns.ts); Deepgram's defaults until then.
      if (isTurnModel({ provider: 'deepgram', model })) return createFluxSTT(model, language, resolveKey('deepgram', keys, env), baseUrl);
      return new deepgram.STT({
        apiKey: resolveKey('deepgram', keys, env),
        model,
        language,
        ...optional(baseUrl && { baseUrl }),
      });
    }
    case 'openai':
      return new openai.STT({
        apiKey: resolveKey('openai', keys, env),
        language: baseLanguage(language),
        model: transcriber.model ?? STT_DEFAULT_MODEL.openai,
        ...optional(env.OPENAI_BASE_URL && { baseURL: env.OPENAI_BASE_URL }),
        ...optional(use === 'clips' && { turnDetection: null, vad: null }),
      });
    case 'local':
      return new LocalSTT({ language });
    default:
      throw new ProviderConfigError(`unknown transcriber provider: ${transcriber.provider}`, 'unknown_provider');
  }
}

/**
 * Deepgram Flux through the plugin's STTv2, at the operator's endpoint if DEEPGRAM_BASE_URL moves it (the v2
 * path under the same host as v1's). flux-general-multi detects the language itself; a language other than
 * `multi` is given to it as a hint. flux-general-en speaks English only (the catalogue's check).
 */
function createFluxSTT(model: string, language: string, apiKey: string, baseUrl: string | undefined): deepgram.STTv2 {
  const multi = model === 'flux-general-multi';
  return new deepgram.STTv2({
    apiKey,
    model,
    language: language === 'multi' ? 'en' : language,
    ...optional(multi && language !== 'multi' && { languageHint: [baseLanguage(language)] }),
    ...optional(baseUrl && { endpointUrl: `${baseUrl}/v2/listen` }),
  });
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
      throw new ProviderConfigError(`unknown TTS provider: ${config.provider}`, 'unknown_provider');
  }
}

/** What the gpt-4o TTS models are told when the agent has `emotions` on. */
export const EXPRESSIVE_INSTRUCTIONS =
  'Speak naturally and expressively: let your tone follow the emotion of the words (warm, excited, sorry, reassuring).';
