// The speech catalogue: which STT and TTS providers, models and voices the media worker supports.
// Static data kept up to date by the team (never fetched at request time), so the control plane can validate
// an agent's `transcriber` and `tts` and serve GET /v1/voices, and the worker can map them to plugins.
// Local entries are what the Debian packages installed by scripts/setup.sh provide (espeak-ng, festival with
// festvox-us-slt-hts, pocketsphinx-en-us).

/** An agent's language when it sets none (BCP-47): the agent schema's default and the speech factories'. */
export const DEFAULT_LANGUAGE = 'en-US';

export const STT_PROVIDERS = ['deepgram', 'openai', 'local'] as const;
export type SttProvider = (typeof STT_PROVIDERS)[number];
export const TTS_PROVIDERS = ['openai', 'deepgram', 'elevenlabs', 'cartesia', 'local'] as const;
export type TtsProvider = (typeof TTS_PROVIDERS)[number];

export type Gender = 'female' | 'male' | 'neutral';

export interface Voice {
  provider: TtsProvider;
  voice_id: string;
  name: string;
  gender: Gender | null;
  /** BCP-47 tags the voice speaks. */
  languages: string[];
  /** The provider's models this voice can be used with. */
  models: string[];
}

export interface SttModel {
  provider: SttProvider;
  model: string;
  /** BCP-47 tags; `multi` is the provider's automatic multilingual mode. */
  languages: string[];
}

export interface TtsModel {
  provider: TtsProvider;
  model: string;
}

// Languages of the multilingual model families, as the providers document them.
const WHISPER_LANGUAGES = [
  'af', 'ar', 'hy', 'az', 'be', 'bs', 'bg', 'ca', 'zh', 'hr', 'cs', 'da', 'nl', 'en', 'et', 'fi', 'fr', 'gl', 'de', 'el',
  'he', 'hi', 'hu', 'is', 'id', 'it', 'ja', 'kn', 'kk', 'ko', 'lv', 'lt', 'mk', 'ms', 'mr', 'mi', 'ne', 'no', 'fa', 'pl',
  'pt', 'ro', 'ru', 'sr', 'sk', 'sl', 'es', 'sw', 'sv', 'tl', 'ta', 'th', 'tr', 'uk', 'ur', 'vi', 'cy',
];
const DEEPGRAM_NOVA_LANGUAGES = [
  'multi', 'en', 'en-US', 'en-AU', 'en-GB', 'en-IN', 'en-NZ', 'es', 'es-419', 'fr', 'fr-CA', 'de', 'hi', 'it', 'ja', 'ko',
  'nl', 'pl', 'pt', 'pt-BR', 'ru', 'sv', 'tr', 'uk', 'da', 'no', 'id', 'zh', 'zh-CN', 'zh-TW', 'ta', 'th',
];
/** flux-general-multi's languages (Deepgram's Flux Multilingual), and `multi` for its own detection. */
const FLUX_MULTI_LANGUAGES = ['multi', 'en', 'es', 'fr', 'de', 'hi', 'ru', 'pt', 'ja', 'it', 'nl'];
const ELEVENLABS_MULTILINGUAL = [
  'en', 'ja', 'zh', 'de', 'hi', 'fr', 'ko', 'pt', 'it', 'es', 'id', 'nl', 'tr', 'fil', 'pl', 'sv', 'bg', 'ro', 'ar', 'cs',
  'el', 'fi', 'hr', 'ms', 'sk', 'da', 'ta', 'uk', 'ru',
];
const CARTESIA_LANGUAGES = ['en', 'fr', 'de', 'es', 'pt', 'zh', 'ja', 'hi', 'it', 'ko', 'nl', 'pl', 'ru', 'sv', 'tr'];

