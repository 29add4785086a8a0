import { Type, DateTime, Nullable, Strict, StringEnum, Uuid, type Static } from './common.ts';
import { DEFAULT_BLOCKED_NUMBER_TYPES, NUMBER_TYPES } from '../shared/destination-policy.ts';
import { DATA_RETENTION_MODES } from '../shared/privacy.ts';

const example = {
  id: '5b0c7e1a-2f3d-4a5b-8c9d-0e1f2a3b4c5d',
  name: 'Acme',
  settings: {
    timezone: 'Europe/Paris',
    default_webhook_id: null,
    default_agent_id: '3f9a1c2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b',
    destination_policy: { allowed_countries: null, blocked_number_types: [...DEFAULT_BLOCKED_NUMBER_TYPES], allowed_sip_hosts: [] },
    data_retention: 'everything',
    retain_days: null,
  },
  limits: {
    max_calls_per_day: 1000,
    kb_token_budget: 1000000,
    max_concurrent_calls: 10,
    daily_spend_cap_cents: 10000,
    destination_extra_countries: [],
    destination_unblockable_types: [],
  },
  created_at: '2025-01-15T09:30:00Z',
  updated_at: '2025-01-15T09:30:00Z',
};

const Country = Type.String({ pattern: '^([A-Z]{2}|001)$', description: 'ISO 3166-1 alpha-2 code; 001 for numbers of no country (global services)' });
const SipHost = Type.String({
  minLength: 1,
  maxLength: 253,
  pattern: '^(\\*\\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$',
  description: 'A host name or IP address; *.example.com also matches its subdomains',
});
const NumberType = StringEnum(NUMBER_TYPES);
const privacyDescriptions = {
  data_retention:
    "What calls keep of the conversation; an agent's own `data_retention` wins. `everything` (the default); `redact_pii`: card numbers (Luhn-checked), SSNs, emails, phone numbers, dates of birth and street addresses, written or spoken, become [card_number], [ssn], [email], [phone], [date_of_birth], [address] in messages, the analysis, webhook payloads and logs, before anything is stored or sent; `no_content`: no message text, analysis or recording is stored or sent, only metadata and latency",
  retain_days:
    "Days a call's content (messages, analysis text, recording, and the events that carry them) is kept after the call was created; an hourly job deletes it after that and keeps the call's metadata (audited as `call.content_deleted`). null (the default) keeps it",
};
const RetainDays = Type.Integer({ minimum: 1, maximum: 3650 });

const policyDescriptions = {
  allowed_countries:
    'Countries whose numbers outbound calls and transfers may reach; null (the default) means the countries of your own phone numbers',
  blocked_number_types: `Number types that may not be called or transferred to (libphonenumber's classification, plus satellite); default ${DEFAULT_BLOCKED_NUMBER_TYPES.join(', ')}`,
  allowed_sip_hosts: 'Hosts a transfer_call tool with a sip: destination may reach; none by default',
};

export const DestinationPolicy = Type.Object(
  {
    allowed_countries: Nullable(Type.Array(Country, { description: policyDescriptions.allowed_countries })),
    blocked_number_types: Type.Array(NumberType, { description: policyDescriptions.blocked_number_types }),
    allowed_sip_hosts: Type.Array(Type.String(), { description: policyDescriptions.allowed_sip_hosts }),
  },
  { title: 'DestinationPolicy', additionalProperties: false, description: 'Where outbound calls and transfers may go (toll fraud defence)' },
);

export const WorkspaceSettings = Type.Object(
  {
    timezone: Type.String({ description: 'IANA time zone of the organisation (reports, schedules); default UTC', examples: ['Europe/Paris'] }),
    default_webhook_id: Nullable(Uuid({ description: 'Webhook meant for the events of calls whose agent has none. Every webhook subscribed to an event receives it; this never takes an event from another' })),
    default_agent_id: Nullable(Uuid({ description: 'Agent that answers inbound calls to numbers with no agent routing of their own' })),
    destination_policy: DestinationPolicy,
    data_retention: StringEnum(DATA_RETENTION_MODES, { description: privacyDescriptions.data_retention }),
    retain_days: Nullable(Type.Integer({ minimum: 1, description: privacyDescriptions.retain_days })),
  },
  { title: 'WorkspaceSettings', additionalProperties: false },
);

export const WorkspaceLimits = Type.Object(
  {
    max_calls_per_day: Type.Integer({ minimum: 0, description: 'Calls the organisation may start per UTC day' }),
    kb_token_budget: Type.Integer({ minimum: 0, description: 'Tokens the knowledge bases of the organisation may hold' }),
    max_concurrent_calls: Type.Integer({ minimum: 0, description: 'Calls in progress at the same time' }),
    daily_spend_cap_cents: Type.Integer({
      minimum: 0,
      description: 'Carrier cost of phone calls per UTC day (ended today or still connected) past which new outbound calls are refused (429)',
    }),
    destination_extra_countries: Type.Array(Country, {
      description: "Countries `destination_policy.allowed_countries` may name beyond those of the organisation's own numbers",
    }),
    destination_unblockable_types: Type.Array(NumberType, {
      description: '`destination_policy.blocked_number_types` may leave out these default-blocked types; the others stay blocked',
    }),
  },
  {
    title: 'WorkspaceLimits',
    additionalProperties: false,
    description: 'Read-only here: the platform operator changes them (`npm run admin -- set-limits`, `set-destination-limits`).',
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
          destination_policy: Type.Optional(
            Strict(
              {
                allowed_countries: Type.Optional(Nullable(Type.Array(Country, { maxItems: 250, uniqueItems: true, description: `${policyDescriptions.allowed_countries}; null restores it` }))),
                blocked_number_types: Type.Optional(Nullable(Type.Array(NumberType, { uniqueItems: true, description: `${policyDescriptions.blocked_number_types}; null restores it` }))),
                allowed_sip_hosts: Type.Optional(Type.Array(SipHost, { maxItems: 50, uniqueItems: true, description: policyDescriptions.allowed_sip_hosts })),
              },
              { description: 'Only the fields given change' },
            ),
          ),
          data_retention: Type.Optional(StringEnum(DATA_RETENTION_MODES, { description: privacyDescriptions.data_retention })),
          retain_days: Type.Optional(Nullable({ ...RetainDays, description: `${privacyDescriptions.retain_days}; 1 to 3650, null keeps content` })),
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
