import { Type, DateTime, E164, Nullable, Strict, StringEnum, Metadata, Uuid, PathId, ListEnvelope, Pagination, exactlyOneOf, type Static } from './common.ts';
import { agentSettings } from './agents.ts';
import { SupervisionEntry } from './supervision.ts';

export const CALL_STATUSES = ['queued', 'initiated', 'in_progress', 'completed', 'failed'] as const;
export const CALL_TYPES = ['web', 'outbound', 'inbound'] as const;
/** Which recording consent applied to a call (the agent's recording_consent, and the caller's answer). */
export const RECORDING_CONSENT_RESULTS = ['none', 'announced', 'accepted', 'declined'] as const;
export type RecordingConsentResult = (typeof RECORDING_CONSENT_RESULTS)[number];

/** Phone-menu navigation of an outbound call (docs/decisions/035-phone-menu-navigation.md). */
export const IVR_DEFAULTS = { max_menus: 6 } as const;
export const IVR_GOAL_MAX = 500;
const IvrGoal = (description: string) => Type.String({ minLength: 1, maxLength: IVR_GOAL_MAX, description });
const IVR_GOAL_DESCRIPTION =
  'Outbound calls only: the callee is expected to answer with a phone menu, and the agent presses keys (RFC 2833 ' +
  'telephone events) towards this goal, e.g. "reach billing". While it navigates the agent says nothing; once a ' +
  'person answers it starts the conversation as usual (its first_message). It hangs up with end_reason `ivr_failed` ' +
  'when no option leads to the goal, the same prompt is heard 3 times, or after `ivr.max_menus` menus';
const MaxMenus = () =>
  Type.Integer({ minimum: 1, maximum: 20, description: `The most menus answered; one more ends the call (end_reason ivr_failed). Default ${IVR_DEFAULTS.max_menus}` });
export const CallIvr = Type.Object(
  { max_menus: Type.Integer({ minimum: 1, maximum: 20 }) },
  { title: 'CallIvr', description: 'Phone-menu navigation settings of the call, defaults filled in' },
);

const LatencyStat = Type.Object(
  {
    avg_ms: Type.Integer(),
    p50_ms: Type.Integer(),
    min_ms: Type.Integer(),
    max_ms: Type.Integer(),
    samples: Type.Integer(),
  },
  { title: 'LatencyStat' },
);

const CallLatencySummary = Type.Object(
  { llm_ttft: LatencyStat, tts_ttfb: LatencyStat, eou_delay: LatencyStat, e2e: Type.Optional(LatencyStat) },
  { title: 'CallLatencySummary', description: 'Per-turn latency of the call, once it has ended; a measure without turns has samples 0' },
);

export const CallHandoff = Type.Object(
  {
    from_agent_id: Type.String(),
    to_agent_id: Type.String(),
    reason: Nullable(Type.String({ description: "Why, in the handing agent's words (its tool call's `reason`)" })),
    context: StringEnum(['full', 'summary'] as const),
    at: DateTime(),
  },
  { title: 'CallHandoff' },
);

export const TRANSFER_STATUSES = ['ringing', 'answered', 'joined', 'ended', 'busy', 'no_answer', 'failed', 'refused'] as const;
export type TransferStatus = (typeof TRANSFER_STATUSES)[number];