export const STT_MODELS: SttModel[] = [
  { provider: 'deepgram', model: 'nova-3', languages: DEEPGRAM_NOVA_LANGUAGES },
  { provider: 'deepgram', model: 'nova-3-medical', languages: ['en', 'en-US'] },
  { provider: 'deepgram', model: 'nova-2', languages: DEEPGRAM_NOVA_LANGUAGES },
  { provider: 'deepgram', model: 'nova-2-phonecall', languages: ['en', 'en-US'] },
  { provider: 'deepgram', model: 'nova-2-conversationalai', languages: ['en', 'en-US'] },
  // Flux (Deepgram's /v2/listen): a recogniser with its own end of turn (turn_taking.detection `stt`).
  { provider: 'deepgram', model: 'flux-general-en', languages: ['en'] },
  { provider: 'deepgram', model: 'flux-general-multi', languages: FLUX_MULTI_LANGUAGES },
  { provider: 'openai', model: 'gpt-4o-transcribe', languages: WHISPER_LANGUAGES },
  { provider: 'openai', model: 'gpt-4o-mini-transcribe', languages: WHISPER_LANGUAGES },
  { provider: 'openai', model: 'whisper-1', languages: WHISPER_LANGUAGES },
  // pocketsphinx-en-us is the only acoustic model Debian packages.
  { provider: 'local', model: 'pocketsphinx', languages: ['en-US'] },
];

export const TTS_MODELS: TtsModel[] = [
  { provider: 'openai', model: 'gpt-4o-mini-tts' },
  { provider: 'openai', model: 'tts-1' },
  { provider: 'openai', model: 'tts-1-hd' },
  { provider: 'deepgram', model: 'aura-2' },
  { provider: 'deepgram', model: 'aura' },
  { provider: 'elevenlabs', model: 'eleven_flash_v2_5' },
  { provider: 'elevenlabs', model: 'eleven_turbo_v2_5' },
  { provider: 'elevenlabs', model: 'eleven_multilingual_v2' },
  { provider: 'elevenlabs', model: 'eleven_flash_v2' },
  { provider: 'elevenlabs', model: 'eleven_turbo_v2' },
  { provider: 'cartesia', model: 'sonic-2' },
  { provider: 'cartesia', model: 'sonic-turbo' },
  { provider: 'local', model: 'espeak-ng' },
  { provider: 'local', model: 'festival' },
];

/**
 * The transcriber models that decide the end of the caller's turn themselves (Deepgram Flux): the ones
 * turn_taking.detection `stt` takes. A Flux model streams through Deepgram's v2 API (`STTv2` of the plugin).
 */
export const STT_TURN_MODELS: readonly { provider: SttProvider; model: string }[] = STT_MODELS.filter((m) => m.model.startsWith('flux-'));
export const isTurnModel = (t: { provider: string; model?: string | null | undefined }): boolean =>
  STT_TURN_MODELS.some((m) => m.provider === t.provider && m.model === t.model);

/** Model (and voice) used when a `transcriber`/`tts` object names only its provider. */
export const STT_DEFAULT_MODEL: Record<SttProvider, string> = { deepgram: 'nova-3', openai: 'gpt-4o-transcribe', local: 'pocketsphinx' };
export const TTS_DEFAULTS: Record<TtsProvider, { model: string; voice_id: string }> = {
  openai: { model: 'gpt-4o-mini-tts', voice_id: 'alloy' },
  deepgram: { model: 'aura-2', voice_id: 'aura-2-andromeda-en' },
  elevenlabs: { model: 'eleven_flash_v2_5', voice_id: 'bIHbv24MWmeRgasZH58o' },
  cartesia: { model: 'sonic-2', voice_id: 'f786b574-daa5-4673-aa0c-cbe3e8534c02' },
  local: { model: 'espeak-ng', voice_id: 'en-us' },
};

function openaiVoices(): Voice[] {
  const all = ['gpt-4o-mini-tts', 'tts-1', 'tts-1-hd'];
  const list: [string, Gender, string[]][] = [
    ['alloy', 'neutral', all], ['ash', 'male', all], ['ballad', 'male', ['gpt-4o-mini-tts']], ['coral', 'female', all],
    ['echo', 'male', all], ['fable', 'neutral', all], ['nova', 'female', all], ['onyx', 'male', all],
    ['sage', 'female', all], ['shimmer', 'female', all], ['verse', 'male', ['gpt-4o-mini-tts']],
  ];
  return list.map(([id, gender, models]) => ({
    provider: 'openai', voice_id: id, name: id[0]!.toUpperCase() + id.slice(1), gender, languages: WHISPER_LANGUAGES, models,
  }));
}

