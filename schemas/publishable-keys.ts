import { Type, DateTime, Nullable, Strict, StringEnum, Uuid, Pagination, type Static } from './common.ts';
import { OVERRIDABLE } from './calls.ts';

/**
 * What a publishable key may do. A route opts in with `publishableScope`; every other route answers 403 to
 * publishable keys.
 * - `calls:web`: start a web call (limited to the key's `agent_ids` when set).
 * - `voices:read`: read the voice catalogue (`GET /v1/voices`).
 */
export const PUBLISHABLE_SCOPES = ['calls:web', 'voices:read'] as const;
export type PublishableScope = (typeof PUBLISHABLE_SCOPES)[number];

const ORIGIN_DESCRIPTION =
  'Browser origins allowed to use the key: `scheme://host[:port]` (http or https, no path), matched exactly, ' +
  'or `https://*.example.com` for any subdomain of example.com (not example.com itself).';

/**
 * What a web call started with the key may send besides `agent_id` and `metadata` (docs/decisions/003-publishable-keys.md,
 * "Publishable keys and phone capacity"): a field of `overrides` by its name (`first_message`, `tts`, ...),
 * a variable as `variables.<name>`, or any variable with `variables.*`. None by default: anyone can copy a
 * page's key, so what it may change about an agent is opt-in.
 */
export const ALLOWED_OVERRIDE_PATTERN = `^(${OVERRIDABLE.join('|')}|variables\\.(\\*|[A-Za-z0-9_.-]{1,100}))$`;

const ALLOWED_OVERRIDES_DESCRIPTION =
  'What web calls started with this key may send besides `agent_id` and `metadata`: an `overrides` field by name ' +
  `(${OVERRIDABLE.map((f) => `\`${f}\``).join(', ')}), a variable as \`variables.<name>\`, or any variable with ` +
  '`variables.*`. Empty by default: a request that sends anything else is refused with 403 naming the fields.';

const AGENT_IDS_DESCRIPTION =
  'Limits `calls:web` to these agents of the organisation. Null (the default) allows every agent of the ' +
  'organisation, now and later, to be called by anyone who copies the key from the page: name the agents the page uses.';

const example = {
  id: '0b5e8f3a-6d2c-4f7e-8a1b-2c3d4e5f6a7b',
  name: 'Website widget',
  key: 'vap_pk_4fG7hJ2kL9mN3pQ6rS8tV1wX5yZ0aB2cD4eF6gH8iJ',
  key_prefix: 'vap_pk_',
  is_active: true,
  allowed_origins: ['https://www.example.com', 'https://*.example.com'],
  scopes: ['calls:web', 'voices:read'],
  agent_ids: ['3f9a1c2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b'],
  allowed_overrides: ['first_message', 'variables.customer_name'],
  last_used_at: '2025-01-16T10:00:00Z',
  revoked_at: null,
  created_at: '2025-01-15T09:30:00Z',
  updated_at: '2025-01-15T09:30:00Z',
};

export const PublishableKey = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    key: Type.String({
      description:
        'The whole key, in every answer (create, get, list): a publishable key is public by design, it sits in a web page. ' +
        'Keys created before keys were kept answer their masked form (prefix and last four characters)',
      examples: ['vap_pk_4fG7hJ2kL9mN3pQ6rS8tV1wX5yZ0aB2cD4eF6gH8iJ'],
    }),
    key_prefix: Type.String({ examples: ['vap_pk_'] }),
    is_active: Type.Boolean({ description: 'False when revoked or paused; the key is refused' }),
    allowed_origins: Type.Array(Type.String(), { description: ORIGIN_DESCRIPTION }),
    scopes: Type.Array(StringEnum(PUBLISHABLE_SCOPES)),
    agent_ids: Nullable(Type.Array(Uuid(), { description: AGENT_IDS_DESCRIPTION })),
    allowed_overrides: Type.Array(Type.String(), { description: ALLOWED_OVERRIDES_DESCRIPTION }),
    last_used_at: Nullable(DateTime({ description: 'Updated in batches, at most a few seconds behind' })),
    revoked_at: Nullable(DateTime()),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { title: 'PublishableKey', additionalProperties: false, examples: [example] },
);
export type PublishableKey = Static<typeof PublishableKey>;

const Origins = Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { minItems: 1, maxItems: 100, uniqueItems: true, description: ORIGIN_DESCRIPTION });
const Scopes = Type.Array(StringEnum(PUBLISHABLE_SCOPES), { minItems: 1, uniqueItems: true, description: 'What the key may do: `calls:web`, `voices:read`' });
const AgentIds = Nullable(Type.Array(Uuid(), { maxItems: 1000, uniqueItems: true, description: AGENT_IDS_DESCRIPTION }));
const AllowedOverrides = Type.Array(Type.String({ pattern: ALLOWED_OVERRIDE_PATTERN }), { maxItems: 200, uniqueItems: true, description: ALLOWED_OVERRIDES_DESCRIPTION });

export const CreatePublishableKey = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255, examples: ['Website widget'] }),
    allowed_origins: Origins,
    scopes: Scopes,
    agent_ids: Type.Optional(AgentIds),
    allowed_overrides: Type.Optional(AllowedOverrides),
  },
  {
    title: 'CreatePublishableKey',
    additionalProperties: false,
    examples: [
      {
        name: 'Website widget',
        allowed_origins: ['https://www.example.com', 'https://*.example.com'],
        scopes: ['calls:web', 'voices:read'],
        agent_ids: ['3f9a1c2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b'],
        allowed_overrides: ['first_message', 'variables.customer_name'],
      },
    ],
  },
);

export const UpdatePublishableKey = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    allowed_origins: Type.Optional(Origins),
    scopes: Type.Optional(Scopes),
    agent_ids: Type.Optional(AgentIds),
    allowed_overrides: Type.Optional(AllowedOverrides),
    is_active: Type.Optional(Type.Boolean({ description: 'Pause (false) or resume (true) the key. Revoked keys cannot be resumed.' })),
  },
  {
    title: 'UpdatePublishableKey',
    additionalProperties: false,
    examples: [{ allowed_origins: ['https://www.example.com', 'https://app.example.com'] }, { is_active: false }],
  },
);

export const PublishableKeyList = Type.Object(
  {
    items: Type.Array(PublishableKey),
    total: Type.Integer({ minimum: 0 }),
    limit: Type.Integer({ minimum: 1 }),
    offset: Type.Integer({ minimum: 0 }),
  },
  { title: 'PublishableKeyList', additionalProperties: false, examples: [{ items: [example], total: 1, limit: 20, offset: 0 }] },
);

export const PublishableKeyListQuery = Type.Composite(
  [Pagination({ default: 20, maximum: 100 }), Type.Object({ include_revoked: Type.Boolean({ default: false, description: 'Also list revoked keys' }) })],
  { additionalProperties: false },
);

export const PublishableKeyParams = Strict({ publishable_key_id: Uuid() });