export const CallTransfer = Type.Object(
  {
    id: Uuid(),
    mode: StringEnum(['warm', 'blind'] as const, {
      description: 'warm: a second leg briefed by the agent, then joined; blind: a SIP REFER of the caller (the call ends with end_reason `transferred`)',
    }),
    destination: Type.String({ description: 'The number the second leg dialled (a blind transfer: the number or sip: URI the caller was referred to)' }),
    status: StringEnum(TRANSFER_STATUSES, {
      description:
        '`ringing`, `answered` (the agent is briefing the person), `joined` (caller and person talk), `ended` (a joined or answered leg hung up); ' +
        'or the result of a transfer that did not happen: `busy`, `no_answer`, `failed`, `refused` (the destination policy)',
    }),
    sip_status: Nullable(Type.Integer({ description: 'SIP final response of a failed dial (486 busy, 487/408/480 no answer, ...)' })),
    started_at: DateTime(),
    answered_at: Nullable(DateTime()),
    joined_at: Nullable(DateTime()),
    ended_at: Nullable(DateTime()),
    duration_seconds: Nullable(Type.Integer({ minimum: 0, description: "The second leg's time, from its answer to its end; billed in usage's minutes" })),
    credits_used: Nullable(Type.Number({ description: 'duration_seconds / 60' })),
    cost_cents: Nullable(
      Type.Integer({
        description:
          "The second leg's carrier cost: the outbound rate to the destination times its billed minutes (null: no rate, or not answered). A blind transfer's leg is out of sight once referred: its rate times BLIND_TRANSFER_RESERVED_MINUTES (an estimate)",
      }),
    ),
  },
  { title: 'CallTransfer' },
);
export type CallTransfer = Static<typeof CallTransfer>;

const Ms = () => Nullable(Type.Integer({ minimum: 0 }));
/** The latency of the turn an agent reply ended (null: not measured in that turn, e.g. the first message's LLM). */
export const MessageMetrics = Strict(
  {
    eou_delay_ms: Ms(),
    llm_ttft_ms: Ms(),
    tts_ttfb_ms: Ms(),
    e2e_ms: Ms(),
  },
  {
    title: 'MessageMetrics',
    description:
      "The latency of the turn this agent reply ended: `eou_delay_ms` from the end of the caller's speech to the end-of-turn decision, " +
      '`llm_ttft_ms` the LLM\'s first token, `tts_ttfb_ms` the first synthesized audio, `e2e_ms` the end of the caller\'s speech to the ' +
      "agent's first audio. Null when not measured in that turn (the first message has no caller turn before it).",
  },
);

const Message = Type.Object(
  {
    role: StringEnum(['agent', 'user'] as const),
    content: Type.String(),
    metrics: Type.Optional(MessageMetrics),
  },
  { title: 'CallMessage', additionalProperties: true },
);

/** Why a call failed: the same codes as the `warnings` of agents and models (shared/agent-problems.ts), and the control plane's own. */
export const CallError = Type.Object(
  {
    code: Type.String({
      description:
        'Stable code. With end_reason `configuration_error`: `provider_key_missing`, `model_host_refused`, `local_model_missing`, `model_file_missing`, ' +
        '`unknown_provider`, `voice_unavailable`, `invalid_configuration`. With `dispatch_timeout`: `no_worker`; with `worker_lost` (a worker took the call and left before it started): `worker_lost`; with `dispatch_failed`: `livekit_unreachable`',
      examples: ['provider_key_missing'],
    }),
    message: Type.String({ description: 'The cause and the fix, in words', examples: ["The agent's model uses OpenAI and there is no openai key: add the organisation's openai credential (POST /v1/integrations) or set OPENAI_API_KEY on the platform"] }),
  },
  { title: 'CallError', additionalProperties: false },
);

