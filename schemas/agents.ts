import { Type, DateTime, Nullable, Strict, StringEnum, Uuid, ListEnvelope, Pagination, Metadata, Warnings, type Static } from './common.ts';
import { DEFAULT_LANGUAGE, STT_DEFAULT_MODEL, STT_PROVIDERS, TTS_DEFAULTS, TTS_PROVIDERS } from '../shared/voices.ts';
import { DATA_RETENTION_MODES } from '../shared/privacy.ts';
import { BARGE_IN_MODES, DELAY_LIMITS, delaysFor, ENDPOINTING_MODES, TURN_DETECTIONS, TURN_TAKING_DEFAULTS } from '../shared/turn-taking.ts';

// The one definition of an agent's configuration. The public API (create, update, read), the web call
// overrides and the media worker's session config (schemas/internal.ts) are all built from the field schemas
// and the defaults below, so a value the API accepts is one the worker knows (media-worker/src/agent-config.test.ts
// walks these enums against the worker's mappings).

/** Ambient loops of `background_sound`; each has a file in media-worker/assets. */
export const BackgroundSounds = ['office', 'cafe', 'call_center', 'restaurant', 'static'] as const;
export type BackgroundSound = (typeof BackgroundSounds)[number];

/** What a recording call says about being recorded (media-worker/src/session/recording-consent.ts). */
export const RECORDING_CONSENT_MODES = ['none', 'announce', 'ask'] as const;
export type RecordingConsentMode = (typeof RECORDING_CONSENT_MODES)[number];
/** What is said when recording_consent_message is null. */
export const RECORDING_CONSENT_DEFAULTS = {
  announce: 'This call is recorded for quality and training purposes.',
  ask: 'This call may be recorded for quality and training purposes. Is that okay with you?',
} as const;

/** Defaults of every optional agent field; the schema descriptions below quote them. */
export const AGENT_DEFAULTS = {
  webhook_id: null,
  transcriber: { provider: 'deepgram', model: STT_DEFAULT_MODEL.deepgram },
  tts: { provider: 'openai', ...TTS_DEFAULTS.openai },
  first_message: null,
  end_call_phrases: [] as string[],
  max_duration_seconds: 1800,
  interruption_sensitivity: 0.5,
  silence_timeout_seconds: 30,
  enable_recording: false,
  language: DEFAULT_LANGUAGE,
  dynamic_variables: {},
  voicemail_detection: false,
  voicemail_message: null,
  responsiveness: 0.5,
  // The delays are responsiveness's (shared/turn-taking.ts), so the two defaults agree.
  turn_taking: { ...TURN_TAKING_DEFAULTS, ...delaysFor(0.5, TURN_TAKING_DEFAULTS.detection) },
  speed: 1.0,
  background_sound: null,
  emotions: false,
  job_description: null,
  data_retention: null,
  recording_consent: 'none',
  recording_consent_message: null,
  metadata: {},
} as const satisfies Record<string, unknown>;
const D = AGENT_DEFAULTS;
const TT = D.turn_taking;

const LANGUAGE = '^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$';
const Language = (description: string) => Type.String({ pattern: LANGUAGE, maxLength: 35, description });

