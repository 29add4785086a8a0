// Agent defaults, and the checks of `transcriber` and `tts` against the speech catalogue (shared/voices.ts).
import { ValidationFailure } from '../../http/errors.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { AGENT_DEFAULTS } from '../../../../schemas/agents.ts';
import {
  STT_DEFAULT_MODEL,
  transcriberProblems,
  TTS_DEFAULTS,
  ttsProblems,
  type SttProvider,
  type TranscriberConfig,
  type TtsConfig,
  type TtsProvider,
} from '../../../../shared/voices.ts';
import { delaysFor, resolveTurnTaking as completeTurnTaking, type TurnTaking, type TurnTakingInput } from '../../../../shared/turn-taking.ts';

// The defaults live with the schema (one definition for the API, its docs and the worker).
export { AGENT_DEFAULTS };

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface TranscriberInput {
  provider: SttProvider;
  model?: string | undefined;
  language?: string | undefined;
}
export interface TtsInput {
  provider: TtsProvider;
  model?: string | undefined;
  voice_id?: string | undefined;
}

/**
 * Fills a transcriber's defaults: the provider's default model, and the agent's language. `given` says whether
 * the body carried a transcriber: a language problem of a defaulted transcriber is reported at the agent's
 * `language`, the field the caller actually set.
 */
export function resolveTranscriber(input: TranscriberInput | undefined, agentLanguage: string, problems: ValidationErrorItem[]): TranscriberConfig {
  const t: TranscriberConfig = {
    provider: input?.provider ?? AGENT_DEFAULTS.transcriber.provider,
    model: input?.model ?? (input ? STT_DEFAULT_MODEL[input.provider] : AGENT_DEFAULTS.transcriber.model),
    language: input?.language ?? agentLanguage,
  };
  for (const p of transcriberProblems(t)) {
    const atAgentLanguage = p.loc[0] === 'language' && input?.language === undefined;
    problems.push({ loc: atAgentLanguage ? ['body', 'language'] : ['body', 'transcriber', ...p.loc], msg: p.msg, type: p.type, input: p.input, ...(p.ctx ? { ctx: p.ctx } : {}) });
  }
  return t;
}

/** Fills a tts object's defaults (the provider's default model and voice) and checks it against the catalogue. */
export function resolveTts(input: TtsInput | undefined, problems: ValidationErrorItem[]): TtsConfig {
  const defaults = input ? TTS_DEFAULTS[input.provider] : AGENT_DEFAULTS.tts;
  const t: TtsConfig = {
    provider: input?.provider ?? AGENT_DEFAULTS.tts.provider,
    model: input?.model ?? defaults.model,
    voice_id: input?.voice_id ?? defaults.voice_id,
  };
  for (const p of ttsProblems(t)) problems.push({ loc: ['body', 'tts', ...p.loc], msg: p.msg, type: p.type, input: p.input, ...(p.ctx ? { ctx: p.ctx } : {}) });
  return t;
}

/**
 * The stored `turn_taking` after a create or update (docs/decisions.md, "Turn-taking"): a given object is merged
 * over the defaults, with delays it lacks taken from responsiveness; no object but a given `responsiveness`
 * re-derives the delays of the current one; neither keeps the current one (the defaults on create).
 */
export function resolveTurnTaking(
  input: TurnTakingInput | undefined,
  responsiveness: { value: number; given: boolean },
  current: TurnTaking | undefined,
  problems: ValidationErrorItem[],
  at: (string | number)[] = ['body', 'turn_taking'],
): TurnTaking {
  if (!input) {
    if (!current) return completeTurnTaking(undefined, responsiveness.value).value;
    return responsiveness.given ? { ...current, ...delaysFor(responsiveness.value, current.detection) } : current;
  }
  const { value, problems: found } = completeTurnTaking(input, responsiveness.value);
  for (const p of found) problems.push({ ...p, loc: [...at, ...p.loc] });
  return value;
}

export function variableProblems(vars: Record<string, unknown> | undefined, problems: ValidationErrorItem[]): void {
  for (const name of Object.keys(vars ?? {})) {
    if (!VARIABLE_NAME.test(name)) {
      problems.push({
        loc: ['body', 'dynamic_variables', name],
        msg: 'Variable names are letters, digits and _, not starting with a digit (as in {{name}} placeholders)',
        type: 'value_error',
        input: name,
      });
    }
  }
}

export function throwIfAny(problems: ValidationErrorItem[]): void {
  if (problems.length) throw new ValidationFailure(problems);
}
