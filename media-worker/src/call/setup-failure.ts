// A call whose agent cannot be built fails at once, with its cause (docs/decisions/037-day-one.md, "A call that cannot start").
// The call's LLM, STT and TTS are built before anything else of the session: a part that cannot be built (no key
// for its provider, a model host the egress rule refuses, no local model, a missing GGUF file, a voice this worker
// lacks) becomes a CallSetupError naming the part, the cause and the fix, in the words of the API's `warnings`
// (shared/agent-problems.ts). The job then reports `failed` (the call fails with end_reason `configuration_error`
// and the control plane tells the web page or hangs up the phone leg) and leaves, instead of leaving the caller to
// the 30 s dispatch timeout. The worker's log keeps the original error; the report never carries a key or an
// operator's file path.
import type { llm, stt, tts } from '@livekit/agents';
import type { CallConfig } from '../../../schemas/internal.ts';
import type { CallReporter } from '../../../shared/internal-api.ts';
import type { Logger } from '../../../shared/logger.ts';
import {
  LOCAL_MODEL_MISSING,
  missingKeyMessage,
  refusedHostMessage,
  type AgentProblem,
} from '../../../shared/agent-problems.ts';
import { PLATFORM_KEY_ENV } from '../../../shared/providers.ts';
import { UnknownVoiceError } from '../../../shared/speech/local-tts.ts';
import { ProviderConfigError, createLLM, createSTT, createTTS } from '../providers/index.ts';
import { ModelFileError } from '../providers/llama-llm.ts';
import { createRealtimeModel, isRealtime } from '../providers/realtime.ts';
import { createSideLlm } from '../providers/side-llm.ts';

type Env = Record<string, string | undefined>;
export type AgentPart = 'llm' | 'stt' | 'tts';

const PARTS: Record<AgentPart, { what: string; field: string }> = {
  llm: { what: "The agent's model", field: 'llm_id' },
  stt: { what: "The agent's speech-to-text (transcriber)", field: 'transcriber.provider' },
  tts: { what: "The agent's voice (tts)", field: 'tts.provider' },
};

/** The most a reported message says (the internal API's bound). */
const MAX_MESSAGE = 2000;

export class CallSetupError extends Error {
  override name = 'CallSetupError';
  readonly problem: AgentProblem;
  constructor(problem: AgentProblem, cause: unknown) {
    super(problem.message, { cause });
    this.problem = problem;
  }
}

const providerOf = (part: AgentPart, config: Pick<CallConfig, 'llm' | 'agent'>) =>
  part === 'llm' ? config.llm.provider : part === 'stt' ? config.agent.transcriber.provider : config.agent.tts.provider;

/** What went wrong building one part, as the call's error: a code, the cause and fix in words, the field at fault. */
export function describeSetupError(part: AgentPart, err: unknown, config: Pick<CallConfig, 'llm' | 'agent'>): AgentProblem {
  const { what, field } = PARTS[part];
  const provider = providerOf(part, config);
  const text = err instanceof Error ? err.message : String(err);
  const problem = (code: AgentProblem['code'], message: string, at = field): AgentProblem => ({ code, message: message.slice(0, MAX_MESSAGE), field: at });
  if (err instanceof ProviderConfigError) {
    if (err.code === 'provider_key_missing' && provider in PLATFORM_KEY_ENV) {
      return problem('provider_key_missing', missingKeyMessage(what, provider as keyof typeof PLATFORM_KEY_ENV));
    }
    if (err.code === 'local_model_missing') return problem('local_model_missing', `${what} uses provider local and ${LOCAL_MODEL_MISSING}`);
    if (err.code === 'unknown_provider') return problem('unknown_provider', `${what}: ${text}; this worker does not know it: update the workers to the control plane's version`);
    return problem('invalid_configuration', `${what} cannot be used: ${text}`);
  }
  if (err instanceof Error && err.name === 'SsrfBlockedError' && part === 'llm') {
    const reason = text.replace(/\s*\(an operator can allow[^)]*\)\s*$/, '');
    return problem('model_host_refused', refusedHostMessage(what, config.llm.base_url ?? 'unknown', reason), 'llm_id');
  }
  if (err instanceof ModelFileError) {
    // The path is the operator's: it stays in the worker's log.
    return problem(
      'model_file_missing',
      `${what} uses the platform's local model file (LLM_MODEL_PATH), which is missing, unreadable or not a GGUF file on this worker: the operator must point LLM_MODEL_PATH at a GGUF file`,
    );
  }
  if (err instanceof UnknownVoiceError) return problem('voice_unavailable', `${what}: ${text}; choose a voice of GET /v1/voices`, 'tts.voice_id');
  return problem('invalid_configuration', `${what} cannot be set up: ${text}`);
}

export interface CallModels {
  /** The text LLM of the pipeline, or a realtime (speech-to-speech) model that hears and speaks itself. */
  llm: llm.LLM | llm.RealtimeModel;
  /** None with a realtime model. */
  stt: stt.STT | null;
  tts: tts.TTS | null;
  /** A realtime model's text model for side tasks (providers/side-llm.ts); the pipeline's LLM does its own. */
  sideLlm?: llm.LLM | null;
}

/** The call's LLM, STT and TTS; throws a CallSetupError for the first part that cannot be built (the others are closed). */
export function buildCallModels(config: CallConfig, env: Env = process.env): CallModels {
  const keys = config.provider_keys;
  const built: { close?: () => Promise<void>; aclose?: () => Promise<void> }[] = [];
  const part = <T extends object>(name: AgentPart, make: () => T): T => {
    try {
      const made = make();
      built.push(made);
      return made;
    } catch (err) {
      for (const b of built) void (b.aclose ?? b.close)?.call(b).catch(() => {});
      throw new CallSetupError(describeSetupError(name, err, config), err);
    }
  };
  // A realtime model is the whole voice loop: no STT or TTS is built (the agent's stored ones are not used).
  const llmConfig = config.llm;
  if (isRealtime(llmConfig)) return { llm: part('llm', () => createRealtimeModel(llmConfig, keys, env)), stt: null, tts: null, sideLlm: createSideLlm(llmConfig, keys, env) };
  // The model first: it is what most often lacks a key or a host.
  const model = part('llm', () => createLLM(config.llm, keys, env));
  const speechToText = part('stt', () => createSTT(config.agent.transcriber, keys, env));
  const voice = part('tts', () => createTTS(config.agent.tts, keys, { speed: config.agent.speed, emotions: config.agent.emotions, language: config.agent.language }, env));
  return { llm: model, stt: speechToText, tts: voice };
}

/**
 * Reports that the call cannot start and waits (bounded) for the control plane to take it: the job then leaves the
 * room. Returns the job's end reason.
 */
export async function failCallSetup(err: CallSetupError, o: { reporter: CallReporter; logger: Pick<Logger, 'error'>; flushTimeoutMs?: number }): Promise<string> {
  const { problem } = err;
  o.logger.error({ code: problem.code, field: problem.field, err: (err.cause as Error | undefined)?.message ?? err.message }, "call cannot start: the agent's configuration cannot be built");
  o.reporter.failedToStart({ end_reason: 'configuration_error', error: problem });
  if (!(await o.reporter.flush(o.flushTimeoutMs ?? 10_000))) o.logger.error({ code: problem.code }, 'the failed report did not reach the control plane');
  return 'configuration error';
}