export const TranscriberInput = Type.Object(
  {
    provider: StringEnum(STT_PROVIDERS),
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "Default per provider: deepgram nova-3, openai gpt-4o-transcribe, local pocketsphinx. Deepgram's flux-general-en and flux-general-multi (Flux) also decide the end of the caller's turn: turn_taking.detection `stt`" })),
    language: Type.Optional(
      Type.String({ pattern: `^(multi|${LANGUAGE.slice(1, -1)})$`, maxLength: 35, description: "BCP-47 tag, or `multi` (deepgram); defaults to the agent's language" }),
    ),
  },
  { additionalProperties: false, title: 'TranscriberInput', 'x-labels': { provider: 'Provider', model: 'Model', language: 'Language' }, description: 'Speech-to-text: a provider, and optionally a model and language from the catalogue. Not for an agent whose model is a realtime (speech-to-speech) model: 422.' },
);
export const TtsInput = Type.Object(
  {
    provider: StringEnum(TTS_PROVIDERS),
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Default per provider, e.g. openai gpt-4o-mini-tts, local espeak-ng' })),
    voice_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A voice of GET /v1/voices for this provider and model; default per provider' })),
  },
  { additionalProperties: false, title: 'TtsInput', 'x-labels': { provider: 'Provider', model: 'Model', voice_id: 'Voice' }, description: 'Text-to-speech: a provider, and optionally a model and voice from GET /v1/voices. Not for an agent whose model is a realtime (speech-to-speech) model, which speaks in its own voice (`realtime.voice` on the model): 422.' },
);

export const Transcriber = Type.Object(
  { provider: StringEnum(STT_PROVIDERS), model: Type.String(), language: Type.String() },
  { title: 'Transcriber', additionalProperties: false, examples: [{ provider: 'deepgram', model: 'nova-3', language: 'en-US' }] },
);
export const Tts = Type.Object(
  { provider: StringEnum(TTS_PROVIDERS), model: Type.String(), voice_id: Type.String() },
  { title: 'Tts', additionalProperties: false, examples: [{ provider: 'openai', model: 'gpt-4o-mini-tts', voice_id: 'alloy' }] },
);

const turnTakingFields = {
  detection: StringEnum(TURN_DETECTIONS, {
    description: `How the end of the caller's turn is detected: \`vad\` on silence alone (Silero VAD), \`transcript\` from the caller's words (the STT's punctuation, a last word that leaves the sentence open such as "for" or "the", a number being read out; English, other languages commit at min_delay_ms), \`model\` with the local end-of-turn model (an audio model, offline), \`stt\` from the transcriber's own end of turn (Deepgram Flux: transcriber deepgram \`flux-general-en\` or \`flux-general-multi\`, else 422; its EagerEndOfTurn starts the preemptive reply, TurnResumed drops it). \`transcript\` and \`model\` wait max_delay_ms when the caller seems to go on. With \`vad\`, min_delay_ms is the silence before every turn commits. With \`stt\`, min_delay_ms is added after Flux's end of turn, max_delay_ms is Flux's eot_timeout_ms (at least 500), and \`endpointing\` does not apply. Default '${TT.detection}'`,
  }),
  endpointing: StringEnum(ENDPOINTING_MODES, {
    description: `\`fixed\` waits min_delay_ms after a likely end of turn (max_delay_ms after an unlikely one); \`dynamic\` adapts both within those bounds to the caller's own pauses during the call. Default '${TT.endpointing}'`,
  }),
  min_delay_ms: Type.Integer({
    ...DELAY_LIMITS.min_delay_ms,
    description: `Silence (ms) after which a likely end of turn commits. Default from \`responsiveness\` (${TT.min_delay_ms} at its default); a value given here wins over responsiveness`,
  }),
  max_delay_ms: Type.Integer({
    ...DELAY_LIMITS.max_delay_ms,
    description: `Longest silence (ms) the agent waits when the turn detector expects the caller to go on; at least min_delay_ms (else 422). Default from \`responsiveness\` (${TT.max_delay_ms} at its default)`,
  }),
  preemptive_generation: Type.Boolean({
    description: `Start the reply (LLM, and speech where possible) on the caller's transcript before the turn commits, and drop it if the caller goes on. Not used on outbound calls' first turn or with per-turn knowledge retrieval. Default ${TT.preemptive_generation}`,
  }),
  ignore_backchannels: Type.Boolean({
    description: `While the agent speaks, a short utterance made only of acknowledgements ("mm-hm", "yeah", "okay", "right", "I see"...) does not interrupt it; any other words still do. Default ${TT.ignore_backchannels}`,
  }),
  barge_in: StringEnum(BARGE_IN_MODES, {
    description: `How the agent yields when the caller speaks over it. \`pause\`: its audio pauses at the caller's first sound (a rise of the line's level over its noise floor, held for 10 ms: 10-20 ms in), and the words decide: words stop the reply, while a backchannel (with ignore_backchannels) or a sound without words lets it go on where it paused (a sound the voice activity detector does not take for speech, such as a knock, resumes it within about 0.2 s). \`pause_on_speech\`: the same, but the pause waits for the voice activity detector to hear speech (about 100 ms in): slower, with fewer pauses on a noisy line. \`words\`: it keeps speaking until the caller's words are transcribed (\`interruption_sensitivity\` sets how many), so backchannels cause no pause but a barge-in is heard later. At an \`interruption_sensitivity\` under 0.25 the agent always waits for the words. Default '${TT.barge_in}'`,
  }),
};

