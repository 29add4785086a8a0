// Agent versions, drafts, publication, rollback and rollout (traffic split, test gate). docs/decisions/038-agent-versions.md.
import { Type, DateTime, Nullable, Strict, StringEnum, Uuid, ListEnvelope, Pagination, type Static } from './common.ts';
import { ActorTypes } from './audit-events.ts';
import { LlmProviders } from './models.ts';

export const VERSION_KINDS = ['create', 'update', 'draft', 'dependency', 'migration'] as const;
export type VersionKind = (typeof VERSION_KINDS)[number];
/** Why a call ran its version: the published one, the traffic split's, or one its number, campaign or request pinned. */
export const VERSION_SOURCES = ['published', 'split', 'pinned'] as const;
export type VersionSource = (typeof VERSION_SOURCES)[number];

export const VersionNumber = (description: string) => Type.Integer({ minimum: 1, maximum: 2147483647, description });

const SnapshotModel = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    provider: StringEnum(LlmProviders),
    model: Type.String(),
    base_url: Nullable(Type.String()),
    system_prompt: Nullable(Type.String()),
    temperature: Type.Number(),
    max_tokens: Nullable(Type.Integer()),
  },
  { title: 'AgentVersionModel', description: "The agent's LLM model as it was: settings and system prompt" },
);
const SnapshotTool = Type.Object(
  {
    id: Uuid(),
    type: Type.String(),
    name: Type.String(),
    description: Nullable(Type.String()),
    parameters: Nullable(Type.Record(Type.String(), Type.Unknown())),
    url: Nullable(Type.String()),
    method: Nullable(Type.String()),
    timeout_ms: Nullable(Type.Integer()),
    destination: Nullable(Type.String()),
    transfer_mode: Nullable(Type.String()),
  },
  { title: 'AgentVersionTool', description: "A tool's definition as it was; its headers and signing secret are not versioned (the current ones apply)" },
);

export const VersionSnapshot = Type.Object(
  {
    agent: Type.Record(Type.String(), Type.Unknown(), { description: "The agent's own fields (those of PATCH /v1/agents/{id})" }),
    model: SnapshotModel,
    tools: Type.Array(SnapshotTool),
    knowledge_bases: Type.Array(Type.Object({ id: Uuid(), name: Type.String() }), {
      description: "The model's knowledge bases by reference: calls search their current content",
    }),
  },
  { title: 'AgentVersionSnapshot' },
);

export const VersionChange = Type.Object(
  {
    path: Type.String({ description: 'Dotted path in the snapshot: agent.first_message, model.system_prompt, tools.<name>.url, knowledge_bases.<id>' }),
    op: StringEnum(['add', 'remove', 'replace'] as const),
    from: Type.Optional(Type.Unknown({ description: 'The value in the version compared against (absent for add)' })),
    to: Type.Optional(Type.Unknown({ description: 'The value in this version (absent for remove)' })),
  },
  { title: 'AgentVersionChange', additionalProperties: false },
);
export type VersionChange = Static<typeof VersionChange>;

export const Actor = Type.Object(
  { type: StringEnum(ActorTypes), id: Nullable(Type.String({ description: 'API key id, user id; null for the system' })) },
  { title: 'Actor', additionalProperties: false, description: 'Who made the version, as audit events record actors' },
);

export const AgentVersion = Type.Object(
  {
    agent_id: Uuid(),
    version: Type.Integer({ minimum: 1 }),
    kind: StringEnum(VERSION_KINDS, {
      description:
        '`create`; `update` (PATCH /v1/agents/{id}, published at once); `draft` (PATCH /v1/agents/{id}/draft); `dependency` (its LLM model or one of its tools changed); `migration` (version 1 of an agent older than versions)',
    }),
    base_version: Nullable(Type.Integer({ description: 'The version it was made from; `diff` is against it unless `against` says otherwise' })),
    status: StringEnum(['published', 'draft', 'archived'] as const, {
      description: '`published`: the version calls follow now; `draft`: the agent\'s draft; `archived`: any other',
    }),
    published_at: Nullable(DateTime({ description: 'When it was first published; null if never' })),
    actor: Actor,
    changes: Type.Array(Type.String(), { description: 'Snapshot paths that differ from base_version' }),
    cause: Nullable(
      Type.Object(
        { resource_type: Type.String(), resource_id: Type.String(), action: Type.String() },
        { additionalProperties: false, description: 'For a `dependency` version: the change that made it (e.g. llm_model.update)' },
      ),
    ),
    created_at: DateTime(),
    snapshot: Nullable(VersionSnapshot),
    effective_system_prompt: Nullable(Type.String({ description: 'The job description and model prompt of this version, as on GET /v1/agents/{id}; null in lists' })),
    diff: Nullable(
      Type.Object(
        {
          against: Nullable(Type.Integer({ description: 'The version compared against; null for a first version (everything is added)' })),
          changes: Type.Array(VersionChange),
        },
        { additionalProperties: false, description: 'Null in lists' },
      ),
    ),
  },
  { title: 'AgentVersion', additionalProperties: false },
);
export type AgentVersion = Static<typeof AgentVersion>;

