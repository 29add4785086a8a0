// The text model of a realtime agent's side tasks. A realtime (speech-to-speech) model answers in speech and takes
// no chat completions, but a call has text work beside the conversation: a phone menu's choice of key, a warm
// transfer's brief to the person taking the call, a squad hand-off's summary. For those, the worker builds the same
// provider's small text model at the same endpoint, under the same key and egress rules as any text LLM
// (createLLM): a tenant's base_url gets only the org's key, the platform's key goes only to the operator's endpoint.
// Building it connects to nothing; a side task that fails falls back as it does for the pipeline (the keyword menu
// rules, the fixed brief, the conversation's last lines).
import type { llm } from '@livekit/agents';
import type { LlmSettings, ProviderKeys } from '../../../schemas/internal.ts';
import { createLLM } from './index.ts';

/** The provider's text model for side tasks, by realtime provider (docs/guides/agents-and-turn-taking.md). */
export const SIDE_TASK_MODELS: Record<string, string> = { openai: 'gpt-4.1-mini', gemini: 'gemini-2.5-flash' };

/** The side-task model of a realtime record, or null where none can be built (no key; a provider without one). */
export function createSideLlm(config: LlmSettings, keys: ProviderKeys, env: Record<string, string | undefined> = process.env): llm.LLM | null {
  const model = SIDE_TASK_MODELS[config.provider];
  if (!model) return null;
  try {
    return createLLM({ provider: config.provider, model, base_url: config.base_url, temperature: null, max_tokens: null, realtime: null }, keys, env);
  } catch {
    return null;
  }
}
