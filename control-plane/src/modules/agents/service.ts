// Agent defaults, and the checks of `transcriber` and `tts` against the speech catalogue (shared/voices.ts).
import { ValidationFailure } from '../../http/errors.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { AGENT_DEFAULTS, type UpdateAgent } from '../../../../schemas/agents.ts';
import { modelIsRealtime, type AgentRow, type AgentWrite } from './queries.ts';
import type { Db } from '../../db/types.ts';
import type { Auth } from '../../auth/service.ts';
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
import { delaysFor, detectionProblem, resolveTurnTaking as completeTurnTaking, type TurnTaking, type TurnTakingInput } from '../../../../shared/turn-taking.ts';

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
 * The stored `turn_taking` after a create or update (docs/decisions/010-turn-taking.md): a given object is merged
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

/**
 * turn_taking.detection `stt` needs a transcriber with an end of turn of its own (shared/turn-taking.ts,
 * detectionProblem). The problem is reported at the field the request set: the detection if it gave one, else
 * the transcriber's model (a transcriber changed under a stored `stt`).
 */
export function detectionProblems(
  turnTaking: Pick<TurnTaking, 'detection'>,
  transcriber: TranscriberConfig,
  given: { detection: boolean },
  problems: ValidationErrorItem[],
  at: { turnTaking: (string | number)[]; transcriber: (string | number)[] } = { turnTaking: ['body', 'turn_taking'], transcriber: ['body', 'transcriber'] },
): void {
  const msg = detectionProblem(turnTaking, transcriber);
  if (!msg) return;
  problems.push(
    given.detection
      ? { loc: [...at.turnTaking, 'detection'], msg, type: 'value_error', input: turnTaking.detection }
      : { loc: [...at.transcriber, 'model'], msg, type: 'value_error', input: transcriber.model },
  );
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

/** An agent row's writable fields (its own fields, as a version holds them). */
export function writeOf(row: AgentRow): AgentWrite {
  const { id: _id, created_at: _c, updated_at: _u, ...stored } = row as AgentRow & Record<string, unknown>;
  return stored;
}

/**
 * The fields after a partial update of `cur` (PATCH /v1/agents/{id} and its draft): lists and objects replace whole,
 * transcriber and tts get their defaults, turn_taking merges; throws the 422 listing every problem.
 */
export function mergeUpdate(cur: AgentWrite, body: UpdateAgent): AgentWrite {
  const problems: ValidationErrorItem[] = [];
  const language = body.language ?? cur.language;
  const transcriber = body.transcriber ? resolveTranscriber(body.transcriber, language, problems) : cur.transcriber;
  const tts = body.tts ? resolveTts(body.tts, problems) : cur.tts;
  const responsiveness = { value: body.responsiveness ?? cur.responsiveness, given: body.responsiveness !== undefined };
  const turn_taking = resolveTurnTaking(body.turn_taking, responsiveness, cur.turn_taking, problems);
  detectionProblems(turn_taking, transcriber, { detection: body.turn_taking?.detection !== undefined }, problems);
  variableProblems(body.dynamic_variables, problems);
  throwIfAny(problems);
  return { ...cur, ...body, transcriber, tts, language, turn_taking };
}

/** Who acts, as audit events record it. */
export const actorOf = (auth: Auth) => ({ type: auth.actorType, id: auth.actorId });

/** The fields an agent on a realtime (speech-to-speech) model takes no value for: the model hears and speaks itself. */
const REALTIME_UNUSED = {
  transcriber: "the agent's model is a realtime (speech-to-speech) model, which hears the caller itself: it takes no transcriber (the model's input transcription fills the transcript)",
  tts: "the agent's model is a realtime (speech-to-speech) model, which speaks itself: it takes no tts (set the voice on the model, realtime.voice)",
} as const;

/** A 422 naming each of `transcriber` and `tts` the request sets for an agent whose model is a realtime model. */
export async function checkRealtimeFields(db: Db, orgId: string, llmId: string, body: { transcriber?: unknown; tts?: unknown }): Promise<void> {
  const given = (Object.keys(REALTIME_UNUSED) as (keyof typeof REALTIME_UNUSED)[]).filter((f) => body[f] !== undefined);
  if (!given.length || !(await modelIsRealtime(db, orgId, llmId))) return;
  throwIfAny(given.map((f) => ({ loc: ['body', f], msg: REALTIME_UNUSED[f], type: 'value_error', input: body[f] })));
}
