// The internal API between media workers and the control plane (`/internal/v1`), documented in
// docs/internal-api.md. Workers authenticate with `Authorization: Bearer <WORKER_TOKEN>`, never a customer key.
// Responses are what the control plane sends (no `additionalProperties: false`, so the control plane can add
// fields without breaking running workers); worker reports are strict.
import { Type, DateTime, Nullable, Strict, StringEnum, Metadata, type Static } from './common.ts';
import { agentBehaviour, Transcriber as AgentTranscriber, Tts as AgentTts, TurnTaking as AgentTurnTaking } from './agents.ts';
import { LlmProviders, RealtimeSettings } from './models.ts';
import type { ProviderKeys as SharedProviderKeys } from '../shared/providers.ts';
import type { TranscriberConfig, TtsConfig } from '../shared/speech/providers.ts';
import { DATA_RETENTION_MODES } from '../shared/privacy.ts';

// ---- Speech and model providers --------------------------------------------------------------------------
// The agent's fields and enums come from the public schema (schemas/agents.ts, schemas/models.ts): one
// definition, so the worker cannot drift from what the API accepts.

/** Models of the `local` TTS provider. */
export const LOCAL_TTS_MODELS = ['espeak-ng', 'festival'] as const;

// Open copies of the public objects: a control plane may add fields without breaking running workers.
export const Transcriber = Type.Object(AgentTranscriber.properties, { title: 'InternalTranscriber' });
export type Transcriber = Static<typeof Transcriber>;
export const Tts = Type.Object(AgentTts.properties, { title: 'InternalTts' });
export type Tts = Static<typeof Tts>;
// shared/speech/providers.ts builds the engines from these and owns the shape it reads: they must satisfy it.
const _speechShapes: [Transcriber extends TranscriberConfig ? true : false, Tts extends TtsConfig ? true : false] = [true, true];
export const TurnTaking = Type.Object(AgentTurnTaking.properties, { title: 'InternalTurnTaking' });
export type TurnTaking = Static<typeof TurnTaking>;

export const LlmSettings = Type.Object(
  {
    provider: StringEnum(LlmProviders),
    model: Type.String({ description: 'Model id at the provider' }),
    base_url: Nullable(Type.String({ description: 'OpenAI-compatible base URL (local or self-hosted models)' })),
    temperature: Nullable(Type.Number()),
    max_tokens: Nullable(Type.Integer({ minimum: 1 })),
    /** A realtime (speech-to-speech) model: the session is built on it, with no STT or TTS. Absent from older control planes. */
    realtime: Type.Optional(Nullable(RealtimeSettings)),
  },
  { title: 'InternalLlmSettings' },
);
export type LlmSettings = Static<typeof LlmSettings>;

export const ProviderKeys = Type.Object(
  {
    openai: Type.Optional(Type.String()),
    anthropic: Type.Optional(Type.String()),
    gemini: Type.Optional(Type.String()),
    deepgram: Type.Optional(Type.String()),
    elevenlabs: Type.Optional(Type.String()),
    cartesia: Type.Optional(Type.String()),
  },
  { title: 'ProviderKeys', description: "The org's decrypted keys; a missing key falls back to the worker's env key" },
);
export type ProviderKeys = Static<typeof ProviderKeys>;
// shared/providers.ts uses these keys and owns their TypeScript shape; the schema must describe exactly it.
const _sameKeys: [Static<typeof ProviderKeys>] extends [SharedProviderKeys]
  ? [SharedProviderKeys] extends [Static<typeof ProviderKeys>]
    ? true
    : false
  : false = true;

// ---- The call and its agent -------------------------------------------------------------------------------

export const CALL_TYPES = ['web', 'outbound', 'inbound'] as const;

