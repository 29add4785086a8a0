// The two kinds of model an agent test talks to:
//  - the agent's own LLM, with its tools, through the OpenAI client pointed at the model's endpoint. The
//    endpoint and key follow the one rule of shared/providers.ts (llmEndpoint: a tenant's base_url never gets
//    a platform key) and requests go through the model egress guard (shared/model-egress.ts), as in the
//    workers. Anthropic and Gemini are reached through their OpenAI-compatible endpoints (docs/decisions/020-agent-tests.md).
//  - the judge, which also plays a persona's caller and labels the outcome: picked as the post-call analysis
//    picks its model (calls/analysis.ts, chooseTarget): the agent's model with the org's key, else the
//    platform's analysis model; null when neither can be used.
import OpenAI from 'openai';
import type { Services } from '../../services.ts';
import { complete, llmEndpoint, localEndpoint, missingKeyError, ProviderConfigError, type LlmEndpoint, type LlmProvider } from '../../../../shared/providers.ts';
import { checkModelUrl, modelEgressOptions, modelFetch } from '../../../../shared/model-egress.ts';
import { createGuardedAgent, describeRequestError, guardedRequest } from '../../../../shared/ssrf.ts';
import { chooseTarget, platformEnv, type Target } from '../calls/analysis.ts';
import { capText, MESSAGE_CONTENT_MAX, MODEL_ANSWER_MAX_BYTES, TOOL_ARGUMENTS_MAX, TOOL_CALLS_PER_ANSWER_MAX } from '../../../../shared/text-caps.ts';

export interface ChatToolCall {
  id: string;
  name: string;
  /** The raw JSON text the model produced. */
  arguments: string;
}
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] }
  | { role: 'tool'; tool_call_id: string; content: string };
export interface ChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** One reply of the agent's LLM: text, tool calls, or both. */
export type AgentLlm = (messages: ChatMessage[], tools: ChatTool[], signal: AbortSignal) => Promise<{ text: string; toolCalls: ChatToolCall[] }>;
/** One completion of the judge model (system and user text in, text out). */
export type JudgeLlm = (system: string, user: string, signal: AbortSignal) => Promise<string>;

export interface AgentModelConfig {
  provider: LlmProvider | 'local';
  model: string;
  base_url: string | null;
  temperature: number | null;
  max_tokens: number | null;
}

/** Where each provider's OpenAI-compatible chat API lives, relative to the base URL llmEndpoint gives. */
const COMPAT_PATH: Record<LlmProvider, string> = { openai: '', anthropic: '/v1', gemini: '/openai' };

/** The agent's LLM. Throws a ProviderConfigError when no key can be used for it. */
export function agentLlm(services: Services, model: AgentModelConfig, keys: Partial<Record<LlmProvider, string>>): AgentLlm {
  const env = platformEnv(services);
  let endpoint: LlmEndpoint;
  if (model.provider === 'local') {
    const local = localEndpoint(env);
    if (!local) {
      throw new ProviderConfigError(
        'a local model answers text-mode tests through LOCAL_LLM_BASE_URL (an OpenAI-compatible server) set on the control plane; with LLM_MODEL_PATH alone, run the tests in voice mode',
        'local_model_missing',
      );
    }
    endpoint = local;
  } else {
    endpoint = llmEndpoint(model.provider, model.base_url, keys, env);
    if (!endpoint.tenant && !endpoint.apiKey) throw missingKeyError(model.provider);
  }
  checkModelUrl(endpoint, env);
  const client = new OpenAI({
    baseURL: endpoint.baseUrl + COMPAT_PATH[endpoint.provider],
    // The SDK needs a string; a tenant's server may need none (llmEndpoint gives null then).
    apiKey: endpoint.apiKey ?? 'not-needed',
    maxRetries: 0,
    timeout: 60_000,
    // A whole answer (no streaming), read to at most 256 KiB once decoded, as the analysis reads its model's.
    fetch: modelFetch(endpoint, env, MODEL_ANSWER_MAX_BYTES),
    // The SDK would add the platform's OPENAI_ORG_ID / OPENAI_PROJECT_ID from the environment.
    organization: null,
    project: null,
  });
  return async (messages, tools, signal) => {
    const res = await client.chat.completions.create(
      {
        model: model.model,
        messages: messages,
        ...(tools.length ? { tools } : {}),
        ...(model.temperature !== null ? { temperature: model.temperature } : {}),
        ...(model.max_tokens ? { max_completion_tokens: model.max_tokens } : {}),
      },
      { signal },
    );
    const msg = res.choices[0]?.message;
    const calls = msg?.tool_calls ?? [];
    // Each tool call runs a tool and is stored: a bounded number per answer (a tenant's server could send 100k).
    if (calls.length > TOOL_CALLS_PER_ANSWER_MAX)
      throw new Error(`the model answered with ${calls.length} tool calls; at most ${TOOL_CALLS_PER_ANSWER_MAX} are taken from one answer`);
    const toolCalls = calls.flatMap((t) =>
      t.type === 'function'
        ? [{ id: capText(String(t.id), 200), name: capText(String(t.function.name), 200), arguments: capText(String(t.function.arguments ?? ''), TOOL_ARGUMENTS_MAX) }]
        : [],
    );
    return { text: capText(msg?.content ?? '', MESSAGE_CONTENT_MAX), toolCalls };
  };
}

export interface Judge {
  llm: JudgeLlm;
  /** `provider/model`, shown with the results. */
  model: string;
}

/** The judge of an agent's tests, or null when no model can be used (with the reason). */
export async function judgeFor(services: Services, orgId: string, agentId: string): Promise<Judge | { unavailable: string }> {
  // The offline profile calls no model after a call, and none judges either.
  if (services.config.ANALYSIS_MODE === 'extractive') {
    return {
      unavailable:
        'no model is configured to judge: the platform runs the offline profile (ANALYSIS_MODE=extractive), where no model is called; ' +
        "set ANALYSIS_MODE to 'agent' or 'model' to judge with the agent's model or the platform's analysis model",
    };
  }
  let t: Target | null;
  try {
    t = await chooseTarget(services, { org_id: orgId, agent_id: agentId });
  } catch (err) {
    t = null;
    if (!(err instanceof Error)) throw err;
  }
  if (!t) {
    const c = services.config;
    return {
      unavailable:
        "no model is configured to judge: add a credential (POST /v1/integrations) for the provider of the agent's model, " +
        `or give the platform a key for its analysis model (${c.ANALYSIS_PROVIDER}/${c.ANALYSIS_MODEL})`,
    };
  }
  const target = t;
  const ssrf = modelEgressOptions(target, platformEnv(services));
  return {
    model: `${target.provider}/${target.model}`,
    llm: async (system, user, signal) => {
      const agent = createGuardedAgent(ssrf);
      try {
        return await complete(
          { provider: target.provider, model: target.model, baseUrl: target.baseUrl, apiKey: target.apiKey, system, user, maxTokens: 600 },
          async (url, headers, body) => {
            if (signal.aborted) throw signal.reason;
            const res = await guardedRequest(agent, url, ssrf, { method: 'POST', headers, body, timeoutMs: 60_000, maxResponseBytes: 256 * 1024 });
            return { status: res.status, body: res.body };
          },
        );
      } catch (err) {
        if (err instanceof Error && (err.name === 'CompletionError' || err instanceof ProviderConfigError)) throw err;
        throw new Error(describeRequestError(err).message, { cause: err });
      } finally {
        await agent.close().catch(() => {});
      }
    },
  };
}