export const AgentVersionList = ListEnvelope(AgentVersion, 'AgentVersion');
export const VersionListQuery = Type.Composite([Pagination({ default: 50, maximum: 100 })], { additionalProperties: false });
export const VersionParams = Strict({ agent_id: Uuid(), version: VersionNumber('Version number') });
export const VersionQuery = Type.Object(
  { against: Type.Optional(VersionNumber('Compare with this version instead of base_version (any two versions of the agent)')) },
  { additionalProperties: false },
);

export const PublishBody = Strict(
  { version: Type.Optional(VersionNumber("The version to publish; default the agent's draft")) },
  { title: 'PublishAgentVersion', description: 'Publishes the draft, or the version given. With a test gate, the version must have passed the suite.' },
);
export const RollbackBody = Strict(
  { version: VersionNumber('A version published before') },
  { title: 'RollbackAgent', description: 'Publishes again a version that was published before; the test gate does not apply.' },
);

export const Split = Type.Object(
  {
    version: VersionNumber('The version that takes a share of the calls'),
    percent: Type.Integer({ minimum: 1, maximum: 99, description: 'Share of the calls following the published version that run `version` instead' }),
  },
  { title: 'TrafficSplit', additionalProperties: false },
);

export const Rollout = Type.Object(
  {
    agent_id: Uuid(),
    published_version: Nullable(Type.Integer()),
    draft_version: Nullable(Type.Integer()),
    split: Nullable(Split),
    test_suite_id: Nullable(Uuid({ description: 'Suite that a version must pass before it is published' })),
  },
  { title: 'AgentRollout', additionalProperties: false },
);
export type Rollout = Static<typeof Rollout>;

export const UpdateRollout = Strict(
  {
    split: Type.Optional(
      Nullable(
        Strict(
          {
            version: VersionNumber('A version of the agent other than the published one'),
            percent: Type.Integer({ minimum: 1, maximum: 99, description: 'Share (%) of the calls that follow the published version sent to `version`' }),
          },
          { title: 'TrafficSplitInput' },
        ),
      ),
    ),
    test_suite_id: Type.Optional(Nullable(Uuid({ description: 'A test suite of the agent; null removes the gate' }))),
  },
  {
    title: 'UpdateRollout',
    description:
      'The traffic split (null ends it) and the test gate. A call follows the split when it is not pinned: the share is sticky per caller number ' +
      '(the same number always lands on the same side while the split lasts), and random for web calls.',
    examples: [{ split: { version: 4, percent: 10 } }, { test_suite_id: '6a1f0c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b' }],
  },
);
export type UpdateRollout = Static<typeof UpdateRollout>;

/** One expectation that failed in the gate's run. */
export const FailedExpectation = Type.Object(
  {
    scenario_id: Type.String(),
    scenario_name: Type.String(),
    expectation: Type.String({ description: "The expectation's name, or its type when it has none" }),
    type: Type.String(),
    reason: Nullable(Type.String()),
  },
  { title: 'FailedExpectation', additionalProperties: false },
);
export type FailedExpectation = Static<typeof FailedExpectation>;

/** The 409 of a publish that the test gate refuses. */
export const GateConflict = Type.Object(
  {
    detail: Type.String(),
    type: Type.Literal('conflict'),
    request_id: Type.String(),
    gate: StringEnum(['pending', 'failed'] as const, {
      description: '`pending`: the gate suite has not passed this version yet (a run was started, or is in flight: `test_run_id`); `failed`: its newest run failed',
    }),
    test_run_id: Nullable(Type.String()),
    test_suite_id: Nullable(Type.String()),
    failed_expectations: Type.Optional(Type.Array(FailedExpectation)),
  },
  { title: 'TestGateConflict', description: 'Also the plain conflict body (no draft to publish, a deleted model)' },
);
