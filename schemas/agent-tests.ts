// Agent tests: scenarios (a simulated caller with expectations), suites and runs (docs/decisions/020-agent-tests.md). An expectation and a tool mock are each one flat object told apart by `type`; the fields
// each type takes are checked by the service, as for tools, so a wrong field gets a 422 at its own loc.
import { Type, DateTime, Nullable, Strict, StringEnum, Uuid, ListEnvelope, Pagination, Metadata, type Static } from './common.ts';
import { PATTERN_MAX } from '../shared/text-caps.ts';

export const EXPECTATION_TYPES = [
  'llm_judge',
  'tool_called',
  'transcript_contains',
  'transcript_not_contains',
  'ended_by',
  'max_latency_ms',
  'outcome_equals',
] as const;
export type ExpectationType = (typeof EXPECTATION_TYPES)[number];

export const TEST_MODES = ['text', 'voice'] as const;
export const RUN_STATUSES = ['queued', 'running', 'completed', 'canceled'] as const;
export const RESULT_STATUSES = ['pending', 'running', 'passed', 'failed', 'error', 'canceled'] as const;
export type ResultStatus = (typeof RESULT_STATUSES)[number];
export const ENDED_BY = ['agent', 'caller', 'limit'] as const;

/** Defaults of the optional scenario fields. */
export const SCENARIO_DEFAULTS = { max_turns: 10, max_duration_seconds: 300 } as const;
/** Most scenarios in one run (a suite or a list of ids). */
export const MAX_RUN_SCENARIOS = 200;

const VariableValue = Type.Unsafe<string | number | boolean>({ type: ['string', 'number', 'boolean'] });

export const ScriptLine = Strict(
  {
    say: Type.String({ minLength: 1, maxLength: 2000, description: 'What the caller says' }),
    wait_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 600000,
        description:
          "Silence before the line, in ms. In text mode on the conversation's clock (no real wait): a wait at least the agent's silence_timeout_seconds ends the call (ended_by agent, end_reason silence_timeout)",
      }),
    ),
  },
  {
    title: 'ScriptLine',
    description: 'One line of the simulated caller: an object, not a plain string',
    examples: [{ say: 'When are you open on Saturday?', wait_ms: 1500 }],
  },
);

export const ArgumentMatcher = Strict(
  {
    equals: Type.Optional(Type.Unknown({ description: 'The argument is exactly this JSON value' })),
    contains: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'The argument, as text, contains this (any case)' })),
    matches: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: PATTERN_MAX,
        description:
          'The argument, as text (its first 16,000 characters), matches this regular expression, any case: JavaScript syntax run in linear time (RE2: no lookaround, no backreferences)',
      }),
    ),
    exists: Type.Optional(Type.Boolean({ description: 'true: the argument is present; false: it is absent' })),
  },
  { title: 'ArgumentMatcher', description: 'Exactly one of `equals`, `contains`, `matches`, `exists`.' },
);

const expectationFields = {
  type: StringEnum(EXPECTATION_TYPES),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A label shown with the result; defaults to a description of the check' })),
  question: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 4000,
      description: 'llm_judge: a rubric question about the conversation, answered pass or fail with a reason by the judge model',
    }),
  ),
  tool: Type.Optional(Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$', description: 'tool_called: the tool name the agent must call' })),
  arguments: Type.Optional(
    Type.Record(Type.String({ maxLength: 64 }), ArgumentMatcher, {
      maxProperties: 20,
      description: 'tool_called: matchers per argument name; one call of the tool must satisfy all of them',
    }),
  ),
  text: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 500,
      description: 'transcript_contains / transcript_not_contains: words looked for, ignoring case and punctuation',
    }),
  ),
  role: Type.Optional(
    StringEnum(['agent', 'user', 'any'] as const, { description: 'transcript_contains / transcript_not_contains: whose messages are searched; default any' }),
  ),
  by: Type.Optional(StringEnum(['agent', 'caller'] as const, { description: 'ended_by: who must end the conversation' })),
  end_reason: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: 'ended_by: the end reason it must end with, e.g. agent_hangup, user_hangup, silence_timeout' }),
  ),
  max_ms: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 600000, description: "max_latency_ms: the bound of the median (p50) of the agent's per-turn response time" }),
  ),
  outcome: Type.Optional(
    Type.String({
      pattern: '^[a-z]+(_[a-z]+)*$',
      maxLength: 60,
      description: 'outcome_equals: the outcome label the analysis model must give the conversation',
    }),
  ),
};

