// Post-call analysis: which model writes the summary and outcome, and the offline fallback.
//  - ANALYSIS_MODE=agent (default): the agent's own provider and model (OpenAI or compatible, Anthropic,
//    Gemini) with the org's key for that provider, else the platform's (never the platform's for a model's own
//    base_url: shared/providers.ts, llmEndpoint), or the platform's local server (LOCAL_LLM_BASE_URL) for a
//    `local` model; if no key (or no local server) exists, the configured analysis model
//    (ANALYSIS_PROVIDER / ANALYSIS_MODEL); if that has no key either, an extractive summary. A realtime
//    (speech-to-speech) agent model answers no chat completions: its calls take the configured analysis model.
//  - ANALYSIS_MODE=model: always the configured analysis model (no key: the analysis fails, with the reason).
//  - ANALYSIS_MODE=extractive: the offline profile; no model is called (see `extractiveSummary`).
//  - ANALYSIS_MODE=off: nothing is written; the call says so (analysis.status `skipped` with the reason).
// The call records which (analysis.method, analysis.model). Requests go through the model egress rule
// (shared/model-egress.ts), the same one the workers' LLM clients follow.
import type { Services } from '../../services.ts';
import { createGuardedAgent, guardedRequest, describeRequestError } from '../../../../shared/ssrf.ts';
import { modelEgressOptions } from '../../../../shared/model-egress.ts';
import { complete, llmEndpoint, LLM_BASE_URLS, localEndpoint, ProviderConfigError, type LlmEndpoint, type LlmProvider } from '../../../../shared/providers.ts';
import { openKey } from '../credentials/service.ts';
import { agentModel, newestCredential, type CallRow } from './queries.ts';
import { OUTCOME_PATTERN } from '../../../../schemas/calls.ts';
import { capText, stripCodeFence, SUMMARY_MAX } from '../../../../shared/text-caps.ts';

export type AnalysisMethod = 'agent_model' | 'analysis_model' | 'extractive' | 'rule';

/** A failed analysis, with the model it was made with (recorded on the call). */
export class AnalysisError extends Error {
  override name = 'AnalysisError';
  readonly method: AnalysisMethod;
  readonly model: string | null;
  constructor(message: string, method: AnalysisMethod, model: string | null, cause?: unknown) {
    super(message, { cause });
    this.method = method;
    this.model = model;
  }
}

export interface AnalysisResult {
  summary: string;
  /** Null when the method cannot label an outcome (extractive). */
  outcome: string | null;
  method: AnalysisMethod;
  /** `provider/model` for the model methods. */
  model: string | null;
}

export const ANALYSIS_PROMPT =
  'You analyse phone and web calls between a voice agent and a person. Answer with a JSON object ' +
  '{"summary": "<two or three sentences on what happened>", "outcome": "<a short lowercase_underscore label of the result, ' +
  'such as appointment_booked, question_answered, not_interested, callback_requested, voicemail, no_conversation>"}.';

// The label PATCH /v1/calls/{id} accepts: an analysed outcome is one a client could have set.
const OUTCOME_RE = new RegExp(OUTCOME_PATTERN);

/** Turns whatever the model said into a lowercase_underscore label (letters and digits). */
export function normaliseOutcome(raw: unknown): string {
  const label = String(raw ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 60)
    .replace(/_+$/, '');
  return OUTCOME_RE.test(label) ? label : 'unknown';
}

type Message = { role: string; content: string };

const quote = (s: string, max = 160) => {
  const t = s.replace(/\s+/g, ' ').trim();
  return `"${t.length > max ? `${t.slice(0, max - 1)}…` : t}"`;
};

/**
 * The offline summary, made from the transcript alone: how many messages each side said, the caller's first
 * words (and last, when different) and the agent's last words, each cut at 160 characters. It invents
 * nothing, so it names no outcome (left null).
 */
export function extractiveSummary(messages: Message[]): string {
  const user = messages.filter((m) => m.role === 'user');
  const agent = messages.filter((m) => m.role !== 'user');
  const parts = [`${messages.length} messages (${user.length} from the caller, ${agent.length} from the agent).`];
  if (user.length) parts.push(`The caller said: ${quote(user[0]!.content)}.`);
  if (user.length > 1) parts.push(`Last from the caller: ${quote(user.at(-1)!.content)}.`);
  if (agent.length) parts.push(`The agent ended with: ${quote(agent.at(-1)!.content)}.`);
  return parts.join(' ');
}

export interface Target extends LlmEndpoint {
  model: string;
  method: 'agent_model' | 'analysis_model';
}

export function platformEnv(services: Services): Record<string, string | undefined> {
  const c = services.config;
  return {
    OPENAI_API_KEY: c.OPENAI_API_KEY,
    ANTHROPIC_API_KEY: c.ANTHROPIC_API_KEY,
    GOOGLE_API_KEY: c.GOOGLE_API_KEY,
    GEMINI_API_KEY: c.GEMINI_API_KEY,
    OPENAI_BASE_URL: c.OPENAI_BASE_URL,
    ANTHROPIC_BASE_URL: c.ANTHROPIC_BASE_URL,
    GEMINI_BASE_URL: c.GEMINI_BASE_URL,
    SSRF_ALLOWLIST: c.SSRF_ALLOWLIST,
    LLM_PRIVATE_HOSTS: c.LLM_PRIVATE_HOSTS,
    LOCAL_LLM_BASE_URL: c.LOCAL_LLM_BASE_URL,
    NODE_ENV: c.NODE_ENV,
  };
}