export const InternalCall = Type.Object(
  {
    id: Type.String(),
    type: StringEnum(CALL_TYPES),
    direction: Nullable(StringEnum(['inbound', 'outbound'] as const)),
    to_number: Nullable(Type.String()),
    from_number: Nullable(Type.String()),
    variables: Type.Record(Type.String(), Type.Unknown(), { description: 'Per-call template variables' }),
    metadata: Metadata(),
    // The agent version the config was built from (agent-versions); absent for an agent without versions.
    agent_version: Type.Optional(Type.Integer({ minimum: 1, description: 'The agent version this config is built from' })),
    // Optional for a worker newer than its control plane: without it, outbound calls follow the agent's flag.
    voicemail_detection: Type.Optional(
      Type.Boolean({
        description:
          "Listen for an answering machine: outbound, the agent's voicemail_detection; inbound, the dialled number's inbound_routing.voicemail_message is set; web, never",
      }),
    ),
    // Outbound calls with a phone-menu goal (POST /v1/calls ivr_goal); absent otherwise, and from an older control plane.
    ivr: Type.Optional(
      Type.Object(
        {
          goal: Type.String({ description: 'What to reach through the callee\'s phone menu, e.g. "reach billing"' }),
          max_menus: Type.Integer({ minimum: 1, description: 'The most menus answered; one more ends the call (ivr_failed)' }),
        },
        { title: 'InternalCallIvr', description: 'Navigate the phone menu first (media-worker/src/session/ivr-navigator.ts)' },
      ),
    ),
  },
  { title: 'InternalCall' },
);
export type InternalCall = Static<typeof InternalCall>;

/** Every behaviour field of the spec's Agent (schemas/agents.ts), with its id and name. */
export const InternalAgent = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    ...agentBehaviour,
    transcriber: Transcriber,
    tts: Tts,
    turn_taking: TurnTaking,
    // Optional for a worker newer than its control plane: without them, no consent step and nothing withheld
    // (the call's own `data_retention` below is what the worker applies).
    data_retention: Type.Optional(agentBehaviour.data_retention),
    recording_consent: Type.Optional(agentBehaviour.recording_consent),
    recording_consent_message: Type.Optional(agentBehaviour.recording_consent_message),
  },
  { title: 'InternalAgent' },
);
export type InternalAgent = Static<typeof InternalAgent>;

// ---- Tools -------------------------------------------------------------------------------------------------

export const FunctionToolConfig = Type.Object(
  {
    type: Type.Literal('function'),
    name: Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' }),
    description: Type.String(),
    parameters: Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema of the arguments (type object)' }),
    url: Type.String({ description: "The customer's server URL" }),
    method: StringEnum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const),
    headers: Type.Record(Type.String(), Type.String(), { description: 'Decrypted extra headers' }),
    timeout_ms: Type.Integer({ minimum: 1 }),
    signing_secret: Nullable(Type.String({ description: 'Standard Webhooks secret (whsec_...) used to sign the request' })),
  },
  { title: 'FunctionToolConfig' },
);
export type FunctionToolConfig = Static<typeof FunctionToolConfig>;

export const EndCallToolConfig = Type.Object(
  { type: Type.Literal('end_call'), name: Type.Optional(Type.String()), description: Type.Optional(Type.String()) },
  { title: 'EndCallToolConfig' },
);
export const TransferCallToolConfig = Type.Object(
  {
    type: Type.Literal('transfer_call'),
    name: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    destination: Type.String({ description: 'E.164 number or SIP URI (tel:/sip:)' }),
    // Absent from an older control plane: blind.
    mode: Type.Optional(
      StringEnum(['blind', 'warm'] as const, { description: 'blind: SIP REFER; warm: second leg, briefing, join (POST /calls/{id}/transfers)' }),
    ),
  },
  { title: 'TransferCallToolConfig' },
);
export const SendDtmfToolConfig = Type.Object(
  { type: Type.Literal('send_dtmf'), name: Type.Optional(Type.String()), description: Type.Optional(Type.String()) },
  { title: 'SendDtmfToolConfig' },
);

export const DoNotCallToolConfig = Type.Object(
  { type: Type.Literal('do_not_call'), name: Type.Optional(Type.String()), description: Type.Optional(Type.String()) },
  { title: 'DoNotCallToolConfig' },
);

export const ToolConfig = Type.Union([FunctionToolConfig, EndCallToolConfig, TransferCallToolConfig, SendDtmfToolConfig, DoNotCallToolConfig], {
  title: 'ToolConfig',
});
export type ToolConfig = Static<typeof ToolConfig>;

// ---- Knowledge, recording, the whole session config --------------------------------------------------------

