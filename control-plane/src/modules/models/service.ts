// Provider resolution and cross-field checks of LLM model records.
import { ValidationFailure } from '../../http/errors.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { GEMINI_LIVE_VOICES, realtimeDefaults, type LlmProvider, type RealtimeSettings, type RealtimeSettingsInput } from '../../../../schemas/models.ts';

// Families of model ids whose provider is unambiguous.
const FAMILIES: [RegExp, LlmProvider][] = [
  [/^(gpt-|chatgpt-|o[134](-|$))/, 'openai'],
  [/^gemini-/, 'gemini'],
  [/^claude-/, 'anthropic'],
];

export function providerOfModel(model: string): LlmProvider | null {
  for (const [re, provider] of FAMILIES) if (re.test(model)) return provider;
  return null;
}

export interface ProviderInput {
  model: string;
  provider?: LlmProvider | undefined;
  base_url?: string | null | undefined;
  temperature: number;
}

/**
 * The provider of a model record:
 *   - with `base_url`: `openai` (OpenAI-compatible server); an explicit other provider is a 422 (`local`, the
 *     platform's own local model, takes none);
 *   - else an explicit `provider`, which must agree with the model id's family when the family is known (`local`
 *     serves any id);
 *   - else the family of the model id; `fallback` (the stored provider, on PATCH) when the family is unknown or
 *     the stored provider is `local`;
 *   - else a 422 at `model`.
 * Anthropic models take a temperature of at most 1.
 */
export function resolveProvider(input: ProviderInput, fallback?: LlmProvider): LlmProvider {
  const problems: ValidationErrorItem[] = [];
  const family = providerOfModel(input.model);
  let provider: LlmProvider | null = null;
  if (input.base_url) {
    if (input.provider === 'local') {
      problems.push({
        loc: ['body', 'base_url'],
        msg: "provider 'local' is the platform's own local model (LOCAL_LLM_BASE_URL or LLM_MODEL_PATH) and takes no base_url; for a server of your own give base_url with provider 'openai'",
        type: 'value_error',
        input: input.base_url,
      });
    } else if (input.provider && input.provider !== 'openai') {
      problems.push({
        loc: ['body', 'base_url'],
        msg: "base_url is for OpenAI-compatible servers and requires provider 'openai'",
        type: 'value_error',
        input: input.base_url,
      });
    }
    provider = 'openai';
  } else if (input.provider) {
    if (family && family !== input.provider && input.provider !== 'local') {
      problems.push({
        loc: ['body', 'model'],
        msg: `Model '${input.model}' belongs to provider '${family}', not '${input.provider}'`,
        type: 'value_error',
        input: input.model,
      });
    }
    provider = input.provider;
  } else {
    // A local model keeps its provider: a local server's model ids often look like a cloud family's (gpt-oss:20b).
    provider = (fallback === 'local' ? fallback : family) ?? fallback ?? null;
    if (!provider) {
      problems.push({
        loc: ['body', 'model'],
        msg: "Cannot infer the provider of this model id; set 'provider', or 'base_url' for an OpenAI-compatible server",
        type: 'value_error',
        input: input.model,
      });
    }
  }
  if (provider === 'anthropic' && input.temperature > 1) {
    problems.push({
      loc: ['body', 'temperature'],
      msg: 'Input should be less than or equal to 1 for anthropic models',
      type: 'less_than_equal',
      input: input.temperature,
      ctx: { le: 1 },
    });
  }
  if (problems.length) throw new ValidationFailure(problems);
  return provider!;
}

export interface RealtimeInput {
  model: string;
  provider: LlmProvider;
  /** The body's `realtime`: absent (undefined), null, or settings to merge over `current`. */
  realtime: RealtimeSettingsInput | null | undefined;
  /** The stored settings (PATCH). */
  current?: RealtimeSettings | null;
  temperature?: number | undefined;
  max_tokens?: number | null | undefined;
}

/**
 * A model id of a realtime family: OpenAI's (gpt-realtime, gpt-4o-realtime-preview, gpt-4o-mini-realtime-preview) for
 * any provider (another provider's then answers 422), Gemini Live's (gemini-live-2.5-flash-preview,
 * gemini-2.5-flash-native-audio-preview-09-2025) for gemini.
 */