export const Call = Type.Object(
  {
    id: Uuid(),
    agent_id: Uuid(),
    agent_version: Nullable(
      Type.Integer({ description: 'The agent version the call runs (GET /v1/agents/{id}/versions/{n}); null until its agent session starts, and for a call that never reached one' }),
    ),
    agent_version_source: Nullable(
      StringEnum(['published', 'split', 'pinned'] as const, {
        description: "Why it runs that version: `published`, `split` (the agent's traffic split sent it to its split version) or `pinned` (its number, campaign or request named the version)",
      }),
    ),
    type: StringEnum(CALL_TYPES),
    status: StringEnum(CALL_STATUSES),
    direction: Nullable(StringEnum(['inbound', 'outbound'] as const)),
    to_number: Nullable(Type.String()),
    from_number: Nullable(Type.String()),
    room_name: Nullable(Type.String({ description: 'Real-time room name (web calls)' })),
    carrier_call_sid: Nullable(Type.String()),
    scheduled_at: Nullable(DateTime()),
    variables: Type.Record(Type.String(), Type.Unknown()),
    started_at: Nullable(DateTime()),
    ended_at: Nullable(DateTime()),
    duration_seconds: Nullable(Type.Integer({ minimum: 0 })),
    end_reason: Nullable(
      Type.String({
        description:
          'How the call ended. A call that could not start is `failed` with, among others, `configuration_error` (the worker could not build the agent: ' +
          'see `error`), `dispatch_timeout` (no worker took it) or `dispatch_failed` (LiveKit could not be reached)',
        examples: ['api_stop', 'user_hangup', 'silence_timeout', 'max_duration', 'voicemail', 'ivr_failed', 'configuration_error'],
      }),
    ),
    error: Nullable(CallError),
    outcome: Nullable(Type.String()),
    recording_url: Nullable(Type.String({ description: 'Signed URL valid 4 hours; fetch the call again for a fresh one' })),
    recording_consent: Nullable(
      StringEnum(RECORDING_CONSENT_RESULTS, {
        description:
          "Which recording consent applied: `none` (nothing said, or the call did not record), `announced` (the agent's announcement played), `accepted` or `declined` (the agent asked; the recording ran only after a yes). Null until the call's worker reports it",
      }),
    ),
    transcript: Nullable(Type.Array(Message, { description: 'Deprecated: use messages' })),
    messages: Nullable(Type.Array(Message, { description: 'Full conversation; populated after the call ends' })),
    ai_summary: Nullable(Type.String()),
    analysis: Type.Object(
      {
        outcome: Nullable(Type.String()),
        summary: Nullable(Type.String()),
        status: StringEnum(['pending', 'running', 'completed', 'failed', 'skipped'] as const, { description: 'Progress of the post-call analysis' }),
        error: Nullable(Type.String({ description: 'Why the analysis failed or was skipped, when it was' })),
        method: Nullable(
          StringEnum(['agent_model', 'analysis_model', 'extractive', 'rule'] as const, {
            description:
              "How the summary was made: the agent's own model, the configured analysis model, an extractive summary (offline; no outcome), or a rule (no conversation)",
          }),
        ),
        model: Nullable(Type.String({ description: '`provider/model` of the model that made (or failed to make) the analysis' })),
      },
      { title: 'CallAnalysis' },
    ),
    metadata: Metadata({
      description:
        "Free-form key/value pairs: the caller's own, and on inbound calls the platform's: `phone_number_id` (the number dialled), `routed_via` (`primary`, `fallback` or `default`: the number's agent or squad, its fallback, or the organisation's default agent), `unanswered_by` (the agents whose worker did not take the call before its fallback did) and `standby_agent: true` (answered by an agent already waiting, docs/operations.md)",
    }),
    // anyOf, not Nullable(): the summary keeps its one component, shared with agent_latency's values.
    latency: Type.Union([CallLatencySummary, Type.Null()], {
      description:
        'Per-turn latency, populated once the call has ended. Null means not yet measured: the call is queued, ringing or ' +
        'in progress, or it ended without the media worker reporting (zero would read as a measurement)',
    }),
    credits_used: Nullable(Type.Number({ description: 'duration_seconds / 60' })),
    cost_cents: Nullable(Type.Integer()),
    campaign_id: Nullable(Uuid({ description: 'The campaign this call is an attempt of (POST /v1/campaigns)' })),
    squad_id: Nullable(Uuid({ description: 'The squad the call started on; then `agent_id` is its entry agent, and each agent message names its agent in `agent_id`' })),
    handoffs: Type.Array(CallHandoff, { description: "The squad's hand-offs in this call, in order; [] for a single agent's call" }),
    supervision: Type.Array(SupervisionEntry, {
      description: 'What people did to the call while it ran (POST /v1/calls/{id}/control and /listen), in order; [] when nobody supervised it',
    }),
    transfers: Type.Array(CallTransfer, { description: "Warm transfers the agent attempted (transfer_call tools with mode `warm`), in order; the joined one's second leg is billed too" }),
    agent_latency: Nullable(
      Type.Record(Type.String(), CallLatencySummary, { description: "A squad's call: each agent's own latency (its turns only), by agent id; null otherwise or until the call ends" }),
    ),
    ivr_goal: Nullable(Type.String({ description: 'The phone-menu goal given at creation (outbound calls); null: no navigation' })),
    ivr: Nullable(CallIvr),
    created_at: DateTime(),
  },
  {
    title: 'Call',
    examples: [
      {
        id: '8a4c8f52-6a2c-4a0b-a0f5-2f9b1c6f3f10',
        agent_id: '0f4ac2d1-54e9-4ad3-9f86-6c7a0dbe3a3e',
        agent_version: 3,
        agent_version_source: 'published',
        type: 'web',
        status: 'completed',
        direction: null,
        to_number: null,
        from_number: null,
        room_name: 'call-8a4c8f52-6a2c-4a0b-a0f5-2f9b1c6f3f10',
        carrier_call_sid: null,
        scheduled_at: null,
        variables: { customer_name: 'Ada' },
        started_at: '2026-11-21T10:00:01Z',
        ended_at: '2026-11-21T10:02:31Z',
        duration_seconds: 150,
        end_reason: 'api_stop',
        error: null,
        outcome: 'appointment_booked',
        recording_url: null,
        recording_consent: 'none',
        transcript: [{ role: 'agent', content: 'Hello Ada, how can I help?' }],
        messages: [{ role: 'agent', content: 'Hello Ada, how can I help?' }],
        ai_summary: 'The caller booked an appointment for Tuesday.',
        analysis: { outcome: 'appointment_booked', summary: 'The caller booked an appointment for Tuesday.', status: 'completed', error: null, method: 'agent_model', model: 'openai/gpt-4o-mini' },
        metadata: { crm_id: '42' },
        latency: {
          llm_ttft: { avg_ms: 310, p50_ms: 300, min_ms: 250, max_ms: 420, samples: 6 },
          tts_ttfb: { avg_ms: 120, p50_ms: 115, min_ms: 90, max_ms: 180, samples: 6 },
          eou_delay: { avg_ms: 520, p50_ms: 510, min_ms: 480, max_ms: 600, samples: 6 },
        },
        credits_used: 2.5,
        cost_cents: null,
        campaign_id: null,
        squad_id: null,
        handoffs: [],
        supervision: [],
        transfers: [],
        agent_latency: null,
        ivr_goal: null,
        ivr: null,
        created_at: '2026-11-21T10:00:00Z',
      },
    ],
  },
);
export type Call = Static<typeof Call>;