export const KnowledgeConfig = Type.Object(
  {
    knowledge_base_ids: Type.Array(Type.String()),
    mode: StringEnum(['stuff', 'retrieve'] as const, {
      description: 'stuff: stuffed_context is the whole (small) base; retrieve: search before each LLM turn',
    }),
    stuffed_context: Type.Optional(Type.String()),
  },
  { title: 'KnowledgeConfig' },
);
export type KnowledgeConfig = Static<typeof KnowledgeConfig>;

export const RecordingConfig = Type.Object(
  {
    enabled: Type.Boolean(),
    upload_url: Type.Optional(Type.String({ description: "Where to PUT the recording (audio/wav), with the call's capability as `Authorization: Bearer`" })),
  },
  { title: 'RecordingConfig' },
);

export const InternalDestinationPolicy = Type.Object(
  {
    allowed_countries: Type.Array(Type.String()),
    blocked_number_types: Type.Array(Type.String()),
    allowed_sip_hosts: Type.Array(Type.String()),
    fictional_numbers: Type.Boolean({ description: 'The simulated carrier: its fictional ranges are real destinations' }),
  },
  { title: 'InternalDestinationPolicy', description: "The org's destination policy with its defaults filled in: transfers are checked against it" },
);

// ---- Squads: the other agents of a call started on a squad -------------------------------------------------

/** One member of the squad as a session switches to it: its agent, prompt, model, tools and knowledge. */
export const SquadMemberConfig = Type.Object(
  {
    agent: InternalAgent,
    prompt: Type.String({ description: "The member's effective system prompt with the call's {{variables}} interpolated" }),
    llm: LlmSettings,
    tools: Type.Array(ToolConfig),
    knowledge: KnowledgeConfig,
  },
  { title: 'InternalSquadMember' },
);
export type SquadMemberConfig = Static<typeof SquadMemberConfig>;

export const SquadHandoffConfig = Type.Object(
  {
    from_agent_id: Type.String(),
    to_agent_id: Type.String(),
    description: Type.String({ description: "The generated handoff tool's description" }),
    context: StringEnum(['full', 'summary'] as const),
  },
  { title: 'InternalSquadHandoff' },
);
export type SquadHandoffConfig = Static<typeof SquadHandoffConfig>;

export const SquadConfig = Type.Object(
  {
    id: Type.String(),
    max_handoffs: Type.Integer({ minimum: 1, description: 'Most hand-offs in this call' }),
    members: Type.Array(SquadMemberConfig, { description: "Every member but the entry agent, which is the config's own `agent` (with the call's overrides)" }),
    handoffs: Type.Array(SquadHandoffConfig),
  },
  { title: 'InternalSquad' },
);
export type SquadConfig = Static<typeof SquadConfig>;

export const CallConfig = Type.Object(
  {
    call: InternalCall,
    agent: InternalAgent,
    prompt: Type.String({ description: 'Effective system prompt with {{variables}} interpolated' }),
    llm: LlmSettings,
    tools: Type.Array(ToolConfig),
    knowledge: KnowledgeConfig,
    provider_keys: ProviderKeys,
    recording: RecordingConfig,
    // Optional for a worker newer than its control plane; without it the worker refuses every transfer.
    destination_policy: Type.Optional(InternalDestinationPolicy),
    // Optional for a worker newer than its control plane (which knows no such setting: everything is kept).
    data_retention: Type.Optional(
      StringEnum(DATA_RETENTION_MODES, {
        description:
          "The call's data retention (the agent's, else the workspace's): what the worker may report and log of the conversation (shared/privacy.ts)",
      }),
    ),
    // A call started on a squad; absent for a single agent's call.
    squad: Type.Optional(SquadConfig),
    // Optional for a worker newer than its control plane (which put the capability in the dispatch itself).
    capability: Type.Optional(
      Type.String({ description: "The call's capability for the per-call routes (x-call-capability): the config is handed out once per call, with it" }),
    ),
  },
  { title: 'CallConfig' },
);
export type CallConfig = Static<typeof CallConfig>;

// ---- Reports from the worker: schemas/internal-reports.ts ---------------------------------------------------

export * from './internal-reports.ts';
import { Seq } from './internal-reports.ts';

// ---- Squads: a hand-off happened in the call ------------------------------------------------------------------

