import { Type, DateTime, Nullable, Strict, StringEnum, Uuid, ListEnvelope, Pagination, Warnings, type Static } from './common.ts';

/**
 * `local` is the platform's own model, run for every organisation by the operator: an OpenAI-compatible server
 * (LOCAL_LLM_BASE_URL: Ollama, a llama.cpp server) or a GGUF file on the workers (LLM_MODEL_PATH). It needs no key.
 */
export const LlmProviders = ['openai', 'gemini', 'anthropic', 'local'] as const;
export type LlmProvider = (typeof LlmProviders)[number];

/**
 * A realtime (speech-to-speech) model hears the caller and speaks itself: no separate transcriber or voice. Its turn
 * detection is the provider's (`server_vad`: silence; `semantic_vad`: OpenAI's model of a finished thought, its
 * `eagerness`) or the platform's own (`platform`: the agent's turn_taking, as in the pipeline). Two providers serve
 * them: `openai` (OpenAI Realtime) and `gemini` (Gemini Live, whose automatic activity detection is `server_vad`).
 */
export const RealtimeTurnDetections = ['semantic_vad', 'server_vad', 'platform'] as const;
export const RealtimeEagerness = ['auto', 'low', 'medium', 'high'] as const;
export const REALTIME_DEFAULTS = { voice: 'marin', turn_detection: 'semantic_vad', eagerness: 'auto', silence_duration_ms: null } as const;
/** Gemini Live's defaults: its own voice, and its automatic activity detection (eagerness is OpenAI's and unused). */
export const GEMINI_REALTIME_DEFAULTS = { voice: 'Puck', turn_detection: 'server_vad', eagerness: 'auto', silence_duration_ms: null } as const;
/** Gemini Live's prebuilt voices (the names the API takes, case as Google writes them). */
export const GEMINI_LIVE_VOICES = [
  'Achernar', 'Achird', 'Algenib', 'Algieba', 'Alnilam', 'Aoede', 'Autonoe', 'Callirrhoe', 'Charon', 'Despina',
  'Enceladus', 'Erinome', 'Fenrir', 'Gacrux', 'Iapetus', 'Kore', 'Laomedeia', 'Leda', 'Orus', 'Pulcherrima', 'Puck',
  'Rasalgethi', 'Sadachbia', 'Sadaltager', 'Schedar', 'Sulafat', 'Umbriel', 'Vindemiatrix', 'Zephyr', 'Zubenelgenubi',
] as const;

/** A provider's realtime defaults. */
export const realtimeDefaults = (provider: LlmProvider) => (provider === 'gemini' ? GEMINI_REALTIME_DEFAULTS : REALTIME_DEFAULTS);

const RealtimeVoice = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9_-]+$',
  description: `The provider's voice: marin, cedar, alloy, verse... (OpenAI; default ${REALTIME_DEFAULTS.voice}), or one of Gemini Live's prebuilt voices: Puck, Charon, Kore, Fenrir, Aoede, Leda, Orus, Zephyr... (gemini; default ${GEMINI_REALTIME_DEFAULTS.voice})`,
});
const RealtimeTurnDetection = StringEnum(RealtimeTurnDetections, {
  description:
    "Who ends the caller's turn: `semantic_vad` (OpenAI's model of a finished thought, paced by `eagerness`; openai only), `server_vad` (the provider's silence detection, " +
    "`silence_duration_ms`; for gemini, Gemini Live's automatic activity detection), or `platform` (the agent's own turn_taking, as in the STT → LLM → TTS pipeline; " +
    "for gemini, its activity detection is turned off). Default semantic_vad (openai), server_vad (gemini)",
});
const RealtimeEagernessField = StringEnum(RealtimeEagerness, { description: 'semantic_vad only (openai): how soon the provider ends a turn (auto = medium); default auto' });
const RealtimeSilence = Type.Integer({ minimum: 100, maximum: 3000, description: "server_vad only: the silence (ms) that ends a turn; null takes the provider's default (500 for OpenAI)" });

