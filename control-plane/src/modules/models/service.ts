// Provider resolution and cross-field checks of LLM model records.
import { ValidationFailure } from '../../http/errors.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { REALTIME_DEFAULTS, type LlmProvider, type RealtimeSettings, type RealtimeSettingsInput } from '../../../../schemas/models.ts';

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

/** A model id of a realtime family (gpt-realtime, gpt-4o-realtime-preview, gpt-4o-mini-realtime-preview). */
export const looksRealtime = (model: string) => /realtime/i.test(model);

/**
 * The realtime settings of a model record, or null for a text LLM:
 *   - the body's `realtime` (merged over the stored settings and the defaults), null to clear it;
 *   - absent: the stored settings, else the defaults when the model id is of a realtime family;
 *   - only provider openai has a realtime model here (Gemini Live is not served yet): otherwise a 422 at `realtime`;
 *   - `eagerness` is semantic_vad's and `silence_duration_ms` server_vad's: either with another kind is a 422;
 *   - `temperature` and `max_tokens` of the request do not apply to a realtime model (422 naming them).
 */
export function resolveRealtime(input: RealtimeInput): RealtimeSettings | null {
  const problems: ValidationErrorItem[] = [];
  let settings: RealtimeSettings | null;
  if (input.realtime === null) settings = null;
  else if (input.realtime) settings = { ...REALTIME_DEFAULTS, ...(input.current ?? {}), ...input.realtime };
  else if (input.current !== undefined) settings = input.current;
  else settings = looksRealtime(input.model) ? { ...REALTIME_DEFAULTS } : null;
  if (!settings) return null;
  const at = (field: string, msg: string, value: unknown, loc = ['body', 'realtime', field]) => problems.push({ loc, msg, type: 'value_error', input: value });
  if (input.provider !== 'openai') {
    at('', `realtime models are served for provider 'openai' (OpenAI Realtime) only, not '${input.provider}'`, input.realtime ?? input.model, ['body', input.realtime ? 'realtime' : 'model']);
  }
  if (input.realtime?.eagerness !== undefined && settings.turn_detection !== 'semantic_vad') {
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