export const HandoffReport = Strict(
  {
    seq: Seq,
    from_agent_id: Type.String(),
    to_agent_id: Type.String(),
    reason: Nullable(Type.String({ maxLength: 500 })),
    context: StringEnum(['full', 'summary'] as const),
    at: DateTime(),
  },
  { title: 'HandoffReport', description: 'The call passed from one agent of its squad to another' },
);
export type HandoffReport = Static<typeof HandoffReport>;

// ---- Do-not-call (the agent's built-in do_not_call tool) -------------------------------------------------------

export const DoNotCallRequest = Strict(
  { reason: Type.Optional(Type.String({ maxLength: 500, description: "Why, in the agent's words" })) },
  { title: 'DoNotCallRequest' },
);
export type DoNotCallRequest = Static<typeof DoNotCallRequest>;

export const DoNotCallResult = Type.Object({ phone_number: Type.String(), already_listed: Type.Boolean() }, { title: 'DoNotCallResult' });
export type DoNotCallResult = Static<typeof DoNotCallResult>;

// ---- Warm transfer (media worker -> control plane) ---------------------------------------------------------------

export const TransferRequest = Strict(
  {
    destination: Type.String({ maxLength: 512, description: "The transfer_call tool's destination (E.164; a blind transfer also takes a sip: URI)" }),
    mode: StringEnum(['warm', 'blind'] as const),
  },
  { title: 'TransferRequest' },
);
export type TransferRequest = Static<typeof TransferRequest>;

export const TransferResult = Type.Object(
  {
    transfer_id: Nullable(Type.String({ description: 'Null when refused before a row was written' })),
    status: StringEnum(['answered', 'transferred', 'busy', 'no_answer', 'failed', 'refused'] as const, {
      description: '`transferred`: a blind transfer whose REFER the caller accepted (the call ends, end_reason `transferred`)',
    }),
    participant_identity: Nullable(Type.String({ description: "The second leg's SIP participant in the call's room" })),
    message: Nullable(Type.String({ description: 'Why it did not go through, in words the agent can say' })),
  },
  { title: 'TransferResult' },
);
export type TransferResult = Static<typeof TransferResult>;

export const TransferUpdate = Strict(
  {
    state: StringEnum(['joined', 'abandoned'] as const, {
      description:
        'joined: the legs hear each other and the agent leaves; abandoned: the answered leg was let go (its person hung up, or the caller did, during the briefing)',
    }),
  },
  { title: 'TransferUpdate' },
);
export type TransferUpdate = Static<typeof TransferUpdate>;

// ---- Knowledge search ------------------------------------------------------------------------------------------

export const KnowledgeSearchRequest = Strict(
  {
    query: Type.String({ minLength: 1, maxLength: 4000 }),
    top_k: Type.Integer({ minimum: 1, maximum: 20 }),
    max_tokens: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 32000, description: 'Token budget of the chunks returned (default KB_RETRIEVAL_MAX_TOKENS)' }),
    ),
    agent_id: Type.Optional(
      Type.String({
        maxLength: 100,
        description: "A squad's call: the agent speaking now, whose knowledge bases are searched (a member of the call's squad; else the call's agent)",
      }),
    ),
  },
  { title: 'KnowledgeSearchRequest' },
);
export type KnowledgeSearchRequest = Static<typeof KnowledgeSearchRequest>;

export const KnowledgeChunk = Type.Object(
  {
    content: Type.String(),
    score: Type.Number({ description: 'ts_rank_cd normalised to 0-1 (higher is better)' }),
    source_id: Type.String(),
    kb_id: Type.Optional(Type.String()),
    heading: Type.Optional(Type.String({ description: 'Heading path of the chunk in its document' })),
    title: Type.Optional(Type.String({ description: 'Page or file title' })),
    url: Type.Optional(Nullable(Type.String({ description: 'Page URL for crawled sources' }))),
    token_count: Type.Optional(Type.Integer()),
  },
  { title: 'KnowledgeChunk' },
);

export const KnowledgeSearchResult = Type.Object(
  {
    chunks: Type.Array(KnowledgeChunk),
  },
  { title: 'KnowledgeSearchResult' },
);
export type KnowledgeSearchResult = Static<typeof KnowledgeSearchResult>;

// ---- Inbound SIP: the worker asks the control plane to open the call --------------------------------------------