export const RealtimeSettings = Type.Object(
  {
    voice: Type.String(),
    turn_detection: StringEnum(RealtimeTurnDetections),
    eagerness: StringEnum(RealtimeEagerness),
    silence_duration_ms: Nullable(Type.Integer()),
  },
  { title: 'RealtimeSettings', additionalProperties: false, description: 'Set on a realtime (speech-to-speech) model; null on a text LLM' },
);
export type RealtimeSettings = Static<typeof RealtimeSettings>;

export const RealtimeSettingsInput = Strict(
  {
    voice: Type.Optional(RealtimeVoice),
    turn_detection: Type.Optional(RealtimeTurnDetection),
    eagerness: Type.Optional(RealtimeEagernessField),
    silence_duration_ms: Type.Optional(Nullable(RealtimeSilence)),
  },
  {
    title: 'RealtimeSettingsInput',
    description:
      'Makes the record a realtime (speech-to-speech) model: provider openai (OpenAI Realtime, e.g. gpt-realtime) or gemini (Gemini Live, e.g. ' +
      'gemini-2.5-flash-native-audio-preview-09-2025, gemini-live-2.5-flash-preview; no base_url). Given by default (with the provider\'s defaults) for a model id ' +
      'containing `realtime` (openai) or `live` / `native-audio` (gemini); null makes such a model a text LLM. An agent on a realtime model takes no `transcriber` ' +
      'or `tts` (422). `temperature` and `max_tokens` do not apply (422); for gemini, `semantic_vad` and `eagerness` do not either (422)',
  },
);
export type RealtimeSettingsInput = Static<typeof RealtimeSettingsInput>;

const example = {
  id: '0b9f3c1e-7a2d-4e8b-9c51-2f6d8a4b1e07',
  name: 'Support GPT',
  provider: 'openai',
  model: 'gpt-4o-mini',
  base_url: null,
  system_prompt: 'You answer questions about orders for {{company}}. Keep answers under two sentences.',
  temperature: 0.7,
  max_tokens: null,
  tool_ids: ['5d1e8f2a-4c3b-4a9d-8e7f-1a2b3c4d5e6f'],
  knowledge_base_ids: [],
  realtime: null,
  created_at: '2025-01-15T09:30:00Z',
  updated_at: '2025-01-15T09:30:00Z',
};

const Temperature = Type.Number({ minimum: 0, maximum: 2, description: 'Sampling temperature, 0-2 (0-1 for anthropic)' });
const MaxTokens = Type.Integer({ minimum: 1, maximum: 200000, description: 'Upper bound of each reply; null lets the provider decide' });
const ModelId = Type.String({ minLength: 1, maxLength: 255, pattern: '^\\S+$', description: 'Model identifier at the provider, e.g. gpt-4o-mini, claude-sonnet-4-5, gemini-2.5-flash, llama3.1:8b; a realtime model: gpt-realtime, gemini-2.5-flash-native-audio-preview-09-2025' });
const SystemPrompt = Type.String({ maxLength: 100000, description: 'May contain {{variable}} placeholders, filled per call' });
const BaseUrl = Type.String({ format: 'http-url', maxLength: 2048, description: 'Base URL of an OpenAI-compatible server (Ollama, vLLM, llama.cpp server), e.g. http://gpu-box:11434/v1; recorded with provider openai' });
const ToolIds = Type.Array(Uuid(), { uniqueItems: true, maxItems: 64, description: 'Tools the model may call, in order; tools of your organisation' });
const KbIds = Type.Array(Uuid(), { uniqueItems: true, maxItems: 20, description: 'Knowledge bases drawn on at call time; of your organisation' });

