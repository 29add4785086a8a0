// `warnings` of agents and models: why their calls would fail now, as the organisation and the platform are set up
// (shared/agent-problems.ts says what is checked). They are computed on every answer of create, update and get by
// id, never stored: a credential added later, or an operator's new setting, clears them at the next read.
// The platform's side is this control plane's environment, which the deployment gives the workers too (keys,
// LLM_PRIVATE_HOSTS, LOCAL_LLM_BASE_URL, LLM_MODEL_PATH: docs/guides/deployment-and-operations.md, "Configuration").
import type { Db } from '../../db/types.ts';
import type { Config } from '../../config.ts';
import { modelProblems, speechProblems, type AgentProblem, type ModelFacts } from '../../../../shared/agent-problems.ts';
import { credentialProviders, readinessFacts } from './queries.ts';

type Env = Record<string, string | undefined>;

/** The settings the checks read, under the names the workers read them by. */
export function platformReadinessEnv(c: Config): Env {
  return {
    OPENAI_API_KEY: c.OPENAI_API_KEY,
    ANTHROPIC_API_KEY: c.ANTHROPIC_API_KEY,
    GOOGLE_API_KEY: c.GOOGLE_API_KEY,
    GEMINI_API_KEY: c.GEMINI_API_KEY,
    DEEPGRAM_API_KEY: c.DEEPGRAM_API_KEY,
    ELEVEN_API_KEY: c.ELEVEN_API_KEY,
    ELEVENLABS_API_KEY: c.ELEVENLABS_API_KEY,
    CARTESIA_API_KEY: c.CARTESIA_API_KEY,
    LOCAL_LLM_BASE_URL: c.LOCAL_LLM_BASE_URL,
    LLM_MODEL_PATH: c.LLM_MODEL_PATH,
    SSRF_ALLOWLIST: c.SSRF_ALLOWLIST,
    LLM_PRIVATE_HOSTS: c.LLM_PRIVATE_HOSTS,
    NODE_ENV: c.NODE_ENV,
  };
}

export async function modelWarnings(db: Db, config: Config, orgId: string, model: ModelFacts): Promise<AgentProblem[]> {
  return modelProblems(model, await credentialProviders(db, orgId), platformReadinessEnv(config));
}

/** An agent's: its model's (at `llm_id`), then its speech's. */
export async function agentWarnings(
  db: Db,
  config: Config,
  orgId: string,
  agent: { llm_id: string; transcriber: { provider: string }; tts: { provider: string } },
): Promise<AgentProblem[]> {
  const { providers: keys, model } = await readinessFacts(db, orgId, agent.llm_id);
  const env = platformReadinessEnv(config);
  return [...(model ? modelProblems(model, keys, env, 'agent') : []), ...speechProblems(agent, keys, env)];
}