export const InboundOpenRequest = Strict(
  {
    to_number: Type.String({ description: 'The dialled number (sip.trunkPhoneNumber)' }),
    from_number: Nullable(Type.String()),
    room_name: Type.String(),
    sip_call_id: Nullable(Type.String()),
    trunk_id: Type.String({ description: 'The inbound trunk the SIP bridge matched (sip.trunkID)' }),
    dispatch_rule_id: Type.String({ description: 'The dispatch rule that made the room (sip.ruleID)' }),
    carrier_account: Type.Optional(
      Nullable(Type.String({ maxLength: 256, description: "The carrier account header of the INVITE, as the trunk maps it (attribute vap.carrier_account)" })),
    ),
  },
  { title: 'InboundOpenRequest' },
);
export type InboundOpenRequest = Static<typeof InboundOpenRequest>;

export const InboundOpenResult = Type.Object(
  {
    call_id: Type.String(),
    capability: Type.String({ description: "The call's capability for the per-call routes (x-call-capability)" }),
    config: Type.Optional({
      ...CallConfig,
      description: "The call's resolved config, as GET /internal/v1/calls/{id}/config gives it: the worker starts the session without a second round trip",
    }),
  },
  { title: 'InboundOpenResult' },
);
export type InboundOpenResult = Static<typeof InboundOpenResult>;

/** Dispatch or room metadata that tells the worker which call it serves. */
export const JobMetadata = Type.Object(
  {
    call_id: Type.Optional(Type.String()),
    ticket: Type.Optional(
      Type.String({ description: "The call's ticket (dispatch metadata only, never the room's): it opens the call's config, once, which brings the capability" }),
    ),
    standby: Type.Optional(Type.String({ description: 'A standby room: the job waits there for its call' })),
    secret: Type.Optional(Type.String({ description: "A standby room's secret: its waits present it (X-Standby-Secret)" })),
  },
  { title: 'JobMetadata' },
);

// ---- Standby agents (control-plane/src/modules/standby) ---------------------------------------------------

/** A standby room: the control plane names them `standby-<uuid>`. */
export const STANDBY_ROOM_PATTERN = '^standby-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

export const StandbyParams = Type.Object({ room_name: Type.String({ pattern: STANDBY_ROOM_PATTERN }) }, { additionalProperties: false });

export const StandbyWaitRequest = Strict(
  { worker_id: Type.String({ minLength: 1, maxLength: 200, description: "The worker's LiveKit id: a draining worker's standby rooms are released" }) },
  { title: 'StandbyWaitRequest' },
);
export type StandbyWaitRequest = Static<typeof StandbyWaitRequest>;

export const StandbyWaitResult = Type.Object(
  {
    call_id: Type.Optional(Type.String({ description: 'The call given to this room: the job serves it' })),
    capability: Type.Optional(Type.String({ description: "The call's capability for the per-call routes (x-call-capability)" })),
    config: Type.Optional({ ...CallConfig, description: "The call's resolved config, as GET /internal/v1/calls/{id}/config gives it" }),
    release: Type.Optional(Type.Boolean({ description: 'The room is no longer wanted (its worker drains, or the call went elsewhere): the job leaves' })),
    join: Type.Optional(
      Type.Object(
        {
          room_name: Type.String({ minLength: 1, maxLength: 200 }),
          token: Type.String({ minLength: 1, description: "An agent participant's token for that room, valid for the call's token lifetime" }),
        },
        {
          additionalProperties: false,
          description:
            "The call is in another room (an inbound call: the SIP bridge made the caller's room): the job joins it with this token and serves the call there, staying in its standby room until the call ends",
        },
      ),
    ),
  },
  { title: 'StandbyWaitResult' },
);
export type StandbyWaitResult = Static<typeof StandbyWaitResult>;

/** A number's rooms are `pn-<number id>_…` (the prefix its dispatch rule gives LiveKit). */
export const INBOUND_ROOM_PREFIX = 'pn-';

export const InboundRoomParams = Type.Object({ room_name: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false });

export const InboundRoomStatus = Type.Object(
  {
    answered_elsewhere: Type.Boolean({
      description:
        "The room's call already has its agent (a standby agent, or the number's fallback): a job the number's dispatch rule offers for it is not needed",
    }),
  },
  { title: 'InboundRoomStatus' },
);
export type InboundRoomStatus = Static<typeof InboundRoomStatus>;
