import { Type, DateTime, Strict, StringEnum, Uuid, ListEnvelope, Pagination, Metadata, type Static } from './common.ts';

// A squad: agents that hand a call to one another inside the same call (docs/decisions/033-squads.md).

/** What the next agent gets of the conversation: all of it, or a summary made by the current agent's model. */
export const HANDOFF_CONTEXTS = ['full', 'summary'] as const;
export type HandoffContext = (typeof HANDOFF_CONTEXTS)[number];

export const SQUAD_DEFAULTS = { max_handoffs: 10, context: 'full' } as const;
export const MAX_SQUAD_AGENTS = 20;

export const Handoff = Strict(
  {
    from_agent_id: Uuid({ description: 'The agent that may hand the call on; a member of the squad' }),
    to_agent_id: Uuid({ description: 'The agent that takes the call; a member of the squad, not from_agent_id' }),
    description: Type.String({
      minLength: 1,
      maxLength: 1000,
      description: "When to hand the call on, as the model reads it: the description of from_agent's generated `handoff_to_<name>` tool",
    }),
    context: Type.Optional(
      StringEnum(HANDOFF_CONTEXTS, {
        description: `\`full\`: the next agent gets the conversation so far; \`summary\`: a summary of it, written by the current agent's model at the hand-off. Default '${SQUAD_DEFAULTS.context}'`,
      }),
    ),
  },
  { title: 'Handoff', description: 'One allowed hand-off, from one member to another.' },
);

const StoredHandoff = Type.Object(
  { from_agent_id: Uuid(), to_agent_id: Uuid(), description: Type.String(), context: StringEnum(HANDOFF_CONTEXTS) },
  { title: 'SquadHandoff', additionalProperties: false },
);

const settings = {
  agent_ids: Type.Array(Uuid(), {
    minItems: 1,
    maxItems: MAX_SQUAD_AGENTS,
    uniqueItems: true,
    description: `The members: agents of your organisation (at most ${MAX_SQUAD_AGENTS})`,
  }),
  entry_agent_id: Uuid({ description: 'The member that answers when a call starts on the squad' }),
  handoffs: Type.Array(Handoff, {
    maxItems: 100,
    description: 'Allowed hand-offs; each (from, to) pair at most once. Cycles are allowed (bounded by max_handoffs)',
  }),
  max_handoffs: Type.Integer({
    minimum: 1,
    maximum: 100,
    description: `Most hand-offs in one call; past it the handoff tools answer that no more are possible and the current agent keeps the call. Default ${SQUAD_DEFAULTS.max_handoffs}`,
  }),
  metadata: Metadata({ description: 'Free-form key/value pairs; default {}' }),
};

export const Squad = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    agent_ids: Type.Array(Uuid()),
    entry_agent_id: Uuid(),
    handoffs: Type.Array(StoredHandoff),
    max_handoffs: Type.Integer(),
    metadata: Metadata(),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  {
    title: 'Squad',
    additionalProperties: false,
    examples: [
      {
        id: '6d1f0b2e-3c4a-4e5f-8a9b-0c1d2e3f4a5b',
        name: 'Front desk and billing',
        agent_ids: ['3f6e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f', '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d'],
        entry_agent_id: '3f6e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f',
        handoffs: [
          {
            from_agent_id: '3f6e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f',
            to_agent_id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
            description: 'The caller asks about an invoice, a payment or a refund.',
            context: 'summary',
          },
        ],
        max_handoffs: 10,
        metadata: {},
        created_at: '2026-11-27T09:30:00Z',
        updated_at: '2026-11-27T09:30:00Z',
      },
    ],
  },
);
export type Squad = Static<typeof Squad>;

export const CreateSquad = Strict(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    agent_ids: settings.agent_ids,
    entry_agent_id: settings.entry_agent_id,
    handoffs: Type.Optional(settings.handoffs),
    max_handoffs: Type.Optional(settings.max_handoffs),
    metadata: Type.Optional(settings.metadata),
  },
  {
    title: 'CreateSquad',
    description: 'Required: `name`, `agent_ids` and `entry_agent_id` (one of them). `handoffs` defaults to [].',
    examples: [
      {
        name: 'Front desk and billing',
        agent_ids: ['3f6e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f', '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d'],
        entry_agent_id: '3f6e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f',
        handoffs: [
          {
            from_agent_id: '3f6e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f',
            to_agent_id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
            description: 'The caller asks about an invoice, a payment or a refund.',
            context: 'summary',
          },
        ],
      },
    ],
  },
);
export type CreateSquad = Static<typeof CreateSquad>;

export const UpdateSquad = Strict(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    agent_ids: Type.Optional(settings.agent_ids),
    entry_agent_id: Type.Optional(settings.entry_agent_id),
    handoffs: Type.Optional(settings.handoffs),
    max_handoffs: Type.Optional(settings.max_handoffs),
    metadata: Type.Optional(settings.metadata),
  },
  {
    title: 'UpdateSquad',
    description: 'Any subset of the fields; lists replace the stored ones whole. The result is checked as a whole, as on create.',
    examples: [{ max_handoffs: 4 }],
  },
);
export type UpdateSquad = Static<typeof UpdateSquad>;

export const SquadParams = Strict({ squad_id: Uuid() });
export const SquadList = ListEnvelope(Squad, 'Squad');
export const SquadListQuery = Type.Composite([Pagination({ default: 50, maximum: 100 })], { additionalProperties: false });