async function orgKey(services: Services, orgId: string, provider: LlmProvider): Promise<string | undefined> {
  const cred = await newestCredential(services.sql, orgId, provider);
  return cred ? openKey(services.secrets, cred.id, { ciphertext: cred.ciphertext, keyVersion: cred.key_version }) : undefined;
}

/**
 * The model target, or null when no key exists for it. `urls.tenant` is the model's own base_url (only the
 * org's key goes there, or none); `urls.operator` is ANALYSIS_BASE_URL, the operator's like OPENAI_BASE_URL.
 */
async function target(
  services: Services,
  orgId: string,
  provider: LlmProvider,
  model: string,
  urls: { tenant?: string | null; operator?: string | null },
  method: Target['method'],
): Promise<Target | null> {
  const env = platformEnv(services);
  if (urls.operator) env[LLM_BASE_URLS[provider].env] = urls.operator;
  let endpoint: LlmEndpoint;
  try {
    endpoint = llmEndpoint(provider, urls.tenant, { [provider]: await orgKey(services, orgId, provider) }, env);
  } catch (err) {
    if (!(err instanceof ProviderConfigError)) throw err;
    return null;
  }
  // A tenant's server may need no key; the provider's own API always does.
  if (!endpoint.apiKey && !endpoint.tenant) return null;
  return { ...endpoint, model, method };
}

/**
 * Picks the model per ANALYSIS_MODE; null means no model can be used (offline). Throws for `model` mode without a
 * key. Agent tests pick their judge and simulated caller the same way (agent-tests/models.ts).
 */
export async function chooseTarget(services: Services, call: Pick<CallRow, 'org_id' | 'agent_id'>): Promise<Target | null> {
  const c = services.config;
  const configured = () => target(services, call.org_id, c.ANALYSIS_PROVIDER, c.ANALYSIS_MODEL, { operator: c.ANALYSIS_BASE_URL }, 'analysis_model');
  if (c.ANALYSIS_MODE === 'model') {
    const t = await configured();
    if (!t) throw new AnalysisError(`analysis failed: no ${c.ANALYSIS_PROVIDER} key for the analysis model (ANALYSIS_MODE=model)`, 'analysis_model', `${c.ANALYSIS_PROVIDER}/${c.ANALYSIS_MODEL}`);
    return t;
  }
  const m = await agentModel(services.sql, call.agent_id);
  if (m?.realtime) return await configured();
  if (m?.provider === 'local') {
    // The platform's local model, where this control plane reaches it (a GGUF file is the workers' alone).
    const local = localEndpoint(platformEnv(services));
    return local ? { ...local, model: m.model, method: 'agent_model' } : await configured();
  }
  return (m && (await target(services, call.org_id, m.provider, m.model, { tenant: m.base_url }, 'agent_model'))) || (await configured());
}

export async function analyseCall(services: Services, call: CallRow): Promise<AnalysisResult> {
  const messages = (call.messages ?? []).filter((m) => m.content?.trim()) as Message[];
  if (!messages.length) return { summary: 'The call ended before any conversation took place.', outcome: 'no_conversation', method: 'rule', model: null };
  const t = services.config.ANALYSIS_MODE === 'extractive' ? null : await chooseTarget(services, call);
  if (!t) return { summary: extractiveSummary(messages), outcome: null, method: 'extractive', model: null };
  const transcript = messages.map((m) => `${m.role === 'agent' ? 'Agent' : 'Caller'}: ${m.content}`).join('\n');
  const ssrf = modelEgressOptions(t, platformEnv(services));
  const agent = createGuardedAgent(ssrf);
  try {
    const text = await complete(
      { provider: t.provider, model: t.model, baseUrl: t.baseUrl, apiKey: t.apiKey, system: ANALYSIS_PROMPT, user: transcript, json: true, maxTokens: 512 },
      async (url, headers, body) => {
        const res = await guardedRequest(agent, url, ssrf, { method: 'POST', headers, body, timeoutMs: 60_000, maxResponseBytes: 256 * 1024 });
        return { status: res.status, body: res.body };
      },
    );
    let parsed: { summary?: unknown; outcome?: unknown };
    try {
      // Some models wrap the JSON in a code fence.
      parsed = JSON.parse(stripCodeFence(text)) as { summary?: unknown; outcome?: unknown };
    } catch {
      parsed = { summary: text, outcome: 'unknown' };
    }
    // Cut before anything reads it further (redaction, storage, webhooks): a tenant's model server can answer
    // with 256 KiB of summary (docs/security.md, "Bounded text").
    const summary = capText(String(parsed.summary ?? '').trim(), SUMMARY_MAX) || 'No summary.';
    return { summary, outcome: normaliseOutcome(parsed.outcome), method: t.method, model: `${t.provider}/${t.model}` };
  } catch (err) {
    const message = err instanceof Error && err.name === 'CompletionError' ? err.message : describeRequestError(err).message;
    throw new AnalysisError(`analysis failed: ${message}`, t.method, `${t.provider}/${t.model}`, err);
  } finally {
    await agent.close().catch(() => {});
  }
}
