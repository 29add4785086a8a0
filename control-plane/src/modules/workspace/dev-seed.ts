// The development organisation's first agent, made on the platform's very first start (`npm start`), so that a
// newcomer has something to talk to in the playground at once. It uses what the platform has (shared/llm-
// availability.ts): a cloud LLM when there is a key (OpenAI first), else the platform's local model (provider
// `local`: LOCAL_LLM_BASE_URL's first model, or the GGUF file of LLM_MODEL_PATH); speech from a cloud key when there
// is one, else this machine's (pocketsphinx, festival). With nothing at all it is still made on the local model, and
// its `warnings` say what it waits for: setting LOCAL_LLM_BASE_URL or LLM_MODEL_PATH then makes it talk as it is.
import type { Sql } from 'postgres';
import type { Config } from '../../config.ts';
import { AGENT_DEFAULTS } from '../../../../schemas/agents.ts';
import { STT_DEFAULT_MODEL, TTS_DEFAULTS } from '../../../../shared/voices.ts';
import { STARTER_MODELS, ggufLabel, localServerModels, platformCloudLlms } from '../../../../shared/llm-availability.ts';
import { insertModel, type ModelWrite } from '../models/queries.ts';
import { insertAgent, type AgentWrite } from '../agents/queries.ts';
import { platformReadinessEnv } from '../agents/warnings.ts';
import { writeAudit } from '../audit-events/queries.ts';

export interface SeededAgent {
  agent_id: string;
  agent_name: string;
  model_id: string;
  transcriber: { provider: string };
  tts: { provider: string };
  /** In words: the model and speech it uses. */
  uses: string;
}

const SYSTEM_PROMPT =
  'You are the first voice agent of a new vap platform, talking with its developer. Be friendly and brief: answer in one or two ' +
  'short sentences, and offer to explain how to give you a prompt, tools or a knowledge base of their own.';
const FIRST_MESSAGE = "Hello! I'm your first vap agent. What would you like to try?";

/** The model the agent starts on, and what it is in words. */
async function chooseModel(config: Config): Promise<{ model: Pick<ModelWrite, 'provider' | 'model'>; uses: string }> {
  const env = platformReadinessEnv(config);
  const [cloud] = platformCloudLlms(env);
  if (cloud) return { model: { provider: cloud.provider, model: STARTER_MODELS[cloud.provider] }, uses: `${cloud.provider} ${STARTER_MODELS[cloud.provider]} (${cloud.keyVar})` };
  // The worker runs a GGUF file before a local server (media-worker/src/providers/index.ts): so does the label.
  if (config.LLM_MODEL_PATH) return { model: { provider: 'local', model: ggufLabel(config.LLM_MODEL_PATH) }, uses: `the local model file (LLM_MODEL_PATH)` };
  if (config.LOCAL_LLM_BASE_URL) {
    const models = await localServerModels(config.LOCAL_LLM_BASE_URL).catch(() => []);
    // No model listed (none pulled yet, or the server is down now): Ollama's usual first one; PATCH the model to change it.
    const name = models[0] ?? 'llama3.2';
    return { model: { provider: 'local', model: name }, uses: `${name} on the local server (LOCAL_LLM_BASE_URL ${config.LOCAL_LLM_BASE_URL})` };
  }
  return { model: { provider: 'local', model: 'llama3.2' }, uses: 'the local model, which this platform does not have yet (see the warnings)' };
}

/** Speech from a cloud key when there is one, else this machine's. */
function chooseSpeech(config: Config): { transcriber: AgentWrite['transcriber']; tts: AgentWrite['tts']; uses: string } {
  const stt: AgentWrite['transcriber'] = config.DEEPGRAM_API_KEY
    ? { provider: 'deepgram', model: STT_DEFAULT_MODEL.deepgram, language: 'en-US' }
    : config.OPENAI_API_KEY
      ? { provider: 'openai', model: STT_DEFAULT_MODEL.openai, language: 'en-US' }
      : { provider: 'local', model: STT_DEFAULT_MODEL.local, language: 'en-US' };
  // festival's HTS voice: the best of this machine's voices (docs/guides/getting-started.md, "Your first agent";
  // docs/decisions/012-voices-and-speech-catalogue.md).
  const tts: AgentWrite['tts'] = config.OPENAI_API_KEY ? { provider: 'openai', ...TTS_DEFAULTS.openai } : { provider: 'local', model: 'festival', voice_id: 'us-slt-hts' };
  return { transcriber: stt, tts, uses: `${stt.provider} speech-to-text, ${tts.provider} ${tts.model} voice` };
}

/** Makes the model and the agent (one short transaction, after the local server was asked for its models). */
export async function seedDevAgent(sql: Sql, config: Config, orgId: string): Promise<SeededAgent> {
  const { model, uses } = await chooseModel(config);
  const speech = chooseSpeech(config);
  const { webhook_id: _w, ...defaults } = AGENT_DEFAULTS;
  return sql.begin(async (tx) => {
    const m = await insertModel(tx, orgId, { name: 'First agent model', ...model, base_url: null, system_prompt: SYSTEM_PROMPT, temperature: 0.7, max_tokens: null, tool_ids: [], knowledge_base_ids: [], realtime: null });
    const a = await insertAgent(tx, orgId, {
      ...defaults,
      webhook_id: null,
      name: 'First agent',
      llm_id: m.id,
      transcriber: speech.transcriber,
      tts: speech.tts,
      first_message: FIRST_MESSAGE,
      // A first conversation has long pauses while the developer thinks: no hang-up after the default 30 s.
      silence_timeout_seconds: 120,
      turn_taking: { ...AGENT_DEFAULTS.turn_taking },
      end_call_phrases: [...AGENT_DEFAULTS.end_call_phrases],
      dynamic_variables: {},
      metadata: { seeded_by: 'npm start' },
    });
    for (const [resourceType, resourceId, action] of [['llm_model', m.id, 'llm_model.create'], ['agent', a.id, 'agent.create']] as const) {
      await writeAudit(tx, { orgId, actorType: 'system', actorId: null, action, resourceType, resourceId });
    }
    return { agent_id: a.id, agent_name: a.name, model_id: m.id, transcriber: a.transcriber, tts: a.tts, uses: `${uses}; ${speech.uses}` };
  });
}