function deepgramVoices(): Voice[] {
  const aura2: [string, Gender, string][] = [
    ['andromeda', 'female', 'en-US'], ['apollo', 'male', 'en-US'], ['arcas', 'male', 'en-US'], ['aries', 'male', 'en-US'],
    ['asteria', 'female', 'en-US'], ['athena', 'female', 'en-US'], ['atlas', 'male', 'en-US'], ['aurora', 'female', 'en-US'],
    ['callisto', 'female', 'en-US'], ['cordelia', 'female', 'en-US'], ['draco', 'male', 'en-GB'], ['electra', 'female', 'en-US'],
    ['harmonia', 'female', 'en-US'], ['helios', 'male', 'en-GB'], ['hera', 'female', 'en-US'], ['hermes', 'male', 'en-US'],
    ['hyperion', 'male', 'en-AU'], ['iris', 'female', 'en-US'], ['janus', 'female', 'en-US'], ['juno', 'female', 'en-US'],
    ['jupiter', 'male', 'en-US'], ['luna', 'female', 'en-US'], ['mars', 'male', 'en-US'], ['minerva', 'female', 'en-US'],
    ['neptune', 'male', 'en-US'], ['odysseus', 'male', 'en-US'], ['ophelia', 'female', 'en-US'], ['orion', 'male', 'en-US'],
    ['orpheus', 'male', 'en-US'], ['pandora', 'female', 'en-GB'], ['phoebe', 'female', 'en-US'], ['pluto', 'male', 'en-US'],
    ['saturn', 'male', 'en-US'], ['selene', 'female', 'en-US'], ['theia', 'female', 'en-AU'], ['vesta', 'female', 'en-US'],
    ['zeus', 'male', 'en-US'],
  ];
  const aura1: [string, Gender, string][] = [
    ['asteria', 'female', 'en-US'], ['luna', 'female', 'en-US'], ['stella', 'female', 'en-US'], ['athena', 'female', 'en-GB'],
    ['hera', 'female', 'en-US'], ['orion', 'male', 'en-US'], ['arcas', 'male', 'en-US'], ['perseus', 'male', 'en-US'],
    ['angus', 'male', 'en-IE'], ['orpheus', 'male', 'en-US'], ['helios', 'male', 'en-GB'], ['zeus', 'male', 'en-US'],
  ];
  const title = (s: string) => s[0]!.toUpperCase() + s.slice(1);
  return [
    ...aura2.map(([n, gender, lang]): Voice => ({ provider: 'deepgram', voice_id: `aura-2-${n}-en`, name: title(n), gender, languages: [lang], models: ['aura-2'] })),
    ...aura1.map(([n, gender, lang]): Voice => ({ provider: 'deepgram', voice_id: `aura-${n}-en`, name: title(n), gender, languages: [lang], models: ['aura'] })),
  ];
}