export const TurnTakingInput = Type.Object(
  {
    detection: Type.Optional(turnTakingFields.detection),
    endpointing: Type.Optional(turnTakingFields.endpointing),
    min_delay_ms: Type.Optional(turnTakingFields.min_delay_ms),
    max_delay_ms: Type.Optional(turnTakingFields.max_delay_ms),
    preemptive_generation: Type.Optional(turnTakingFields.preemptive_generation),
    ignore_backchannels: Type.Optional(turnTakingFields.ignore_backchannels),
    barge_in: Type.Optional(turnTakingFields.barge_in),
  },
  {
    additionalProperties: false,
    'x-labels': {
      detection: 'End-of-turn detection',
      endpointing: 'Endpointing',
      min_delay_ms: 'Shortest wait after the caller (ms)',
      max_delay_ms: 'Longest wait after the caller (ms)',
      preemptive_generation: 'Start replying early',
      ignore_backchannels: 'Ignore "mm-hm" while speaking',
      barge_in: 'When the caller talks over the agent',
    },
    title: 'TurnTakingInput',
    description:
      'How the agent decides that the caller has finished and how it takes the turn. Any subset: the fields given are merged over the defaults ' +
      '(on update too: the stored object is replaced by the defaults plus the fields given). min_delay_ms and max_delay_ms not given come from `responsiveness`.',
  },
);
export const TurnTaking = Type.Object(turnTakingFields, {
  title: 'TurnTaking',
  additionalProperties: false,
  examples: [TT],
});

const VariableValue = Type.Unsafe<string | number | boolean>({ type: ['string', 'number', 'boolean'] });

