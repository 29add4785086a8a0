// What `npm start` finds to make agents talk, and how it says it (docs/guides/getting-started.md, "Your first
// agent"): the platform's cloud keys, the operator's local OpenAI-compatible server (LOCAL_LLM_BASE_URL, or an
// Ollama answering on its default port, which is then used), and a GGUF file (LLM_MODEL_PATH). Speech needs no key:
// this machine's pocketsphinx and festival serve agents with `local` speech.
import { checkGgufFile } from '../../shared/gguf.ts';
import { OLLAMA_DEFAULT_URL, localServerModels, platformCloudLlms, type CloudLlm } from '../../shared/llm-availability.ts';

type Env = Record<string, string | undefined>;

export interface LlmFindings {
  cloud: { provider: CloudLlm; keyVar: string }[];
  /** The local server agents of provider `local` reach, with its models; `found`: Ollama on its default port, unasked. */
  server: { url: string; models: string[]; found: boolean } | null;
  /** LLM_MODEL_PATH, when it names a GGUF file. */
  gguf: string | null;
  /** Settings given that do not work, in words. */
  problems: string[];
  /** What the control plane and the worker get on top of the environment (LOCAL_LLM_BASE_URL of a found Ollama). */
  env: Record<string, string>;
}

export interface DetectOptions {
  /** The models of an OpenAI-compatible server (tests give their own). */
  listModels?: (url: string) => Promise<string[]>;
  /** Where to look for an Ollama when LOCAL_LLM_BASE_URL is unset; null: do not look. */
  ollamaUrl?: string | null;
}

export async function detectLlm(env: Env, opts: DetectOptions = {}): Promise<LlmFindings> {
  const list = opts.listModels ?? ((url: string) => localServerModels(url));
  const found: LlmFindings = { cloud: platformCloudLlms(env), server: null, gguf: null, problems: [], env: {} };
  if (env.LLM_MODEL_PATH) {
    try {
      checkGgufFile(env.LLM_MODEL_PATH);
      found.gguf = env.LLM_MODEL_PATH;
    } catch (err) {
      found.problems.push(`LLM_MODEL_PATH: ${(err as Error).message}`);
    }
  }
  if (env.LOCAL_LLM_BASE_URL) {
    try {
      found.server = { url: env.LOCAL_LLM_BASE_URL, models: await list(env.LOCAL_LLM_BASE_URL), found: false };
    } catch (err) {
      found.problems.push(`LOCAL_LLM_BASE_URL ${env.LOCAL_LLM_BASE_URL} does not work: ${(err as Error).message}`);
    }
  } else {
    const ollama = opts.ollamaUrl === undefined ? OLLAMA_DEFAULT_URL : opts.ollamaUrl;
    const models = ollama ? await list(ollama).catch(() => null) : null;
    if (ollama && models) {
      found.server = { url: ollama, models, found: true };
      found.env.LOCAL_LLM_BASE_URL = ollama;
    }
  }
  if (found.server && !found.server.models.length) found.problems.push(`the local server at ${found.server.url} lists no model: pull one (ollama pull llama3.2)`);
  return found;
}

/** Whether an agent on the platform's local model can talk (a GGUF file, or a local server with a model). */
export const localLlmReady = (f: LlmFindings) => !!f.gguf || !!f.server?.models.length;

/** The banner's lines about the language model. */
export function llmLines(f: LlmFindings): string[] {
  const lines: string[] = [];
  for (const c of f.cloud) lines.push(`LLM:           ${c.provider} (${c.keyVar})`);
  if (f.gguf) lines.push(`LLM:           local model file ${f.gguf} (LLM_MODEL_PATH; provider "local")`);
  if (f.server) {
    const how = f.server.found ? 'found running, used as LOCAL_LLM_BASE_URL' : 'LOCAL_LLM_BASE_URL';
    const models = f.server.models.length ? `models ${f.server.models.slice(0, 5).join(', ')}${f.server.models.length > 5 ? ', ...' : ''}` : 'no model yet';
    lines.push(`LLM:           local server ${f.server.url} (${how}; ${models}; provider "local")`);
  }
  if (!lines.length) lines.push('LLM:           none: agents cannot talk yet (see below)');
  for (const p of f.problems) lines.push(`               ${p}`);
  return lines;
}

/**
 * Printed when no language model is there: what makes agents talk, with the exact commands. The development agent
 * is on the local model, so either local way makes it talk as it is.
 */
export function noLlmParagraph(modelId: string | null, apiUrl: string, apiKey = '$KEY'): string {
  const patch = modelId
    ? `curl -X PATCH -H "Authorization: Bearer ${apiKey}" -H 'content-type: application/json' ${apiUrl}/v1/models/${modelId} -d '{"provider":"openai","model":"gpt-4o-mini"}'`
    : 'point its model at the provider (docs/guides/getting-started.md, "Your first agent")';
  return [
    '',
    '  No language model is available, so agents cannot talk yet. The first agent uses the local model; give it one and start again:',
    '    a local server (Ollama):  ollama serve & ollama pull llama3.2   then  npm start   (found on 127.0.0.1:11434; elsewhere: LOCAL_LLM_BASE_URL=http://<host>:<port>/v1 npm start)',
    '    a GGUF file:              LLM_MODEL_PATH=/path/to/model.gguf npm start',
    `    or a cloud key:           OPENAI_API_KEY=sk-... npm start   then  ${patch}`,
    "  Speech needs no key: the agent listens with pocketsphinx and speaks with festival. docs/guides/getting-started.md, 'Your first agent'.",
    '',
  ].join('\n');
}