export const Expectation = Strict(expectationFields, {
  title: 'Expectation',
  description:
    'One check of the conversation. `type` says which fields it takes: llm_judge `question`; tool_called `tool` and optionally `arguments`; ' +
    'transcript_contains and transcript_not_contains `text` and optionally `role`; ended_by `by` and optionally `end_reason`; ' +
    'max_latency_ms `max_ms`; outcome_equals `outcome`. Every type takes an optional `name`.',
  examples: [
    { type: 'llm_judge', question: 'Did the agent confirm the new appointment time before ending the call?' },
    { type: 'tool_called', tool: 'book_appointment', arguments: { day: { equals: 'wednesday' }, name: { contains: 'ada' } } },
    { type: 'transcript_not_contains', text: 'I cannot help', role: 'agent' },
    { type: 'ended_by', by: 'agent', end_reason: 'agent_hangup' },
  ],
});
export type Expectation = Static<typeof Expectation>;

export const ToolMock = Strict(
  {
    tool: Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$', description: "A tool of the agent's model (or any name the model calls)" }),
    result: Type.Optional(Type.Unknown({ description: 'What the tool answers: a string as it is, any other JSON value as JSON text. Default "ok"' })),
    error: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'The tool fails with this message instead of answering' })),
  },
  { title: 'ToolMock', description: 'The tool is not called during the test; the model gets `result` (or `error`).' },
);
export type ToolMock = Static<typeof ToolMock>;

const scenarioSettings = {
  persona: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 8000,
      description: 'Instructions of the caller model, e.g. "You are a patient who wants to move Tuesday\'s appointment". Exactly one of `persona` and `script`',
    }),
  ),
  script: Type.Optional(
    Type.Array(ScriptLine, { minItems: 1, maxItems: 100, description: 'Fixed caller lines, said in order; after the last one the caller hangs up' }),
  ),
  variables: Type.Optional(
    Type.Record(Type.String(), VariableValue, { maxProperties: 100, description: "Call variables for the agent's {{name}} placeholders; default {}" }),
  ),
  max_turns: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 100,
      description: `Most caller turns; then the test ends (ended_by limit, end_reason max_turns). Default ${SCENARIO_DEFAULTS.max_turns}`,
    }),
  ),
  max_duration_seconds: Type.Optional(
    Type.Integer({
      minimum: 5,
      maximum: 3600,
      description: `Longest conversation time; then the test ends (ended_by limit, end_reason max_duration). Default ${SCENARIO_DEFAULTS.max_duration_seconds}`,
    }),
  ),
  tool_mocks: Type.Optional(Type.Array(ToolMock, { maxItems: 50, description: 'Tools answered by the scenario instead of their servers; default []' })),
  expectations: Type.Optional(Type.Array(Expectation, { maxItems: 50, description: 'Checks of the finished conversation; default []' })),
  metadata: Type.Optional(Metadata({ description: 'Free-form key/value pairs; default {}' })),
};

export const CreateScenario = Strict(
  { name: Type.String({ minLength: 1, maxLength: 255 }), ...scenarioSettings },
  {
    title: 'CreateTestScenario',
    description: 'Required: `name` and one of `persona` or `script`.',
    examples: [
      {
        name: 'Moves an appointment',
        persona: "You are Ada Lovelace. You want to move Tuesday's cleaning to Wednesday morning. You get impatient if asked the same thing twice.",
        max_turns: 8,
        tool_mocks: [{ tool: 'book_appointment', result: { booked: true, time: 'Wednesday 09:30' } }],
        expectations: [
          { type: 'tool_called', tool: 'book_appointment', arguments: { day: { contains: 'wednesday' } } },
          { type: 'llm_judge', question: 'Did the agent confirm the new time?' },
        ],
      },
      {
        name: 'Asks for opening hours',
        script: [{ say: 'Hi, when are you open on Saturday?' }, { say: 'Thanks, bye.' }],
        expectations: [{ type: 'transcript_contains', text: 'nine', role: 'agent' }],
      },
    ],
  },
);
export type CreateScenario = Static<typeof CreateScenario>;

export const UpdateScenario = Strict(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })), ...scenarioSettings },
  {
    title: 'UpdateTestScenario',
    description: 'Any subset; lists and objects replace the stored value whole. Setting `persona` drops a stored `script` and the reverse.',
  },
);
export type UpdateScenario = Static<typeof UpdateScenario>;

