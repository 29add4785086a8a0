import { Type, DateTime, Nullable, Strict, StringEnum, Uuid, PathId, Metadata, type Static } from './common.ts';

/** Providers whose keys an organisation may bring; the media worker uses them for that org's calls. */
export const CredentialProviders = ['openai', 'anthropic', 'gemini', 'deepgram', 'elevenlabs', 'cartesia'] as const;
export type CredentialProvider = (typeof CredentialProviders)[number];

const example = {
  id: '6f1c2a8e-3b7d-4c1e-9a55-0d2f4b8e7c11',
  name: 'Production OpenAI',
  provider: 'openai',
  masked_key: 'sk-...3xQz',
  metadata: { team: 'support' },
  created_at: '2025-01-15T09:30:00Z',
  updated_at: '2025-01-15T09:30:00Z',
};

export const Credential = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    provider: StringEnum(CredentialProviders),
    masked_key: Type.String({
      description:
        'The key is never returned in full: its first 3 and last 4 characters for keys of 16 characters or more, otherwise `****`',
      examples: ['sk-...3xQz', '****'],
    }),
    metadata: Metadata(),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { title: 'Credential', additionalProperties: false, examples: [example] },
);
export type Credential = Static<typeof Credential>;

export const CreateCredential = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255, examples: ['Production OpenAI'] }),
    provider: StringEnum(CredentialProviders),
    api_key: Type.String({ minLength: 1, description: 'The provider key. Stored encrypted; never returned.', examples: ['sk-proj-...'] }),
    metadata: Type.Optional(Metadata()),
  },
  {
    title: 'CreateCredential',
    additionalProperties: false,
    examples: [{ name: 'Production OpenAI', provider: 'openai', api_key: 'sk-proj-0123456789abcdef3xQz', metadata: { team: 'support' } }],
  },
);

export const UpdateCredential = Type.Object(
  {
    name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 255, description: 'New name; null or absent keeps the current one' }))),
    api_key: Type.Optional(Nullable(Type.String({ minLength: 1, description: 'Replacement key; null or absent keeps the current one' }))),
    metadata: Type.Optional(Metadata({ description: 'Replaces the whole metadata object' })),
  },
  { title: 'UpdateCredential', additionalProperties: false, examples: [{ api_key: 'sk-proj-fedcba98765432109zYx' }, { name: 'Staging OpenAI', metadata: {} }] },
);

export const CredentialList = Type.Object(
  {
    items: Type.Array(Credential),
    total: Type.Integer({ minimum: 0 }),
    limit: Type.Integer({ minimum: 1 }),
    offset: Type.Integer({ minimum: 0 }),
  },
  { title: 'CredentialList', additionalProperties: false, examples: [{ items: [example], total: 1, limit: 50, offset: 0 }] },
);

export const CredentialListQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
    offset: Type.Integer({ minimum: 0, maximum: 2147483647, default: 0 }),
    provider: Type.Optional(StringEnum(CredentialProviders, { description: 'Only credentials of this provider' })),
  },
  { additionalProperties: false },
);

export const CredentialParams = Strict({ credential_id: Uuid() });
/** The spec types the DELETE path parameter as a plain string: an id that is not a uuid is simply not found. */
export const CredentialDeleteParams = Strict({ credential_id: PathId('Credential') });