export const LlmModel = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    provider: StringEnum(LlmProviders),
    model: Type.String(),
    base_url: Nullable(Type.String({ format: 'uri' })),
    system_prompt: Nullable(Type.String()),
    temperature: Type.Number(),
    max_tokens: Nullable(Type.Integer()),
    tool_ids: Type.Array(Uuid()),
    knowledge_base_ids: Type.Array(Uuid()),
    realtime: Nullable(RealtimeSettings),
    created_at: DateTime(),
    updated_at: DateTime(),
    warnings: Type.Optional(Warnings),
  },
  { title: 'LlmModel', additionalProperties: false, examples: [{ ...example, warnings: [] }] },
);
export type LlmModel = Static<typeof LlmModel>;

export const CreateLlmModel = Strict(
  {
    name: Type.String({ minLength: 1, maxLength: 255, examples: ['Support GPT'] }),
    model: ModelId,
    provider: Type.Optional(
      StringEnum(LlmProviders, {
        description:
          'Inferred from the model id (gpt-*, o1*/o3*/o4*, chatgpt-* → openai; gemini-* → gemini; claude-* → anthropic) when omitted. ' +
          '`local`: the platform\'s own local model (LOCAL_LLM_BASE_URL or LLM_MODEL_PATH, set by the operator), no key needed; `model` then names the ' +
          "local server's model (e.g. Ollama's llama3.2) and is only a label for a GGUF file",
      }),
    ),
    base_url: Type.Optional(Nullable(BaseUrl)),
    system_prompt: Type.Optional(Nullable(SystemPrompt)),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2, description: 'Sampling temperature, 0-2 (0-1 for anthropic); default 0.7' })),
    max_tokens: Type.Optional(Nullable(MaxTokens)),
    tool_ids: Type.Optional(ToolIds),
    knowledge_base_ids: Type.Optional(KbIds),
    realtime: Type.Optional(Nullable(RealtimeSettingsInput)),
  },
  {
    title: 'CreateLlmModel',
    description: 'Required: `name` and `model`.',
    examples: [
      { name: 'Support GPT', model: 'gpt-4o-mini', system_prompt: 'You are a helpful support agent.', temperature: 0.5 },
      { name: 'Local Llama', model: 'llama3.1:8b', base_url: 'http://127.0.0.1:11434/v1' },
      { name: 'Offline', provider: 'local', model: 'llama3.2' },
      { name: 'Realtime', model: 'gpt-realtime', realtime: { voice: 'marin', turn_detection: 'semantic_vad', eagerness: 'auto' } },
      { name: 'Gemini Live', model: 'gemini-2.5-flash-native-audio-preview-09-2025', realtime: { voice: 'Kore', turn_detection: 'server_vad', silence_duration_ms: 500 } },
    ],
  },
);
export type CreateLlmModel = Static<typeof CreateLlmModel>;

export const UpdateLlmModel = Strict(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    model: Type.Optional(ModelId),
    provider: Type.Optional(StringEnum(LlmProviders)),
    base_url: Type.Optional(Nullable(BaseUrl)),
    system_prompt: Type.Optional(Nullable(SystemPrompt)),
    temperature: Type.Optional(Temperature),
    max_tokens: Type.Optional(Nullable(MaxTokens)),
    tool_ids: Type.Optional(ToolIds),
    knowledge_base_ids: Type.Optional(KbIds),
    realtime: Type.Optional(Nullable(RealtimeSettingsInput)),
  },
  { title: 'UpdateLlmModel', description: 'Any subset of the fields; lists replace the whole list.', examples: [{ system_prompt: 'Be concise.', temperature: 0.3 }] },
);
export type UpdateLlmModel = Static<typeof UpdateLlmModel>;

export const LlmModelParams = Strict({ model_id: Uuid() });
export const LlmModelList = ListEnvelope(LlmModel, 'LlmModel');
export const LlmModelListQuery = Type.Composite(
  [Pagination({ default: 50, maximum: 100 }), Type.Object({ provider: Type.Optional(StringEnum(LlmProviders)) })],
  { additionalProperties: false },
);
