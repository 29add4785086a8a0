// The organisation's do-not-call list: numbers no campaign attempt and no outbound call may ring.
import { Type, DateTime, E164, Nullable, Strict, StringEnum, Uuid, PathId, ListEnvelope, Pagination, type Static } from './common.ts';

export const DNC_SOURCES = ['api', 'agent', 'agent_unverified'] as const;

export const DoNotCallEntry = Type.Object(
  {
    id: Uuid(),
    phone_number: Type.String({ description: 'E.164' }),
    reason: Nullable(Type.String()),
    source: StringEnum(DNC_SOURCES, { description:
        '`api` (added with POST), `agent` (the callee of an outbound call asked, through the built-in do_not_call tool), `agent_unverified` (an inbound caller asked: the number is the caller ID, which the caller can set; honoured, worth a look)',
    }),
    call_id: Nullable(Uuid({ description: 'The call on which the callee asked (source `agent`)' })),
    created_at: DateTime(),
  },
  {
    title: 'DoNotCallEntry',
    examples: [
      { id: '3c2b1a09-8f7e-4d6c-b5a4-938271605f4e', phone_number: '+14155550123', reason: 'asked on the phone', source: 'agent', call_id: '8a4c8f52-6a2c-4a0b-a0f5-2f9b1c6f3f10', created_at: '2026-11-21T10:02:31Z' },
    ],
  },
);
export type DoNotCallEntry = Static<typeof DoNotCallEntry>;

export const CreateDoNotCall = Strict(
  { phone_number: E164(), reason: Type.Optional(Type.String({ maxLength: 500 })) },
  { title: 'CreateDoNotCall', examples: [{ phone_number: '+14155550123', reason: 'unsubscribed by email' }] },
);
export type CreateDoNotCall = Static<typeof CreateDoNotCall>;

export const DoNotCallParams = Strict({ entry_id: PathId('Do-not-call entry') });
export const DoNotCallList = ListEnvelope(DoNotCallEntry, 'DoNotCallEntry');
export const DoNotCallQuery = Type.Composite(
  [Pagination({ default: 50, maximum: 100 }), Type.Object({ phone_number: Type.Optional(E164({ description: 'Only this number' })) })],
  { additionalProperties: false },
);
