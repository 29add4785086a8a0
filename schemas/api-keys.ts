import { Type, DateTime, Nullable, Strict, ListEnvelope, Pagination, Uuid, type Static } from './common.ts';

export const ApiKey = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    key_prefix: Type.String({ examples: ['vap_sk_'] }),
    last4: Type.String({ description: 'Last four characters of the key' }),
    masked_key: Type.String({ examples: ['vap_sk_...x9Qz'] }),
    expires_at: Nullable(DateTime()),
    revoked_at: Nullable(DateTime()),
    last_used_at: Nullable(DateTime({ description: 'Updated in batches, at most a few seconds behind' })),
    created_at: DateTime(),
  },
  { title: 'ApiKey', additionalProperties: false },
);
export type ApiKey = Static<typeof ApiKey>;

export const CreatedApiKey = Type.Composite([ApiKey, Type.Object({ key: Type.String({ description: 'The full key. Shown only once.' }) })], {
  title: 'CreatedApiKey',
  additionalProperties: false,
});

export const CreateApiKey = Strict(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    expires_at: Type.Optional(Nullable(DateTime({ description: 'When the key stops working; omit for no expiry' }))),
  },
  { title: 'CreateApiKey' },
);

export const ApiKeyList = ListEnvelope(ApiKey, 'ApiKey');
export const ApiKeyListQuery = Type.Composite(
  [Pagination({ default: 20, maximum: 100 }), Type.Object({ include_revoked: Type.Boolean({ default: false }) })],
  { additionalProperties: false },
);
export const ApiKeyParams = Strict({ api_key_id: Uuid() });