export const CallList = ListEnvelope(Call, 'Call');

/** The agent settings a web call may override: the agent's own field schemas, so both accept the same values. */
export const OVERRIDABLE = [
  'first_message', 'tts', 'transcriber', 'language', 'max_duration_seconds', 'silence_timeout_seconds', 'end_call_phrases', 'speed',
  'responsiveness', 'turn_taking', 'interruption_sensitivity', 'background_sound', 'enable_recording',
] as const;
const pick = <T extends object, K extends keyof T>(o: T, keys: readonly K[]) => Object.fromEntries(keys.map((k) => [k, o[k]])) as Pick<T, K>;

/** What a web call may change for this one call (docs/decisions/005-calls-web-slice.md). */
export const CallOverrides = Strict(
  pick(agentSettings, OVERRIDABLE),
  {
    title: 'CallOverrides',
    description: 'Agent settings changed for this call only. Anything not listed here is fixed by the agent.',
    examples: [{ first_message: 'Hi {{customer_name}}, this is Ava from Acme.', max_duration_seconds: 300 }],
  },
);
export type CallOverrides = Static<typeof CallOverrides>;

/** Who a new call talks to: exactly one of the two (else 422). */
const SQUAD_ID = Uuid({ description: 'Start the call on a squad (POST /v1/squads) instead of one agent: its entry agent answers. Exactly one of agent_id and squad_id' });