const scenarioFields = {
  id: Uuid(),
  name: Type.String(),
  persona: Nullable(Type.String()),
  script: Nullable(Type.Array(Type.Object({ say: Type.String(), wait_ms: Type.Optional(Type.Integer()) }, { additionalProperties: false }))),
  variables: Type.Record(Type.String(), VariableValue),
  max_turns: Type.Integer(),
  max_duration_seconds: Type.Integer(),
  tool_mocks: Type.Array(ToolMock),
  expectations: Type.Array(Expectation),
  metadata: Metadata(),
};

export const Scenario = Type.Object(
  { ...scenarioFields, created_at: DateTime(), updated_at: DateTime() },
  { title: 'TestScenario', additionalProperties: false },
);
export type Scenario = Static<typeof Scenario>;
/** A scenario as a run keeps it (the copy taken when the run was created). */
export const ScenarioSnapshot = Type.Object(scenarioFields, { title: 'TestScenarioSnapshot', additionalProperties: false });
export type ScenarioSnapshot = Static<typeof ScenarioSnapshot>;

export const ScenarioParams = Strict({ scenario_id: Uuid() });
export const ScenarioList = ListEnvelope(Scenario, 'TestScenario');
export const ScenarioListQuery = Type.Composite([Pagination({ default: 50, maximum: 100 })], { additionalProperties: false });

// ---- Suites --------------------------------------------------------------------------------------------------

const ScenarioIds = Type.Array(Uuid(), {
  minItems: 1,
  maxItems: MAX_RUN_SCENARIOS,
  uniqueItems: true,
  description: 'Scenarios of your organisation, run in this order',
});

export const CreateSuite = Strict(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    agent_id: Uuid({ description: 'The agent the suite tests (a run may still name another agent of your organisation)' }),
    scenario_ids: ScenarioIds,
    metadata: Type.Optional(Metadata({ description: 'Free-form key/value pairs; default {}' })),
  },
  {
    title: 'CreateTestSuite',
    examples: [{ name: 'Front desk regressions', agent_id: '3f6e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f', scenario_ids: ['8d0c9a4e-2f1b-4c3d-9e8f-7a6b5c4d3e2f'] }],
  },
);
export type CreateSuite = Static<typeof CreateSuite>;

export const UpdateSuite = Strict(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    agent_id: Type.Optional(Uuid()),
    scenario_ids: Type.Optional(ScenarioIds),
    metadata: Type.Optional(Metadata()),
  },
  { title: 'UpdateTestSuite', description: 'Any subset; `scenario_ids` replaces the list whole.' },
);
export type UpdateSuite = Static<typeof UpdateSuite>;

export const Suite = Type.Object(
  { id: Uuid(), name: Type.String(), agent_id: Uuid(), scenario_ids: Type.Array(Uuid()), metadata: Metadata(), created_at: DateTime(), updated_at: DateTime() },
  { title: 'TestSuite', additionalProperties: false },
);
export type Suite = Static<typeof Suite>;
export const SuiteParams = Strict({ suite_id: Uuid() });
export const SuiteList = ListEnvelope(Suite, 'TestSuite');
export const SuiteListQuery = Type.Composite(
  [Pagination({ default: 50, maximum: 100 }), Type.Object({ agent_id: Type.Optional(Uuid({ description: 'Only suites of this agent' })) })],
  { additionalProperties: false },
);

// ---- Runs ----------------------------------------------------------------------------------------------------

export const CreateRun = Strict(
  {
    suite_id: Type.Optional(Uuid({ description: 'Run every scenario of this suite. Exactly one of `suite_id` and `scenario_ids`' })),
    scenario_ids: Type.Optional(ScenarioIds),
    mode: Type.Optional(
      StringEnum(TEST_MODES, {
        description:
          "`text`: the agent's LLM and tools, no audio (fast). `voice`: a simulated caller in a real room through the real worker, speaking with TTS and listening with STT. Default 'text'",
      }),
    ),
    agent_version: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2147483647,
        description: "The agent version to test (GET /v1/agents/{id}/versions), e.g. its draft; default the published version. A run of the agent's gate suite against a version lets it be published",
      }),
    ),
  },
  { title: 'CreateTestRun', examples: [{ suite_id: '2b4c6d8e-0f1a-4b3c-8d5e-7f9a1b3c5d7e', mode: 'text' }] },
);
export type CreateRun = Static<typeof CreateRun>;

