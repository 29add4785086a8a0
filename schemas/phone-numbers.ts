// Phone numbers: search, purchase, routing. The carrier is internal: no carrier field is ever accepted.
import { Type, DateTime, Nullable, Strict, ListEnvelope, Pagination, StringEnum, Uuid, PathId, E164, exactlyOneOf, type Static } from './common.ts';

export const PHONE_NUMBER_STATUSES = ['active', 'inactive'] as const;

const Country = Type.String({
  minLength: 2,
  maxLength: 2,
  pattern: '^[A-Za-z]{2}$',
  description: 'ISO 3166-1 alpha-2 country code',
});
/** Where the spec leaves it out, the country is the US (as at Twilio and Telnyx); the default is in the schema. */
const CountryDefaultUS = Type.String({ ...Country, default: 'US', description: 'ISO 3166-1 alpha-2 country code (default US)' });
const AreaCode = Type.String({ pattern: '^[2-9][0-9]{2}$', description: 'Three-digit area code (US and CA only)' });
const Contains = Type.String({
  minLength: 1,
  maxLength: 16,
  pattern: '^[0-9A-Za-z]+$',
  description: 'Digits or letters the number must contain (letters are matched by their keypad digit: "CAFE" = 2233)',
});
const FriendlyName = Type.String({ minLength: 1, maxLength: 255 });

export const Fallback = Strict(
  {
    agent_id: Type.Optional(Uuid({ description: 'Agent that answers when the primary target cannot. Exactly one of agent_id and squad_id' })),
    squad_id: Type.Optional(Uuid({ description: "Squad (POST /v1/squads) whose entry agent answers when the primary target cannot. Exactly one of agent_id and squad_id" })),
  },
  {
    title: 'InboundFallback',
    ...exactlyOneOf(['agent_id', 'squad_id']),
    description:
      'Used when the primary target (routing `agent_id` or `squad_id`, else the number\'s own) has been deleted, when the ' +
      'organisation is at its daily call cap or its concurrent-call limit, and when no agent takes the call (no media worker ' +
      'accepts it within INBOUND_ANSWER_WAIT_SECONDS). A fallback call is the overflow line: it is admitted past those ' +
      'limits (and counted). Exactly one of `agent_id` and `squad_id`.',
  },
);

export const InboundRouting = Type.Object(
  {
    agent_id: Nullable(Uuid({ description: 'Agent that receives inbound calls; overrides the number\'s `agent_id` / `squad_id`' })),
    squad_id: Nullable(Uuid({ description: 'Squad that receives inbound calls (its entry agent answers); overrides the number\'s `agent_id` / `squad_id`. At most one of agent_id and squad_id is set' })),
    fallback: Nullable(Fallback),
    voicemail_message: Nullable(Type.String({ maxLength: 2000, description: 'Left when voicemail is detected on an inbound call' })),
  },
  { title: 'InboundRouting', additionalProperties: false },
);
export type InboundRouting = Static<typeof InboundRouting>;

export const InboundRoutingInput = Strict(
  {
    agent_id: Type.Optional(Nullable(Uuid({ description: 'Agent that receives inbound calls; null clears the override. Setting it clears `squad_id`' }))),
    squad_id: Type.Optional(
      Nullable(Uuid({ description: 'Squad that receives inbound calls (its entry agent answers); null clears it. Setting it clears `agent_id`; not both at once' })),
    ),
    fallback: Type.Optional(Nullable(Fallback)),
    voicemail_message: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  },
  { title: 'InboundRoutingInput' },
);
export type InboundRoutingInput = Static<typeof InboundRoutingInput>;

const example = {
  id: '5b0e8c1e-2f59-4c64-9d1b-7a3f0b6e2c10',
  phone_number: '+14155550123',
  friendly_name: 'Front desk',
  provider: 'simulated',
  agent_id: '9f6c1a7e-1d2b-4c3a-8e5f-0a1b2c3d4e5f',
  status: 'active',
  inbound_trunk_id: 'ST_xH7bQ2',
  outbound_trunk_id: 'ST_k9PzY4',
  dispatch_rule_id: 'SDR_3fRt8w',
  squad_id: null,
  inbound_routing: null,
  sms_capable: true,
  created_at: '2025-01-01T12:00:00.000Z',
  updated_at: '2025-01-01T12:00:00.000Z',
};

