// The worker's reports of a call to the control plane (`/internal/v1/calls/{id}/...`), part of the internal API
// (schemas/internal.ts re-exports them). Strict, and every text bounded by shared/text-caps.ts: the control
// plane redacts and stores what they carry, so a longer text is refused (422) rather than read; the worker cuts
// its reports to the same caps before it sends them (media-worker/src/session/privacy.ts).
import { Type, DateTime, Strict, StringEnum, Nullable, type Static } from './common.ts';
import { MessageMetrics, RECORDING_CONSENT_RESULTS } from './calls.ts';
import type { CallLatency as SharedCallLatency } from '../shared/latency.ts';
import { AGENT_PROBLEM_CODES } from '../shared/agent-problems.ts';
import { MESSAGE_CONTENT_MAX, MESSAGES_MAX, TOOL_ARGUMENTS_MAX, TOOL_OUTPUT_MAX } from '../shared/text-caps.ts';
import { WHISPER_MAX } from './supervision.ts';

// ---- Reports from the worker ---------------------------------------------------------------------------------

/** End reasons set by the worker. The control plane adds `api_stop` (stop route) and `worker_lost` (reaper). */
export const END_REASONS = [
  'user_hangup',
  'agent_hangup',
  'silence_timeout',
  'max_duration',
  'voicemail',
  // Outbound phone-menu navigation gave up: no option towards the goal, a prompt heard 3 times, or too many menus.
  'ivr_failed',
  'transferred',
  'api_stop',
  'worker_shutdown',
  'error',
] as const;
export type EndReason = (typeof END_REASONS)[number];

export const Seq = Type.Integer({ minimum: 1, description: 'Per-call report sequence; a repeated seq is acknowledged and ignored' });
const Role = StringEnum(['agent', 'user'] as const);

export const StartedReport = Strict({ seq: Seq, started_at: DateTime(), room_name: Type.Optional(Type.String({ maxLength: 200 })) }, { title: 'StartedReport' });
export type StartedReport = Static<typeof StartedReport>;

export const TranscriptReport = Strict(
  {
    seq: Seq,
    messages: Type.Array(Strict({ role: Role, content: Type.String({ maxLength: MESSAGE_CONTENT_MAX }) }), { maxItems: MESSAGES_MAX }),
  },
  { title: 'TranscriptReport', description: 'The whole conversation so far (not a delta), throttled by the worker' },
);
export type TranscriptReport = Static<typeof TranscriptReport>;

export const LatencySummary = Strict(
  {
    avg_ms: Type.Integer({ minimum: 0 }),
    p50_ms: Type.Integer({ minimum: 0 }),
    min_ms: Type.Integer({ minimum: 0 }),
    max_ms: Type.Integer({ minimum: 0 }),
    samples: Type.Integer({ minimum: 0 }),
  },
  { title: 'LatencySummary' },
);
export type LatencySummary = Static<typeof LatencySummary>;

export const CallLatency = Strict(
  { llm_ttft: LatencySummary, tts_ttfb: LatencySummary, eou_delay: LatencySummary, e2e: LatencySummary },
  { title: 'CallLatency' },
);
export type CallLatency = Static<typeof CallLatency>;
// shared/latency.ts computes these and owns their TypeScript shape; the schemas must describe exactly it.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _sameLatency: Same<CallLatency, SharedCallLatency> = true;

export const EndedMessage = Strict(
  {
    role: Role,
    content: Type.String({ maxLength: MESSAGE_CONTENT_MAX }),
    started_at: Type.Optional(DateTime()),
    ended_at: Type.Optional(DateTime()),
    interrupted: Type.Optional(Type.Boolean()),
    agent_id: Type.Optional(Type.String({ description: "A squad's call: the agent that spoke (agent messages and tool calls)" })),
    metrics: Type.Optional(MessageMetrics),
    supervisor: Type.Optional(
      Strict(
        {
          action: StringEnum(['say', 'whisper', 'takeover'] as const),
          text: Type.Optional(Type.String({ maxLength: WHISPER_MAX })),
        },
        {
          description:
            "A supervisor's part (POST /v1/calls/{id}/control): `say`, the agent said their words; `whisper`, only the model got `text` (the caller heard nothing); `takeover`, a person who took the call over said this in the agent's place",
        },
      ),
    ),
    tool_call: Type.Optional(
      Strict({
        name: Type.String({ maxLength: 200 }),
        arguments: Type.String({ maxLength: TOOL_ARGUMENTS_MAX }),
        output: Type.String({ maxLength: TOOL_OUTPUT_MAX }),
        is_error: Type.Boolean(),
      }),
    ),
  },
  { title: 'EndedMessage' },
);
export type EndedMessage = Static<typeof EndedMessage>;

export const CallUsage = Strict(
  {
    stt_seconds: Type.Number({ minimum: 0 }),
    llm_prompt_tokens: Type.Integer({ minimum: 0 }),
    llm_completion_tokens: Type.Integer({ minimum: 0 }),
    tts_characters: Type.Integer({ minimum: 0 }),
  },
  { title: 'CallUsage' },
);
export type CallUsage = Static<typeof CallUsage>;

export const EndedReport = Strict(
  {
    seq: Seq,
    end_reason: StringEnum(END_REASONS),
    ended_at: DateTime(),
    duration_seconds: Type.Number({ minimum: 0 }),
    messages: Type.Array(EndedMessage, { maxItems: MESSAGES_MAX }),
    usage: CallUsage,
    latency: CallLatency,
    error: Type.Optional(Type.String({ maxLength: 2000, description: 'Short description when end_reason is error' })),
    recording_consent: Type.Optional(
      StringEnum(RECORDING_CONSENT_RESULTS, { description: 'Which recording consent applied (media-worker/src/session/recording-consent.ts)' }),
    ),
    agent_latency: Type.Optional(
      Type.Record(Type.String(), CallLatency, { description: "A squad's call: each agent's latency over its own turns, by agent id" }),
    ),
  },
  { title: 'EndedReport' },
);
export type EndedReport = Static<typeof EndedReport>;
export type { RecordingConsentMode } from './agents.ts';
export type { RecordingConsentResult } from './calls.ts';

/** The worker could not build the call's agent: the call fails at once with its cause (shared/agent-problems.ts). */
export const FailedReport = Strict(
  {
    seq: Seq,
    end_reason: StringEnum(['configuration_error'] as const),
    error: Strict({
      code: StringEnum(AGENT_PROBLEM_CODES),
      message: Type.String({ minLength: 1, maxLength: 2000, description: 'The cause and the fix; shown to the organisation and to a web call\'s caller' }),
      field: Nullable(Type.String({ maxLength: 100, description: 'The part of the agent at fault: `llm_id`, `transcriber.provider`, `tts.provider`...' })),
    }),
  },
  { title: 'FailedReport' },
);
export type FailedReport = Static<typeof FailedReport>;

export const ReportAck = Type.Object(
  { ok: Type.Boolean(), duplicate: Type.Boolean({ description: 'true when this seq was already applied' }) },
  { title: 'ReportAck' },
);
export type ReportAck = Static<typeof ReportAck>;