/** Settings shared by create and update; every one optional with its documented default. */
export const agentSettings = {
  webhook_id: Type.Optional(Nullable(Uuid({ description: 'Webhook of your organisation meant for this agent\'s call events (it receives those it subscribes to); every other subscribed webhook still receives them too; default null' }))),
  transcriber: Type.Optional(TranscriberInput),
  tts: Type.Optional(TtsInput),
  first_message: Type.Optional(Nullable(Type.String({ maxLength: 2000, description: 'Said by the agent when the call connects; null waits for the caller. Default null' }))),
  end_call_phrases: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 20, description: 'The agent hangs up after saying one of these; default []' }),
  ),
  max_duration_seconds: Type.Optional(Type.Integer({ minimum: 10, maximum: 14400, description: `Calls end after this long (end_reason max_duration); default ${D.max_duration_seconds}` })),
  interruption_sensitivity: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: `0 never lets the caller interrupt, 1 stops at the slightest sound; default ${D.interruption_sensitivity}` })),
  silence_timeout_seconds: Type.Optional(Type.Integer({ minimum: 5, maximum: 3600, description: `Calls end after this much silence from the caller (end_reason silence_timeout); default ${D.silence_timeout_seconds}` })),
  enable_recording: Type.Optional(Type.Boolean({ description: 'Record calls (recording_url on the call); default false' })),
  language: Type.Optional(Language(`BCP-47 tag of the conversation; default '${D.language}'`)),
  dynamic_variables: Type.Optional(
    Type.Record(Type.String(), VariableValue, {
      maxProperties: 100,
      description: 'Default values of {{name}} placeholders; per-call `variables` override them. Default {}',
    }),
  ),
  voicemail_detection: Type.Optional(Type.Boolean({ description: 'Detect answering machines on outbound calls; default false' })),
  voicemail_message: Type.Optional(Nullable(Type.String({ maxLength: 2000, description: 'Left on a detected voicemail (then the call ends); null hangs up. Default null' }))),
  responsiveness: Type.Optional(
    Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        `How quickly the agent replies after the caller stops: 0 waits longest, 1 replies soonest; default ${D.responsiveness}. A coarse knob over ` +
        'turn_taking.min_delay_ms and max_delay_ms: setting it without those delays sets them (with a turn detector, the default: 0: 2500/4000 ms, 0.5: 1700/3000, 1: 150/1000; with detection `vad`: 1000/4000, 500/3000, 200/1000; with detection `stt`: 300/6000, 0/5000, 0/2000)',
    }),
  ),
  turn_taking: Type.Optional(TurnTakingInput),
  speed: Type.Optional(Type.Number({ minimum: 0.5, maximum: 2, description: `Speaking rate multiplier, 0.5-2; default ${D.speed.toFixed(1)}` })),
  background_sound: Type.Optional(Nullable(StringEnum(BackgroundSounds, { description: 'Ambient sound mixed under the agent; default null (none)' }))),
  emotions: Type.Optional(Type.Boolean({ description: 'Let the agent vary its tone with the conversation where the voice supports it; default false' })),
  job_description: Type.Optional(Nullable(Type.String({ maxLength: 10000, description: 'Prepended to the model\'s system prompt as a "# Role" block; default null' }))),
  data_retention: Type.Optional(
    Nullable(
      StringEnum(DATA_RETENTION_MODES, {
        description:
          "What this agent's calls keep of the conversation, over the workspace's `data_retention`: `everything`; `redact_pii` (card numbers, SSNs, emails, phone numbers, dates of birth and addresses become [card_number], [ssn], [email], [phone], [date_of_birth], [address] in messages, analysis, webhooks and logs); `no_content` (no message text, analysis or recording: metadata and latency only). Default null: the workspace's setting",
      }),
    ),
  ),
  recording_consent: Type.Optional(
    StringEnum(RECORDING_CONSENT_MODES, {
      description:
        "On calls that record (enable_recording): `none` says nothing; `announce` plays recording_consent_message before anything else the agent says; `ask` asks it as a question, and the recording starts only when the caller answers yes (no, an unclear answer or none within 10 s leave it off for that call). The call's `recording_consent` says which applied. Default 'none'",
    }),
  ),
  recording_consent_message: Type.Optional(
    Nullable(
      Type.String({
        minLength: 1,
        maxLength: 1000,
        description: `The announcement or question of recording_consent; null uses "${RECORDING_CONSENT_DEFAULTS.announce}" (announce) or "${RECORDING_CONSENT_DEFAULTS.ask}" (ask). Default null`,
      }),
    ),
  ),
  metadata: Type.Optional(Metadata({ description: 'Free-form key/value pairs; default {}' })),
};

