// Provider resolution and cross-field checks of LLM model records.
import { ValidationFailure } from '../../http/errors.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import type { LlmProvider } from '../../../../schemas/models.ts';

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
 *   - with `base_url`: `openai` (OpenAI-compatible server); an explicit other provider is a 422;
 *   - else an explicit `provider`, which must agree with the model id's family when the family is known;
 *   - else the family of the model id; `fallback` (the stored provider, on PATCH) when the family is unknown;
 *   - else a 422 at `model`.
 * Anthropic models take a temperature of at most 1.
 */
export function resolveProvider(input: ProviderInput, fallback?: LlmProvider): LlmProvider {
  const problems: ValidationErrorItem[] = [];
  const family = providerOfModel(input.model);
  let provider: LlmProvider | null = null;
  if (input.base_url) {
    if (input.provider && input.provider !== 'openai') {
      problems.push({
        loc: ['body', 'base_url'],
        msg: "base_url is for OpenAI-compatible servers and requires provider 'openai'",
        type: 'value_error',
        input: input.base_url,
      });
    }
    provider = 'openai';
  } else if (input.provider) {
    if (family && family !== input.provider) {
      problems.push({
        loc: ['body', 'model'],
        msg: `Model '${input.model}' belongs to provider '${family}', not '${input.provider}'`,
        type: 'value_error',
        input: input.model,
      });
    }
    provider = input.provider;
  } else {
    provider = family ?? fallback ?? null;
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
