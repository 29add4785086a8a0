import { Type, DateTime, Nullable, Strict, Uuid, type Static } from './common.ts';

const example = {
  id: '5b0c7e1a-2f3d-4a5b-8c9d-0e1f2a3b4c5d',
  name: 'Acme',
  settings: { timezone: 'Europe/Paris', default_webhook_id: null, default_agent_id: '3f9a1c2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b' },
  limits: { max_calls_per_day: 1000, kb_token_budget: 1000000, max_concurrent_calls: 10 },
  created_at: '2025-01-15T09:30:00Z',
  updated_at: '2025-01-15T09:30:00Z',
};

export const WorkspaceSettings = Type.Object(
  {
    timezone: Type.String({ description: 'IANA time zone of the organisation (reports, schedules); default UTC', examples: ['Europe/Paris'] }),
    default_webhook_id: Nullable(Uuid({ description: 'Webhook meant for the events of calls whose agent has none. Every webhook subscribed to an event receives it; this never takes an event from another' })),
    default_agent_id: Nullable(Uuid({ description: 'Agent that answers inbound calls to numbers with no agent routing of their own' })),
  },
  { title: 'WorkspaceSettings', additionalProperties: false },
);

export const WorkspaceLimits = Type.Object(
  {
    max_calls_per_day: Type.Integer({ minimum: 0, description: 'Calls the organisation may start per UTC day' }),
    kb_token_budget: Type.Integer({ minimum: 0, description: 'Tokens the knowledge bases of the organisation may hold' }),
    max_concurrent_calls: Type.Integer({ minimum: 0, description: 'Calls in progress at the same time' }),
  },
  {
    title: 'WorkspaceLimits',
    additionalProperties: false,
    description: 'Read-only here: the platform operator changes them (`npm run admin -- set-limits`).',
  },
);

export const Workspace = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    settings: WorkspaceSettings,
    limits: WorkspaceLimits,
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { title: 'Workspace', additionalProperties: false, examples: [example] },
);
export type Workspace = Static<typeof Workspace>;

export const UpdateWorkspace = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    settings: Type.Optional(
      Strict(
        {
          timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'An IANA time zone name', examples: ['America/New_York'] })),
          default_webhook_id: Type.Optional(Nullable(Uuid({ description: 'A webhook of the organisation; null clears it' }))),
          default_agent_id: Type.Optional(Nullable(Uuid({ description: 'An agent of the organisation; null clears it' }))),
        },
        { description: 'Only the settings given change' },
      ),
    ),
    limits: Type.Optional(Type.Unknown({ readOnly: true, description: 'Read-only: sending it is a 422 (`read_only`)' })),
  },
  {
    title: 'UpdateWorkspace',
    additionalProperties: false,
    examples: [{ name: 'Acme Inc.', settings: { timezone: 'America/New_York', default_agent_id: '3f9a1c2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b' } }],
  },
);