export const CreateWebCall = Strict(
  {
    agent_id: Type.Optional(Uuid({ description: 'The agent that talks on the call. Exactly one of agent_id and squad_id' })),
    squad_id: Type.Optional(SQUAD_ID),
    agent_version: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2147483647,
        description: "Run this version of the agent (GET /v1/agents/{id}/versions) instead of following the published one and its traffic split; a draft may be pinned to try it. Only with agent_id",
      }),
    ),
    variables: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Per-call template variables interpolated into the agent prompt' })),
    metadata: Type.Optional(Metadata()),
    overrides: Type.Optional(CallOverrides),
  },
  { title: 'CreateWebCall', ...exactlyOneOf(['agent_id', 'squad_id']), examples: [{ agent_id: '0f4ac2d1-54e9-4ad3-9f86-6c7a0dbe3a3e', variables: { customer_name: 'Ada' } }] },
);

/** POST /v1/calls: an outbound phone call, now or at `scheduled_at` (docs/decisions/019-outbound-calls-and-admission.md). */
export const CreateCall = Strict(
  {
    agent_id: Type.Optional(Uuid({ description: 'The agent that talks on the call. Exactly one of agent_id and squad_id' })),
    squad_id: Type.Optional(SQUAD_ID),
    agent_version: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2147483647,
        description: "Run this version of the agent (GET /v1/agents/{id}/versions) instead of following the published one and its traffic split; a draft may be pinned to try it. Only with agent_id",
      }),
    ),
    to_number: E164({ description: 'The number to call, E.164' }),
    from_number: Type.Optional(
      E164({ description: "Caller ID: one of the organisation's active phone numbers. Default: the agent's number (the oldest active number routed to the agent)" }),
    ),
    webhook_url: Type.Optional(
      Type.String({
        format: 'http-url',
        maxLength: 2048,
        description: "Every event of this call is also POSTed here, signed with the organisation's signing secret and retried like webhook deliveries. Must resolve to a public address",
      }),
    ),
    variables: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Per-call template variables interpolated into the agent prompt' })),
    metadata: Type.Optional(Metadata()),
    overrides: Type.Optional(CallOverrides),
    scheduled_at: Type.Optional(
      DateTime({
        description:
          'Dial at this time instead of now. In the future and at most OUTBOUND_SCHEDULE_HORIZON_DAYS (30 by default) ahead. The call takes a daily slot (max_calls_per_day) at creation and counts against max_concurrent_calls only from when it dials. If the organisation is at max_concurrent_calls when the call comes due, it stays queued and is retried with backoff (first after about 5 s, then at most every 60 s) until a call ends; if no slot frees within OUTBOUND_CONCURRENCY_WAIT_SECONDS (600 by default) past scheduled_at, it fails with end_reason concurrency_limit (call.failed reason concurrency_limit)',
      }),
    ),
    ivr_goal: Type.Optional(IvrGoal(IVR_GOAL_DESCRIPTION)),
    ivr: Type.Optional(Strict({ max_menus: Type.Optional(MaxMenus()) }, { title: 'CreateCallIvr', description: 'Phone-menu navigation settings; only with ivr_goal' })),
  },
  {
    title: 'CreateCall',
    ...exactlyOneOf(['agent_id', 'squad_id']),
    examples: [{ agent_id: '0f4ac2d1-54e9-4ad3-9f86-6c7a0dbe3a3e', to_number: '+14155550123', variables: { customer_name: 'Ada' }, webhook_url: 'https://hooks.example.com/calls' }],
  },
);
export type CreateCall = Static<typeof CreateCall>;

export const WebCallResult = Type.Object(
  {
    id: Uuid(),
    agent_id: Uuid(),
    type: Type.Literal('web'),
    status: StringEnum(CALL_STATUSES),
    room_name: Type.String(),
    server_url: Type.String({ description: 'LiveKit WebSocket URL; connect with participant_token' }),
    participant_token: Type.String({ description: 'Join token for this room only, short-lived' }),
    created_at: DateTime(),
  },
  { title: 'WebCallResult' },
);

export const CallParams = Strict({ call_id: PathId('Call') });