function elevenlabsVoices(): Voice[] {
  // Premade voices of every ElevenLabs account. English-only models speak English; the others all listed languages.
  const models = ['eleven_flash_v2_5', 'eleven_turbo_v2_5', 'eleven_multilingual_v2', 'eleven_flash_v2', 'eleven_turbo_v2'];
  const list: [string, string, Gender][] = [
    ['21m00Tcm4TlvDq8ikWAM', 'Rachel', 'female'], ['EXAVITQu4vr4xnJGR8ja', 'Sarah', 'female'], ['pNInz6obpgDQGcFmaJgB', 'Adam', 'male'],
    ['ErXwobaYiN019PkySvjV', 'Antoni', 'male'], ['TxGEqnHWrfWFTfGW9XjX', 'Josh', 'male'], ['XB0fDUnXU5powFXDhCwa', 'Charlotte', 'female'],
    ['Xb7hH8MSUJpSbSDYk0k2', 'Alice', 'female'], ['XrExE9yKIg1WjnnlVkGX', 'Matilda', 'female'], ['nPczCjzI2devNBz1zQrb', 'Brian', 'male'],
    ['N2lVS1w4EtoT3dr4eOWO', 'Callum', 'male'], ['IKne3meq5aSn9XLyUdCD', 'Charlie', 'male'], ['JBFqnCBsd6RMkjVDRZzb', 'George', 'male'],
    ['TX3LPaxmHKxFdv7VOQHJ', 'Liam', 'male'], ['pFZP5JQG7iQjIQuC4Bku', 'Lily', 'female'], ['onwK4e9ZLuTAKqWW03F9', 'Daniel', 'male'],
    ['cgSgspJ2msm6clMCkdW9', 'Jessica', 'female'], ['FGY2WhTYpPnrIDTdsKH5', 'Laura', 'female'], ['cjVigY5qzO86Huf0OWal', 'Eric', 'male'],
    ['iP95p4xoKVk53GoZ742B', 'Chris', 'male'], ['bIHbv24MWmeRgasZH58o', 'Will', 'male'], ['SAz9YHcvj6GT2YYXdXww', 'River', 'neutral'],
    ['CwhRBWXzGAHq8TQ4Fs17', 'Roger', 'male'],
  ];
  return list.map(([id, name, gender]) => ({ provider: 'elevenlabs', voice_id: id, name, gender, languages: ELEVENLABS_MULTILINGUAL, models }));
}

function cartesiaVoices(): Voice[] {
  const models = ['sonic-2', 'sonic-turbo'];
  const list: [string, string, Gender][] = [
    ['f786b574-daa5-4673-aa0c-cbe3e8534c02', 'Katie', 'female'],
    ['79a125e8-cd45-4c13-8a67-188112f4dd22', 'British Lady', 'female'],
    ['a0e99841-438c-4a64-b679-ae501e7d6091', 'Barbershop Man', 'male'],
  ];
  return list.map(([id, name, gender]) => ({ provider: 'cartesia', voice_id: id, name, gender, languages: CARTESIA_LANGUAGES, models }));
}

function localVoices(): Voice[] {
  // A subset of `espeak-ng --voices` (1.51): the widely spoken languages and the main English accents.
  const espeak: [string, string, string][] = [
    ['en-us', 'English (America)', 'en-US'], ['en-gb', 'English (Great Britain)', 'en-GB'],
    ['en-gb-scotland', 'English (Scotland)', 'en-GB'], ['en-gb-x-rp', 'English (Received Pronunciation)', 'en-GB'],
    ['en-029', 'English (Caribbean)', 'en'], ['es', 'Spanish (Spain)', 'es-ES'], ['es-419', 'Spanish (Latin America)', 'es-419'],
    ['fr-fr', 'French (France)', 'fr-FR'], ['fr-be', 'French (Belgium)', 'fr-BE'], ['de', 'German', 'de'], ['it', 'Italian', 'it'],
    ['pt', 'Portuguese (Portugal)', 'pt-PT'], ['pt-br', 'Portuguese (Brazil)', 'pt-BR'], ['nl', 'Dutch', 'nl'], ['sv', 'Swedish', 'sv'],
    ['da', 'Danish', 'da'], ['nb', 'Norwegian Bokmål', 'nb'], ['fi', 'Finnish', 'fi'], ['pl', 'Polish', 'pl'], ['cs', 'Czech', 'cs'],
    ['ru', 'Russian', 'ru'], ['uk', 'Ukrainian', 'uk'], ['el', 'Greek', 'el'], ['tr', 'Turkish', 'tr'], ['ar', 'Arabic', 'ar'],
    ['he', 'Hebrew', 'he'], ['hi', 'Hindi', 'hi'], ['id', 'Indonesian', 'id'], ['vi', 'Vietnamese (Northern)', 'vi'],
    ['ja', 'Japanese', 'ja'], ['ko', 'Korean', 'ko'], ['cmn', 'Chinese (Mandarin)', 'zh'],
  ];
  return [
    ...espeak.map(([id, name, lang]): Voice => ({ provider: 'local', voice_id: id, name: `eSpeak NG ${name}`, gender: 'male', languages: [lang], models: ['espeak-ng'] })),
    { provider: 'local', voice_id: 'us-slt-hts', name: 'Festival SLT (HTS)', gender: 'female', languages: ['en-US'], models: ['festival'] },
  ];
}