const LatencyStat = Type.Object(
  { p50_ms: Type.Number(), avg_ms: Type.Number(), min_ms: Type.Number(), max_ms: Type.Number(), samples: Type.Integer() },
  { title: 'TestLatency', additionalProperties: false },
);

export const ExpectationResult = Type.Object(
  {
    type: StringEnum(EXPECTATION_TYPES),
    name: Type.String(),
    passed: Type.Boolean(),
    reason: Type.String({ description: "Why it passed or failed, e.g. the judge's reason or the calls the tool did get" }),
  },
  { title: 'ExpectationResult', additionalProperties: false },
);
export type ExpectationResult = Static<typeof ExpectationResult>;

export const ToolCallRecord = Type.Object(
  {
    tool: Type.String(),
    arguments: Type.Unknown({ description: 'The arguments the model gave (an object, or the raw text when it was not JSON)' }),
    output: Type.String(),
    error: Type.Boolean(),
    mocked: Type.Boolean({ description: "Answered by the scenario's tool_mocks, not the tool's server" }),
  },
  { title: 'TestToolCall', additionalProperties: false },
);
export type ToolCallRecord = Static<typeof ToolCallRecord>;

export const TestMessage = Type.Object(
  { role: StringEnum(['agent', 'user'] as const), content: Type.String() },
  { title: 'TestMessage', additionalProperties: false },
);
export type TestMessage = Static<typeof TestMessage>;

export const ScenarioResult = Type.Object(
  {
    scenario_id: Uuid(),
    scenario_name: Type.String(),
    status: StringEnum(RESULT_STATUSES, {
      description: '`passed`: every expectation passed; `failed`: one did not; `error`: the conversation could not be held (the reason is in `error`)',
    }),
    expectations: Type.Array(ExpectationResult),
    messages: Type.Array(TestMessage, { description: 'The conversation: `user` is the simulated caller' }),
    tool_calls: Type.Array(ToolCallRecord),
    ended_by: Nullable(StringEnum(ENDED_BY, { description: '`limit`: max_turns or max_duration ended it' })),
    end_reason: Nullable(Type.String()),
    outcome: Nullable(Type.String({ description: "The analysis model's outcome label (only when an outcome_equals expectation asks for it)" })),
    turns: Type.Integer({ description: 'Caller turns' }),
    duration_seconds: Nullable(Type.Number({ description: "The conversation's own time" })),
    latency: Type.Object(
      { e2e: LatencyStat },
      {
        description:
          "The agent's per-turn response time. Text mode: its LLM and tool time. Voice mode: what the simulated caller heard, from the end of its line to the agent's first sound",
        additionalProperties: false,
      },
    ),
    call_id: Nullable(Uuid({ description: 'Voice mode: the test call (GET /v1/calls/{id}); null in text mode' })),
    recording_url: Nullable(Type.String({ description: "Voice mode: the call's recording when the agent records (signed, 4 hours); null otherwise" })),
    error: Nullable(Type.String()),
    started_at: Nullable(DateTime()),
    ended_at: Nullable(DateTime()),
  },
  { title: 'TestScenarioResult', additionalProperties: false },
);
export type ScenarioResult = Static<typeof ScenarioResult>;

export const Run = Type.Object(
  {
    id: Uuid(),
    agent_id: Uuid(),
    suite_id: Nullable(Uuid()),
    mode: StringEnum(TEST_MODES),
    status: StringEnum(RUN_STATUSES, { description: 'queued → running → completed, or canceled' }),
    total: Type.Integer(),
    passed: Type.Integer(),
    failed: Type.Integer(),
    errored: Type.Integer(),
    agent_version: Nullable(Type.Integer({ description: 'The agent version the run tests; null for runs made before versions' })),
    started_at: Nullable(DateTime()),
    ended_at: Nullable(DateTime()),
    created_at: DateTime(),
    results: Nullable(Type.Array(ScenarioResult, { description: 'Per scenario, in order; null in lists' })),
  },
  { title: 'TestRun', additionalProperties: false },
);
export type Run = Static<typeof Run>;

export const AgentRunParams = Strict({ agent_id: Uuid() });
export const RunParams = Strict({ test_run_id: Uuid() });
export const RunList = ListEnvelope(Run, 'TestRun');
export const RunListQuery = Type.Composite([Pagination({ default: 20, maximum: 100 }), Type.Object({ status: Type.Optional(StringEnum(RUN_STATUSES)) })], {
  additionalProperties: false,
});