/** An outcome label: lowercase words of letters and digits joined by `_` (`tier1`, `callback_in_2_days`). */
export const OUTCOME_PATTERN = '^[a-z0-9]+(_[a-z0-9]+)*$';

export const UpdateCall = Strict(
  {
    outcome: Type.String({
      pattern: OUTCOME_PATTERN,
      maxLength: 100,
      description: 'A label in lowercase or lowercase_underscore format (letters and digits, words joined by `_`: `tier1`, `callback_in_2_days`), stored exactly as given',
      examples: ['appointment_booked'],
    }),
  },
  { title: 'UpdateCall' },
);

export const CallListQuery = Type.Composite(
  [
    Pagination({ default: 50, maximum: 100 }),
    Type.Object({
      agent_id: Type.Optional(Uuid()),
      type: Type.Optional(StringEnum(CALL_TYPES)),
      status: Type.Optional(StringEnum(CALL_STATUSES)),
      created_after: Type.Optional(DateTime({ description: 'Inclusive lower bound on created_at' })),
      created_before: Type.Optional(DateTime({ description: 'Exclusive upper bound on created_at' })),
      campaign_id: Type.Optional(Uuid({ description: "Only a campaign's attempts" })),
      phone_number_id: Type.Optional(
        Uuid({ description: 'Only calls on this phone number of yours: inbound calls to it and outbound calls from it (web calls have none)' }),
      ),
      outcome: Type.Optional(
        Type.String({ pattern: OUTCOME_PATTERN, maxLength: 100, description: 'Only calls with this outcome (a label as PATCH sets it)', examples: ['appointment_booked'] }),
      ),
      q: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 200,
          description:
            'Text in the transcript: words of the messages, any order, whole words, case-insensitive (PostgreSQL `websearch_to_tsquery` ' +
            'with the `simple` configuration: "quoted phrase", `or`, and `-word` to exclude)',
          examples: ['refund'],
        }),
      ),
    }),
  ],
  { additionalProperties: false },
);

/**
 * `total` of GET /v1/calls is exact up to this many calls; past it, a filtered list's total is the planner's
 * estimate, never below what was counted (docs/decisions/032-console-api.md, "Calls list at scale (`GET /v1/calls`)").
 */
export const CALL_COUNT_CAP = 1_000;
/** The response header saying whether `total` is exact (`true`) or an estimate (`false`). */
export const TOTAL_EXACT_HEADER = 'Total-Exact';

export const Usage = Type.Object(
  {
    calls_made_today: Type.Integer(),
    max_calls_per_day: Type.Integer(),
    calls_remaining_today: Type.Integer(),
    calls_this_month: Type.Integer(),
    minutes_used_this_month: Type.Number(),
    cost_cents_this_month: Type.Integer(),
    kb_token_budget: Type.Integer(),
    test_minutes_this_month: Type.Number({
      description: 'Conversation time of agent test runs this month (minutes, 2 decimals). Test runs are not calls: they are in none of the call figures',
    }),
    period_start: DateTime(),
  },
  {
    title: 'Usage',
    examples: [
      {
        calls_made_today: 12,
        max_calls_per_day: 1000,
        calls_remaining_today: 988,
        calls_this_month: 240,
        minutes_used_this_month: 611.5,
        cost_cents_this_month: 0,
        kb_token_budget: 1000000,
        test_minutes_this_month: 12.25,
        period_start: '2026-11-01T00:00:00.000Z',
      },
    ],
  },
);

/** GET /v1/calls/{call_id}/recording: a redirect by default; `redirect=false` answers the link itself. */
export const RecordingLinkQuery = Strict({
  redirect: Type.Boolean({ default: true, description: 'false: answer 200 with the signed link instead of a 302 to it' }),
});
export const RecordingLink = Type.Object(
  {
    url: Type.String({ description: 'Signed download link; no Authorization header needed' }),
    expires_at: DateTime({ description: 'When the link stops working (RECORDING_URL_TTL_SECONDS after this answer)' }),
  },
  { title: 'RecordingLink', additionalProperties: false },
);