export const VOICES: readonly Voice[] = Object.freeze([...openaiVoices(), ...deepgramVoices(), ...elevenlabsVoices(), ...cartesiaVoices(), ...localVoices()]);

/**
 * Whether two BCP-47 tags are compatible: equal (ignoring case), or one is a prefix of the other at a `-`
 * boundary (`en` matches `en-US`; `en-US` does not match `en-GB`).
 */
export function languageMatches(a: string, b: string): boolean {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return x === y || x.startsWith(`${y}-`) || y.startsWith(`${x}-`);
}

export function listVoices(filter: { provider?: string | undefined; language?: string | undefined } = {}): Voice[] {
  return VOICES.filter(
    (v) => (!filter.provider || v.provider === filter.provider) && (!filter.language || v.languages.some((l) => languageMatches(l, filter.language!))),
  );
}

export const findVoice = (provider: string, voiceId: string): Voice | undefined => VOICES.find((v) => v.provider === provider && v.voice_id === voiceId);
export const ttsModelsOf = (provider: string): string[] => TTS_MODELS.filter((m) => m.provider === provider).map((m) => m.model);
export const sttModelsOf = (provider: string): string[] => STT_MODELS.filter((m) => m.provider === provider).map((m) => m.model);

/** A problem with a transcriber or tts object; `loc` is relative to the object. */
export interface SpeechProblem {
  loc: string[];
  msg: string;
  type: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

const quoteList = (vals: string[]) =>
  vals.length <= 1 ? vals.map((v) => `'${v}'`).join('') : `${vals.slice(0, -1).map((v) => `'${v}'`).join(', ')} or '${vals[vals.length - 1]}'`;

function enumProblem(field: string, input: unknown, allowed: string[]): SpeechProblem {
  const expected = quoteList(allowed);
  return { loc: [field], msg: `Input should be ${expected}`, type: 'enum', input, ctx: { expected } };
}

export interface TranscriberConfig {
  provider: SttProvider;
  model: string;
  language: string;
}

export interface TtsConfig {
  provider: TtsProvider;
  model: string;
  voice_id: string;
}

/** Checks a transcriber against the catalogue (the provider itself is checked by the schema). */
export function transcriberProblems(t: TranscriberConfig): SpeechProblem[] {
  const models = sttModelsOf(t.provider);
  const model = STT_MODELS.find((m) => m.provider === t.provider && m.model === t.model);
  if (!model) return models.length ? [enumProblem('model', t.model, models)] : [];
  if (!model.languages.some((l) => languageMatches(l, t.language))) {
    return [{
      loc: ['language'],
      msg: `Language '${t.language}' is not supported by ${t.provider} model '${t.model}'`,
      type: 'unsupported_language',
      input: t.language,
      ctx: { supported: model.languages },
    }];
  }
  return [];
}

/** Checks a tts object against the catalogue: the model exists for the provider, and the voice for the model. */
export function ttsProblems(t: TtsConfig): SpeechProblem[] {
  const models = ttsModelsOf(t.provider);
  if (!models.length) return [];
  const problems: SpeechProblem[] = [];
  if (!models.includes(t.model)) problems.push(enumProblem('model', t.model, models));
  const voice = findVoice(t.provider, t.voice_id);
  if (!voice) {
    problems.push({
      loc: ['voice_id'],
      msg: `Unknown ${t.provider} voice '${t.voice_id}'; see GET /v1/voices?provider=${t.provider}`,
      type: 'unknown_voice',
      input: t.voice_id,
    });
  } else if (models.includes(t.model) && !voice.models.includes(t.model)) {
    problems.push({
      loc: ['voice_id'],
      msg: `Voice '${t.voice_id}' is not available with model '${t.model}'; it works with ${quoteList(voice.models)}`,
      type: 'unknown_voice',
      input: t.voice_id,
      ctx: { models: voice.models },
    });
  }
  return problems;
}
