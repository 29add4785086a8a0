import { Type, DateTime, Nullable, StringEnum, ListEnvelope, Pagination, Metadata, type Static } from './common.ts';

export const ActorTypes = ['api_key', 'user', 'publishable_key', 'system', 'worker'] as const;

export const AuditEvent = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    actor_type: StringEnum(ActorTypes),
    actor_id: Nullable(Type.String({ description: 'API key id, user id, publishable key id; null for the system' })),
    action: Type.String({ description: 'Verb on a resource, e.g. agent.create', examples: ['agent.create'] }),
    resource_type: Type.String({ examples: ['agent'] }),
    resource_id: Nullable(Type.String()),
    request_id: Nullable(Type.String()),
    ip: Nullable(Type.String()),
    details: Metadata(),
    created_at: DateTime(),
  },
  { title: 'AuditEvent', additionalProperties: false },
);
export type AuditEvent = Static<typeof AuditEvent>;

export const AuditEventList = ListEnvelope(AuditEvent, 'AuditEvent');

export const AuditEventQuery = Type.Composite(
  [
    Pagination({ default: 50, maximum: 200 }),
    Type.Object({
      actor: Type.Optional(StringEnum(['me'] as const, { description: '`me`: only events made with the calling credential' })),
      resource_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
      action: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
      since: Type.Optional(DateTime({ description: 'Inclusive lower bound on created_at' })),
      until: Type.Optional(DateTime({ description: 'Exclusive upper bound on created_at' })),
    }),
  ],
  { additionalProperties: false },
);