const agentExample = {
  id: '3f6e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f',
  name: 'Front desk',
  llm_id: '0b9f3c1e-7a2d-4e8b-9c51-2f6d8a4b1e07',
  webhook_id: null,
  transcriber: { provider: 'deepgram', model: 'nova-3', language: 'en-US' },
  tts: { provider: 'openai', model: 'gpt-4o-mini-tts', voice_id: 'alloy' },
  first_message: 'Hello, thanks for calling Acme Dental. How can I help?',
  end_call_phrases: ['goodbye'],
  max_duration_seconds: 1800,
  interruption_sensitivity: 0.5,
  silence_timeout_seconds: 30,
  enable_recording: false,
  language: 'en-US',
  dynamic_variables: { company: 'Acme Dental' },
  voicemail_detection: false,
  voicemail_message: null,
  responsiveness: 0.5,
  turn_taking: { detection: 'transcript', endpointing: 'fixed', min_delay_ms: 1700, max_delay_ms: 3000, preemptive_generation: true, ignore_backchannels: true, barge_in: 'pause' },
  speed: 1,
  background_sound: null,
  emotions: false,
  job_description: 'Receptionist of a dental clinic.',
  data_retention: null,
  recording_consent: 'none',
  recording_consent_message: null,
  metadata: {},
  version: 3,
  draft_version: null,
  created_at: '2025-01-15T09:30:00Z',
  updated_at: '2025-01-15T09:30:00Z',
  effective_system_prompt: '# Role\nReceptionist of a dental clinic.\n\nYou answer questions for {{company}}. Keep answers short.',
};

/**
 * The behaviour fields of a stored agent, as read from the API and as the media worker receives them
 * (InternalAgent in schemas/internal.ts is `id`, `name` and these).
 */
export const agentBehaviour = {
  transcriber: Transcriber,
  tts: Tts,
  first_message: Nullable(Type.String()),
  end_call_phrases: Type.Array(Type.String()),
  max_duration_seconds: Type.Integer(),
  interruption_sensitivity: Type.Number(),
  silence_timeout_seconds: Type.Integer(),
  enable_recording: Type.Boolean(),
  language: Type.String(),
  dynamic_variables: Type.Record(Type.String(), VariableValue),
  voicemail_detection: Type.Boolean(),
  voicemail_message: Nullable(Type.String()),
  responsiveness: Type.Number(),
  turn_taking: TurnTaking,
  speed: Type.Number(),
  background_sound: Nullable(StringEnum(BackgroundSounds)),
  emotions: Type.Boolean(),
  job_description: Nullable(Type.String()),
  data_retention: Nullable(StringEnum(DATA_RETENTION_MODES)),
  recording_consent: StringEnum(RECORDING_CONSENT_MODES),
  recording_consent_message: Nullable(Type.String()),
  metadata: Metadata(),
};

export const Agent = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    llm_id: Uuid(),
    webhook_id: Nullable(Uuid()),
    ...agentBehaviour,
    version: Nullable(
      Type.Integer({
        description:
          'The published version (GET /v1/agents/{id}/versions/{n}): the fields above are its fields, and calls that are not pinned run it (or the traffic split\'s version)',
      }),
    ),
    draft_version: Nullable(Type.Integer({ description: 'The draft (PATCH /v1/agents/{id}/draft), until it is published or discarded; null without one' })),
    created_at: DateTime(),
    updated_at: DateTime(),
    effective_system_prompt: Nullable(
      Type.String({
        description:
          'Read-only. "# Role\\n" + job_description + "\\n\\n" + the model\'s system_prompt (just the role block when the model has no ' +
          'prompt; just the prompt without a job description; null with neither). Placeholders are not filled and knowledge ' +
          'chunks are not included. Populated for a single agent, null in lists.',
      }),
    ),
    warnings: Type.Optional(Warnings),
  },
  { title: 'Agent', additionalProperties: false, examples: [{ ...agentExample, warnings: [] }] },
);
export type Agent = Static<typeof Agent>;

/**
 * How a form of an agent (the console's) groups the fields and what it calls them: schema annotations, so the form
 * stays generated from this schema (`x-groups` in order; a field in none goes to the collapsed `advanced`).
 */
