// Which language model a platform can talk with, as its environment says: a cloud key, the operator's local
// OpenAI-compatible server (LOCAL_LLM_BASE_URL: Ollama, a llama.cpp server) or a GGUF file (LLM_MODEL_PATH). Read by
// `npm start` to say what is there (scripts/stack/llm-detect.ts) and by the first start of a development platform to
// seed an agent that uses it (control-plane/src/modules/workspace/dev-seed.ts). docs/guides/getting-started.md,
// "Your first agent", and docs/decisions/037-day-one.md, "The offline path".
import { PLATFORM_KEY_ENV } from './providers.ts';

type Env = Record<string, string | undefined>;
export type CloudLlm = 'openai' | 'anthropic' | 'gemini';

/** A model to start with on each cloud provider: small, fast, cheap. */
export const STARTER_MODELS: Record<CloudLlm, string> = { openai: 'gpt-4o-mini', anthropic: 'claude-haiku-4-5', gemini: 'gemini-2.5-flash' };

/** The cloud providers the platform has a key for, in this order of preference, with the variable that holds it. */
export function platformCloudLlms(env: Env): { provider: CloudLlm; keyVar: string }[] {
  const out: { provider: CloudLlm; keyVar: string }[] = [];
  for (const provider of ['openai', 'anthropic', 'gemini'] as const) {
    const keyVar = PLATFORM_KEY_ENV[provider].find((name) => !!env[name]);
    if (keyVar) out.push({ provider, keyVar });
  }
  return out;
}

/** Where Ollama listens by default; `npm start` looks there when LOCAL_LLM_BASE_URL is unset. */
export const OLLAMA_DEFAULT_URL = 'http://127.0.0.1:11434/v1';

/** Most model ids read from a server's list: enough to choose one, bounded against a server that lists thousands. */
const MAX_MODELS = 50;

/**
 * The model ids an OpenAI-compatible server lists (`GET {url}/models`), within `timeoutMs`. Throws with the reason
 * (no answer, an error status, an answer that is not a model list). For the operator's own server only: this is no
 * tenant URL, so it does not go through the SSRF guard.
 */
export async function localServerModels(url: string, timeoutMs = 1500): Promise<string[]> {
  const res = await fetch(`${url.replace(/\/+$/, '')}/models`, { signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
  if (!res.ok) throw new Error(`it answered ${res.status} to GET /models`);
  const text = await res.text();
  if (text.length > 1_000_000) throw new Error('its model list is too large');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error('its answer to GET /models is not JSON (is it an OpenAI-compatible server? the URL usually ends in /v1)');
  }
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new Error('its answer to GET /models has no `data` list (is it an OpenAI-compatible server? the URL usually ends in /v1)');
  return data
    .map((m) => (m !== null && typeof m === 'object' ? (m as { id?: unknown }).id : null))
    .filter((id): id is string => typeof id === 'string' && id.length > 0 && id.length <= 255 && !/\s/.test(id))
    .slice(0, MAX_MODELS);
}

/** The label of a GGUF file's model: its file name without the extension. */
export const ggufLabel = (path: string) => (path.split('/').pop() ?? path).replace(/\.gguf$/i, '').slice(0, 255).replace(/\s+/g, '-') || 'local';