export const PhoneNumber = Type.Object(
  {
    id: Uuid(),
    phone_number: Type.String({ description: 'E.164' }),
    friendly_name: Nullable(Type.String()),
    provider: Type.String({ description: 'Carrier the number was bought from (informational)' }),
    agent_id: Uuid({ description: "The agent that answers the number; on a squad's number, the squad's entry agent" }),
    agent_version: Nullable(Type.Integer({ description: "The version of agent_id that the number's calls run; null: they follow the published version and its traffic split" })),
    squad_id: Nullable(Uuid({ description: 'The squad that answers the number (its entry agent first); null when the number routes to one agent' })),
    status: StringEnum(PHONE_NUMBER_STATUSES, { description: '`inactive` numbers reject calls (SIP 486) and create no call' }),
    inbound_trunk_id: Nullable(Type.String()),
    outbound_trunk_id: Nullable(Type.String()),
    dispatch_rule_id: Nullable(Type.String()),
    inbound_routing: Nullable(InboundRouting),
    sms_capable: Nullable(Type.Boolean()),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { title: 'PhoneNumber', additionalProperties: false, examples: [example] },
);

export const PurchasePhoneNumber = Strict(
  {
    agent_id: Type.Optional(Uuid({ description: 'Agent that answers the number. Exactly one of agent_id and squad_id' })),
    squad_id: Type.Optional(Uuid({ description: 'Squad (POST /v1/squads) that answers the number: its entry agent first. Exactly one of agent_id and squad_id' })),
    phone_number: Type.Optional(Nullable(E164({ description: 'A number from the search endpoint; leave out to buy the first match of country / area_code / contains' }))),
    country: Type.Optional(CountryDefaultUS),
    area_code: Type.Optional(Nullable(AreaCode)),
    contains: Type.Optional(Nullable(Contains)),
    friendly_name: Type.Optional(Nullable(FriendlyName)),
    inbound_routing: Type.Optional(Nullable(InboundRoutingInput)),
  },
  { title: 'PurchasePhoneNumber', ...exactlyOneOf(['agent_id', 'squad_id']) },
);
export type PurchasePhoneNumber = Static<typeof PurchasePhoneNumber>;

export const UpdatePhoneNumber = Strict(
  {
    friendly_name: Type.Optional(Nullable(FriendlyName)),
    agent_id: Type.Optional(Uuid({ description: 'Route the number to this agent (clears `squad_id`). Not with squad_id' })),
    squad_id: Type.Optional(Uuid({ description: 'Route the number to this squad (its entry agent answers first). Not with agent_id' })),
    agent_version: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 1,
          maximum: 2147483647,
          description:
            "Pin the calls this number's agent answers to one of its versions (GET /v1/agents/{id}/versions); null follows the published version. A new agent_id or squad_id without it clears the pin; not on a squad's number",
        }),
      ),
    ),
    status: Type.Optional(StringEnum(PHONE_NUMBER_STATUSES)),
  },
  { title: 'UpdatePhoneNumber' },
);

// The spec types `phone_number_id` as a string: a malformed one is a 404, not a 422 (docs/decisions/018-api-completeness.md, "Malformed path ids: 422 or 404, by the parameter's type").
export const PhoneNumberParams = Strict({ phone_number_id: PathId('Phone number') });
export const PhoneNumberList = ListEnvelope(PhoneNumber, 'PhoneNumber');
export const PhoneNumberListQuery = Type.Composite(
  [Pagination({ default: 100, maximum: 200 }), Type.Object({ status: Type.Optional(StringEnum(PHONE_NUMBER_STATUSES)), agent_id: Type.Optional(Uuid()), squad_id: Type.Optional(Uuid()) })],
  { additionalProperties: false },
);

export const PhoneNumberSearchQuery = Strict({
  country: Type.Optional(CountryDefaultUS),
  area_code: Type.Optional(AreaCode),
  contains: Type.Optional(Contains),
  limit: Type.Integer({ minimum: 1, maximum: 50, default: 20 }),
  offset: Type.Integer({
    minimum: 0,
    maximum: 50,
    default: 0,
    description: 'Matches to skip. Carriers answer at most offset + limit matches of a search, so the window ends at 100',
  }),
});

export const AvailablePhoneNumber = Type.Object(
  {
    phone_number: Type.String({ description: 'E.164' }),
    locality: Nullable(Type.String()),
    region: Nullable(Type.String()),
    country: Type.String(),
    capabilities: Type.Object({ voice: Type.Boolean(), sms: Type.Boolean() }, { additionalProperties: false }),
  },
  { title: 'AvailablePhoneNumber', additionalProperties: false },
);

// The list envelope, like every other list. `items` was the whole answer before `total`, `limit` and `offset`
// joined it, so a client of that shape reads the same field.
export const PhoneNumberSearchResult = Type.Object(
  {
    items: Type.Array(AvailablePhoneNumber),
    total: Type.Integer({
      minimum: 0,
      description: 'Matches found up to offset + limit: carriers do not count their whole inventory, so a page shorter than `limit` is the last',
    }),
    limit: Type.Integer({ minimum: 1 }),
    offset: Type.Integer({ minimum: 0 }),
  },
  {
    title: 'PhoneNumberSearchResult',
    additionalProperties: false,
    examples: [
      { items: [{ phone_number: '+14155550123', locality: 'San Francisco', region: 'CA', country: 'US', capabilities: { voice: true, sms: true } }], total: 1, limit: 20, offset: 0 },
    ],
  },
);
