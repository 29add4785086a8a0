// The bodies POSTed to webhooks, as JSON Schema: the OpenAPI document lists them under `webhooks`, so a client
// generated from it types the events it receives. shared/events.ts has the same shapes as TypeScript types (its
// EventPayloads); test/spec-client.test.ts checks the events the platform emits against these schemas.
import { Type, DateTime, Nullable, StringEnum, Uuid, type TSchema } from './common.ts';
import { SUPERVISION_ACTIONS } from './supervision.ts';
import { CALL_EVENTS } from '../shared/events.ts';

const envelope = (event: string) => ({
  id: Uuid({ description: 'The event id, equal to the `webhook-id` header: the same on every delivery attempt' }),
  event: Type.Literal(event),
  created_at: DateTime({ description: 'When the event happened' }),
});

const AgentVersion = Type.Optional(
  Nullable(Type.Integer({ minimum: 1, description: 'The agent version the call ran; null when it never reached a session' })),
);

const Number_ = (what: string) =>
  Nullable(Type.String({ description: `${what}; null on web calls, which have no phone leg` }));

const Outcome = Nullable(
  Type.String({
    description:
      'The analysis\' outcome label, or null when there is none: the analysis is off, failed, not finished yet (then ' +
      '`call.analyzed` brings it), or extractive (no model: a summary, no label). `analysis.status` and `analysis.method` say which',
  }),
);
const Summary = Nullable(
  Type.String({
    description: 'The analysis\' summary, or null when there is none: the analysis is off, failed or not finished yet (`analysis.status` says which)',
  }),
);

/** The analysis as the Call resource has it (`status`, `method`), so an event says why its outcome is null. */
const EventAnalysis = Type.Object(
  {
    summary: Summary,
    outcome: Outcome,
    status: Type.Union([Type.Literal('pending'), Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed'), Type.Literal('skipped')], {
      description: '`pending`/`running`: not finished when the event was sent; `skipped`: off (ANALYSIS_MODE=off, or the call keeps no content) or the call never connected; `failed`; `completed`',
    }),
    method: Nullable(
      Type.String({ description: '`agent_model`, `analysis_model`, `extractive` (no model: a summary without an outcome), `rule`; null until it ran' }),
    ),
  },
  { title: 'EventAnalysis', additionalProperties: false },
);

const Message = Type.Object(
  { role: Type.Union([Type.Literal('agent'), Type.Literal('user')]), content: Type.String() },
  { title: 'EventMessage', additionalProperties: true },
);

const event = (name: string, title: string, description: string, fields: Record<string, TSchema>) =>
  Type.Object({ ...envelope(name), ...fields }, { title, description, additionalProperties: false });

/** The call events, by name: each delivery's JSON body. */
export const CALL_EVENT_SCHEMAS = {
  'call.started': event('call.started', 'CallStartedEvent', 'The call connected and the agent began its session', {
    call_id: Uuid(),
    agent_id: Uuid(),
    agent_version: AgentVersion,
    to_number: Number_('The number called'),
    from_number: Number_('The calling number'),
  }),
  'call.ended': event('call.ended', 'CallEndedEvent', 'The call ended. Waits up to CALL_ENDED_ANALYSIS_WAIT_SECONDS for the analysis, then goes out with what is known', {
    call_id: Uuid(),
    agent_id: Uuid(),
    agent_version: AgentVersion,
    status: Type.String({ description: 'The call status: `completed` or `failed`' }),
    duration_seconds: Nullable(Type.Integer({ minimum: 0 })),
    to_number: Number_('The number called'),
    from_number: Number_('The calling number'),
    outcome: Outcome,
    ai_summary: Summary,
    analysis: EventAnalysis,
  }),
  'call.analyzed': event('call.analyzed', 'CallAnalyzedEvent', 'The analysis finished (status `completed`); after `call.ended` and `transcript.final`', {
    call_id: Uuid(),
    agent_id: Uuid(),
    agent_version: AgentVersion,
    outcome: Outcome,
    ai_summary: Nullable(Type.String({ description: 'The summary; null only when the analysis produced none' })),
    analysis: EventAnalysis,
  }),
  'call.failed': event('call.failed', 'CallFailedEvent', 'The call never connected (busy, no answer, stopped before it connected, no worker...)', {
    call_id: Uuid(),
    agent_id: Uuid(),
    agent_version: AgentVersion,
    to_number: Number_('The number called'),
    from_number: Number_('The calling number'),
    reason: Type.String({ description: 'A carrier-style label: `busy`, `no_answer`, `canceled` (stopped before it connected), `agent_unavailable`, `configuration_error`...' }),
    error: Nullable(
      Type.Object({ code: Type.String(), message: Type.String() }, { additionalProperties: false, description: 'Why, when the platform knows; else null' }),
    ),
  }),
  'call.recording.available': event('call.recording.available', 'CallRecordingAvailableEvent', 'The recording is stored', {
    call_id: Uuid(),
    recording_url: Type.String({ description: 'Signed when the delivery attempt is sent, valid RECORDING_URL_TTL_SECONDS (4 hours)' }),
    recording_api_url: Type.String({ description: 'GET /v1/calls/{id}/recording: needs the API key, never expires' }),
  }),
  'transcript.partial': event('transcript.partial', 'TranscriptPartialEvent', 'The conversation so far; a later one supersedes it', {
    call_id: Uuid(),
    messages: Type.Array(Message),
  }),
  'transcript.final': event('transcript.final', 'TranscriptFinalEvent', 'The whole conversation; after `call.ended`', {
    call_id: Uuid(),
    messages: Type.Array(Message),
  }),
  'call.handoff': event('call.handoff', 'CallHandoffEvent', "A squad's call passed from one agent to another", {
    call_id: Uuid(),
    agent_id: Uuid(),
    squad_id: Uuid(),
    from_agent_id: Uuid(),
    to_agent_id: Uuid(),
    reason: Nullable(Type.String()),
    context: Type.Union([Type.Literal('full'), Type.Literal('summary')]),
    index: Type.Integer({ minimum: 1 }),
    at: DateTime(),
  }),
  'call.supervised': event('call.supervised', 'CallSupervisedEvent', 'A person acted on the live call (POST /v1/calls/{id}/control or /listen): the entry added to its `supervision[]`', {
    call_id: Uuid(),
    agent_id: Uuid(),
    seq: Type.Integer({ minimum: 1 }),
    action: StringEnum(SUPERVISION_ACTIONS),
    actor_type: Type.String(),
    actor_id: Type.String(),
    at: DateTime(),
    details: Type.Record(Type.String(), Type.Unknown()),
  }),
} satisfies Record<(typeof CALL_EVENTS)[number], TSchema>;