export const looksRealtime = (model: string, provider?: LlmProvider) =>
  /realtime/i.test(model) || (provider === 'gemini' && /(^|[^a-z])live([^a-z]|$)|native-audio/i.test(model));

const REALTIME_PROVIDERS: LlmProvider[] = ['openai', 'gemini'];
const GEMINI_VOICE = new Map(GEMINI_LIVE_VOICES.map((v) => [v.toLowerCase(), v]));

/**
 * The realtime settings of a model record, or null for a text LLM:
 *   - the body's `realtime` (merged over the stored settings and the provider's defaults), null to clear it;
 *   - absent: the stored settings, else the provider's defaults when the model id is of a realtime family;
 *   - providers openai (OpenAI Realtime) and gemini (Gemini Live) have realtime models: another is a 422 at `realtime`;
 *   - `eagerness` is semantic_vad's and `silence_duration_ms` server_vad's: either with another kind is a 422;
 *   - gemini: `semantic_vad` and `eagerness` are OpenAI's (422 naming the field); the voice is one of Gemini Live's
 *     (any case, stored as Google writes it);
 *   - `temperature` and `max_tokens` of the request do not apply to a realtime model (422 naming them).
 */
export function resolveRealtime(input: RealtimeInput): RealtimeSettings | null {
  const problems: ValidationErrorItem[] = [];
  const defaults = realtimeDefaults(input.provider);
  let settings: RealtimeSettings | null;
  if (input.realtime === null) settings = null;
  else if (input.realtime) settings = { ...defaults, ...(input.current ?? {}), ...input.realtime };
  else if (input.current !== undefined) settings = input.current;
  else settings = looksRealtime(input.model, input.provider) ? { ...defaults } : null;
  if (!settings) return null;
  const at = (field: string, msg: string, value: unknown, loc = ['body', 'realtime', field]) => problems.push({ loc, msg, type: 'value_error', input: value });
  if (!REALTIME_PROVIDERS.includes(input.provider)) {
    at('', `realtime models are served for providers 'openai' (OpenAI Realtime) and 'gemini' (Gemini Live), not '${input.provider}'`, input.realtime ?? input.model, ['body', input.realtime ? 'realtime' : 'model']);
  }
  if (input.provider === 'gemini') {
    if (settings.turn_detection === 'semantic_vad') {
      at('turn_detection', "semantic_vad is OpenAI's; Gemini Live takes 'server_vad' (its automatic activity detection) or 'platform'", settings.turn_detection);
    }
    if (input.realtime?.eagerness !== undefined) at('eagerness', "eagerness is OpenAI's semantic_vad setting; Gemini Live has none", input.realtime.eagerness);
    // Stored as the default: nothing reads it for gemini.
    settings.eagerness = 'auto';
    const voice = GEMINI_VOICE.get(settings.voice.toLowerCase());
    if (voice) settings.voice = voice;
    else at('voice', `not a Gemini Live voice: one of ${GEMINI_LIVE_VOICES.join(', ')}`, settings.voice);
  } else if (input.realtime?.eagerness !== undefined && settings.turn_detection !== 'semantic_vad') {
    at('eagerness', "eagerness applies to turn_detection 'semantic_vad' only", input.realtime.eagerness);
  }
  if (input.realtime?.silence_duration_ms != null && settings.turn_detection !== 'server_vad') {
    at('silence_duration_ms', "silence_duration_ms applies to turn_detection 'server_vad' only", input.realtime.silence_duration_ms);
  }
  if (settings.turn_detection !== 'server_vad') settings.silence_duration_ms = null;
  if (input.temperature !== undefined) at('', 'a realtime model takes no temperature (the provider samples its own speech)', input.temperature, ['body', 'temperature']);
  if (input.max_tokens != null) at('', 'a realtime model takes no max_tokens', input.max_tokens, ['body', 'max_tokens']);
  if (problems.length) throw new ValidationFailure(problems);
  return settings;
}