export const AGENT_FORM_GROUPS = [
  { id: 'prompt', label: 'Prompt and model', fields: ['name', 'llm_id', 'job_description', 'first_message', 'language', 'dynamic_variables'] },
  { id: 'voice', label: 'Voice and speech', fields: ['tts', 'speed', 'emotions', 'transcriber', 'background_sound'] },
  {
    id: 'conversation',
    label: 'Conversation and turn-taking',
    fields: ['responsiveness', 'interruption_sensitivity', 'turn_taking', 'end_call_phrases', 'silence_timeout_seconds'],
  },
  { id: 'calls', label: 'Calls and telephony', fields: ['max_duration_seconds', 'voicemail_detection', 'voicemail_message', 'webhook_id'] },
  { id: 'privacy', label: 'Privacy', fields: ['enable_recording', 'recording_consent', 'recording_consent_message', 'data_retention'] },
  { id: 'advanced', label: 'Advanced', collapsed: true, fields: ['metadata'] },
] as const;

export const AGENT_FIELD_LABELS: Record<string, string> = {
  name: 'Name',
  llm_id: 'Language model',
  webhook_id: 'Webhook for its call events',
  transcriber: 'Speech recognition',
  tts: 'Voice',
  first_message: 'First message',
  end_call_phrases: 'Phrases that end the call',
  max_duration_seconds: 'Longest call (seconds)',
  interruption_sensitivity: 'Interruption sensitivity',
  silence_timeout_seconds: 'Hang up after silence (seconds)',
  enable_recording: 'Record calls',
  language: 'Language',
  dynamic_variables: 'Default variables',
  voicemail_detection: 'Detect voicemail',
  voicemail_message: 'Message left on voicemail',
  responsiveness: 'Responsiveness',
  turn_taking: 'Turn-taking',
  speed: 'Speaking speed',
  background_sound: 'Background sound',
  emotions: 'Expressive tone',
  job_description: 'Role (job description)',
  data_retention: 'Data retention',
  recording_consent: 'Recording consent',
  recording_consent_message: 'Consent announcement or question',
  metadata: 'Metadata',
};
const formAnnotations = { 'x-groups': AGENT_FORM_GROUPS, 'x-labels': AGENT_FIELD_LABELS };

export const CreateAgent = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    llm_id: Uuid({ description: 'LLM model of your organisation' }),
    ...agentSettings,
  },
  {
    additionalProperties: false,
    ...formAnnotations,
    title: 'CreateAgent',
    description: 'Required: `name` and `llm_id`; every other field has the default given in its description.',
    examples: [
      {
        name: 'Front desk',
        llm_id: '0b9f3c1e-7a2d-4e8b-9c51-2f6d8a4b1e07',
        first_message: 'Hello, thanks for calling {{company}}. How can I help?',
        job_description: 'Receptionist of a dental clinic.',
        dynamic_variables: { company: 'Acme Dental' },
        tts: { provider: 'elevenlabs', voice_id: '21m00Tcm4TlvDq8ikWAM' },
      },
      { name: 'Offline demo', llm_id: '0b9f3c1e-7a2d-4e8b-9c51-2f6d8a4b1e07', transcriber: { provider: 'local' }, tts: { provider: 'local', model: 'festival', voice_id: 'us-slt-hts' } },
    ],
  },
);
export type CreateAgent = Static<typeof CreateAgent>;

export const UpdateAgent = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    llm_id: Type.Optional(Uuid()),
    ...agentSettings,
  },
  {
    additionalProperties: false,
    ...formAnnotations,
    title: 'UpdateAgent',
    description: 'Any subset of the fields. `transcriber`, `tts`, `dynamic_variables`, `metadata` and lists replace the stored value whole.',
    examples: [{ first_message: null, interruption_sensitivity: 0.3, tts: { provider: 'openai', voice_id: 'coral' } }],
  },
);
export type UpdateAgent = Static<typeof UpdateAgent>;

export const AgentParams = Strict({ agent_id: Uuid() });
export const AgentList = ListEnvelope(Agent, 'Agent');
export const AgentListQuery = Type.Composite(
  [Pagination({ default: 50, maximum: 100 }), Type.Object({ llm_id: Type.Optional(Uuid({ description: 'Only agents using this model' })) })],
  { additionalProperties: false },
);
