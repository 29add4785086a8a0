// Campaigns: one agent calling a list of contacts within their calling hours, at a set pace, with retries
// (docs/decisions/022-campaigns-and-do-not-call.md). A contact's number is a plain string here, not an E.164 format: a bad row
// is reported and skipped, it never fails the whole upload.
import { Type, DateTime, E164, Nullable, Strict, StringEnum, Metadata, Uuid, PathId, ListEnvelope, Pagination, type Static } from './common.ts';

export const CAMPAIGN_STATUSES = ['scheduled', 'running', 'paused', 'completed', 'canceled'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];
export const CONTACT_STATES = ['pending', 'scheduled', 'calling', 'completed', 'retrying', 'failed', 'skipped', 'canceled'] as const;
export type ContactState = (typeof CONTACT_STATES)[number];
/** End results of an attempt that a campaign may retry. */
export const RETRYABLE_RESULTS = ['no_answer', 'busy', 'voicemail', 'failed'] as const;
export type RetryableResult = (typeof RETRYABLE_RESULTS)[number];
/** Every end result of an attempt. */
export const ATTEMPT_RESULTS = ['completed', ...RETRYABLE_RESULTS, 'canceled', 'not_allowed'] as const;
export type AttemptResult = (typeof ATTEMPT_RESULTS)[number];
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];
export const PAUSE_REASONS = ['manual', 'failure_rate', 'daily_call_limit', 'daily_spend_cap', 'from_number_unavailable'] as const;
export const SKIP_REASONS = ['invalid_number', 'destination_not_allowed', 'duplicate', 'do_not_call', 'timezone_unknown', 'campaign_ended'] as const;

const Clock = (description: string) => Type.String({ pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$', description });

export const CallingWindow = Strict(
  {
    days: Type.Array(StringEnum(WEEKDAYS), { minItems: 1, maxItems: 7, uniqueItems: true }),
    start: Clock('Local time HH:MM the window opens (inclusive)'),
    end: Clock('Local time HH:MM the window closes (exclusive), after `start`; 24:00 for midnight'),
  },
  { title: 'CallingWindow', description: "Hours on the callee's wall clock on the listed weekdays" },
);
export type CallingWindow = Static<typeof CallingWindow>;

const scheduleFields = {
  start_at: Type.Optional(DateTime({ description: 'First dial no earlier than this; default: at once. At most OUTBOUND_SCHEDULE_HORIZON_DAYS ahead' })),
  end_at: Type.Optional(
    Nullable(
      DateTime({
        description:
          'No attempt starts after this. Then contacts never attempted are `skipped` (`campaign_ended`), contacts waiting for a retry `failed`, and calls in progress finish. Null: no end',
      }),
    ),
  ),
  windows: Type.Optional(
    Type.Array(CallingWindow, {
      minItems: 1,
      maxItems: 28,
      description:
        "When contacts may be called, in each callee's own time zone (the row's `timezone`, else the zone of the number's region; in a region with several zones, only when the window is open in all of them). Default: mon-fri 09:00-18:00",
    }),
  ),
  holidays: Type.Optional(
    Type.Array(Type.String({ format: 'date' }), {
      maxItems: 366,
      uniqueItems: true,
      description: "Dates (YYYY-MM-DD) on which nobody is called, read on the callee's calendar",
    }),
  ),
};

export const CampaignSchedule = Strict(scheduleFields, { title: 'CampaignSchedule' });
export type CampaignSchedule = Static<typeof CampaignSchedule>;

export const CampaignPacing = Strict(
  {
    calls_per_minute: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 60000, description: 'Calls started per minute, evenly spaced; at most CAMPAIGN_MAX_CALLS_PER_MINUTE. Default 10' }),
    ),
    max_concurrent: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100000, description: "Live calls of the campaign at once; at most the organisation's max_concurrent_calls. Default 5 (or that limit, if lower)" }),
    ),
  },
  { title: 'CampaignPacing' },
);
export type CampaignPacing = Static<typeof CampaignPacing>;

export const CampaignRetry = Strict(
  {
    on: Type.Optional(
      Type.Array(StringEnum(RETRYABLE_RESULTS), {
        uniqueItems: true,
        description: 'End results that are tried again: `no_answer`, `busy`, `voicemail` (a machine answered), `failed` (the call did not connect for any other reason). Default: no_answer, busy',
      }),
    ),
    max_retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10, description: 'Attempts after the first. Default 2' })),
    delay_minutes: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10080, description: 'Wait after an attempt ends before the retry is due (and then its window). Default 60' }),
    ),
  },
  { title: 'CampaignRetry' },
);
export type CampaignRetry = Static<typeof CampaignRetry>;

export const CampaignStopOn = Strict(
  {
    failure_rate: Type.Number({ exclusiveMinimum: 0, maximum: 1, description: 'Pause when more than this share of the last `window` attempts ended in one of `results`' }),
    window: Type.Optional(Type.Integer({ minimum: 5, maximum: 1000, description: 'Attempts looked at (counted since the campaign last started or resumed). Default 50' })),
    results: Type.Optional(
      Type.Array(StringEnum(RETRYABLE_RESULTS), { minItems: 1, uniqueItems: true, description: 'Which end results count as failures. Default: failed' }),
    ),
  },
  {
    title: 'CampaignStopOn',
    description: 'Auto-pause: the campaign pauses itself (`pause_reason` failure_rate, `campaign.paused`) when its attempts fail too often',
  },
);
export type CampaignStopOn = Static<typeof CampaignStopOn>;

export const ContactInput = Strict(
  {
    to_number: Type.String({ maxLength: 64, description: 'The number to call: E.164, or national with `default_country`' }),
    timezone: Type.Optional(Type.String({ maxLength: 64, description: "The callee's IANA time zone; overrides the zone of the number's region" })),
    variables: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { description: "This contact's template variables, over the campaign's" })),
  },
  { title: 'CampaignContactInput' },
);
export type ContactInput = Static<typeof ContactInput>;

/** Everything a campaign is created with, but the contacts (the JSON body's `contacts` or the form's `file`). */
const settingsFields = {
  name: Type.String({ minLength: 1, maxLength: 255 }),
  agent_id: Uuid({ description: 'The agent that talks on every call' }),
  agent_version: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 1,
        maximum: 2147483647,
        description: "Every call runs this version of the agent (GET /v1/agents/{id}/versions); default null: calls follow the agent's published version and traffic split",
      }),
    ),
  ),
  from_number: Type.Optional(E164({ description: "Caller ID: one of the organisation's active numbers. Default: the agent's number" })),
  from_numbers: Type.Optional(
    Type.Array(E164(), { minItems: 1, maxItems: 50, uniqueItems: true, description: 'A pool of caller IDs, rotated call by call (instead of `from_number`)' }),
  ),
  default_country: Type.Optional(
    Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 country of numbers given without a leading + (national format)' }),
  ),
  schedule: Type.Optional(CampaignSchedule),
  pacing: Type.Optional(CampaignPacing),
  retry: Type.Optional(CampaignRetry),
  stop_on: Type.Optional(Nullable(CampaignStopOn)),
  webhook_url: Type.Optional(
    Type.String({
      format: 'http-url',
      maxLength: 2048,
      description: "The campaign's events and every event of its calls are also POSTed here, signed with the organisation's call signing secret. Must resolve to a public address",
    }),
  ),
  variables: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { description: 'Template variables of every call; a contact\'s own override them' })),
  metadata: Type.Optional(Metadata()),
};

export const CampaignSettings = Strict(settingsFields, { title: 'CampaignSettings' });
export type CampaignSettings = Static<typeof CampaignSettings>;

export const CreateCampaign = Strict(
  {
    ...settingsFields,
    contacts: Type.Array(ContactInput, { description: 'At most CAMPAIGN_MAX_CONTACTS (10,000). Rows with a problem are skipped and reported in `import`' }),
  },
  {
    title: 'CreateCampaign',
    examples: [
      {
        name: 'Appointment reminders',
        agent_id: '0f4ac2d1-54e9-4ad3-9f86-6c7a0dbe3a3e',
        from_numbers: ['+14155550100', '+14155550101'],
        contacts: [
          { to_number: '+14155550123', variables: { customer_name: 'Ada' } },
          { to_number: '+442079460123', timezone: 'Europe/London', variables: { customer_name: 'Grace' } },
        ],
        schedule: { end_at: '2026-12-01T00:00:00Z', windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '18:00' }], holidays: ['2026-11-26'] },
        pacing: { calls_per_minute: 20, max_concurrent: 5 },
        retry: { on: ['no_answer', 'busy'], max_retries: 2, delay_minutes: 120 },
        stop_on: { failure_rate: 0.3, window: 50 },
      },
    ],
  },
);
export type CreateCampaign = Static<typeof CreateCampaign>;

/** The multipart form of POST /v1/campaigns: the same settings as form fields (objects as JSON text) and the CSV. */
export const CreateCampaignForm = Type.Object(
  {
    name: Type.String(),
    agent_id: Type.String({ format: 'uuid' }),
    agent_version: Type.Optional(Type.String({ description: 'A version number of the agent to pin' })),
    from_number: Type.Optional(Type.String()),
    from_numbers: Type.Optional(Type.String({ description: 'Comma-separated E.164 numbers' })),
    default_country: Type.Optional(Type.String()),
    schedule: Type.Optional(Type.String({ description: 'CampaignSchedule as JSON' })),
    pacing: Type.Optional(Type.String({ description: 'CampaignPacing as JSON' })),
    retry: Type.Optional(Type.String({ description: 'CampaignRetry as JSON' })),
    stop_on: Type.Optional(Type.String({ description: 'CampaignStopOn as JSON (or `null`)' })),
    webhook_url: Type.Optional(Type.String()),
    variables: Type.Optional(Type.String({ description: 'An object as JSON' })),
    metadata: Type.Optional(Type.String({ description: 'An object as JSON' })),
    file: Type.String({
      format: 'binary',
      description:
        'CSV in UTF-8 with a header row: `to_number`, optionally `timezone`, and any other columns, which become the contact\'s variables. At most CAMPAIGN_CSV_MAX_BYTES (413 above) and CAMPAIGN_MAX_CONTACTS rows (422 naming the rows over)',
    }),
  },
  { title: 'CreateCampaignForm', additionalProperties: false },
);

const counts = Object.fromEntries(CONTACT_STATES.map((s) => [s, Type.Integer({ minimum: 0 })])) as Record<ContactState, ReturnType<typeof Type.Integer>>;

export const Campaign = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    agent_id: Uuid(),
    agent_version: Nullable(Type.Integer({ description: 'The agent version every call runs; null: calls follow the published version' })),
    from_numbers: Type.Array(Type.String()),
    status: StringEnum(CAMPAIGN_STATUSES, {
      description: '`scheduled` (before start_at) -> `running` <-> `paused` -> `completed` (every contact final); `canceled` by POST .../cancel',
    }),
    pause_reason: Nullable(StringEnum(PAUSE_REASONS)),
    schedule: Type.Object(
      {
        start_at: Nullable(DateTime()),
        end_at: Nullable(DateTime()),
        windows: Type.Array(CallingWindow),
        holidays: Type.Array(Type.String()),
      },
      { title: 'CampaignScheduleView' },
    ),
    pacing: Type.Object({ calls_per_minute: Type.Integer(), max_concurrent: Type.Integer() }, { title: 'CampaignPacingView' }),
    retry: Type.Object(
      { on: Type.Array(StringEnum(RETRYABLE_RESULTS)), max_retries: Type.Integer(), delay_minutes: Type.Integer() },
      { title: 'CampaignRetryView' },
    ),
    stop_on: Nullable(
      Type.Object(
        { failure_rate: Type.Number(), window: Type.Integer(), results: Type.Array(StringEnum(RETRYABLE_RESULTS)) },
        { title: 'CampaignStopOnView' },
      ),
    ),
    webhook_url: Nullable(Type.String()),
    variables: Type.Record(Type.String(), Type.Unknown()),
    metadata: Metadata(),
    contacts: Type.Object(
      { total: Type.Integer({ minimum: 0 }), ...counts },
      { title: 'CampaignContactCounts', description: 'Contacts by state: the live report' },
    ),
    attempts: Type.Integer({ minimum: 0, description: 'Calls placed so far (each attempt is a call with this campaign_id)' }),
    started_at: Nullable(DateTime()),
    paused_at: Nullable(DateTime()),
    completed_at: Nullable(DateTime()),
    canceled_at: Nullable(DateTime()),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { title: 'Campaign' },
);
export type Campaign = Static<typeof Campaign>;

export const ImportProblem = Type.Object(
  {
    row: Type.Integer({ description: 'The CSV row (the header is row 1) or the JSON index + 1' }),
    to_number: Nullable(Type.String()),
    type: Type.String({ description: 'invalid_number, destination_not_allowed, duplicate, do_not_call, timezone_invalid, timezone_unknown, columns_mismatch, value_too_long' }),
    msg: Type.String(),
    ctx: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { title: 'CampaignImportProblem' },
);
export type ImportProblem = Static<typeof ImportProblem>;

export const CampaignImport = Type.Object(
  {
    rows: Type.Integer({ description: 'Contact rows read' }),
    accepted: Type.Integer({ description: 'Contacts that will be called' }),
    skipped: Type.Integer({ description: 'Rows skipped: the contacts in state `skipped`, and duplicates' }),
    problems: Type.Array(ImportProblem, { description: 'One per skipped row, in row order (the first 1,000)' }),
    problems_truncated: Type.Boolean(),
  },
  { title: 'CampaignImport' },
);

export const CampaignCreated = Type.Composite([Campaign, Type.Object({ import: CampaignImport })], { title: 'CampaignCreated', additionalProperties: false });

export const UpdateCampaign = Strict(
  {
    status: Type.Optional(StringEnum(['paused', 'running'] as const, { description: '`paused` pauses (no new calls; calls in progress go on); `running` resumes' })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    schedule: Type.Optional(CampaignSchedule),
    pacing: Type.Optional(CampaignPacing),
    retry: Type.Optional(CampaignRetry),
    stop_on: Type.Optional(Nullable(CampaignStopOn)),
  },
  {
    title: 'UpdateCampaign',
    description: 'Pause, resume, or change the schedule, pacing, retries or auto-pause rule; given objects replace the stored ones field by field. A completed or canceled campaign cannot change (409)',
    examples: [{ status: 'paused' }, { pacing: { calls_per_minute: 5 } }],
  },
);
export type UpdateCampaign = Static<typeof UpdateCampaign>;

export const CampaignParams = Strict({ campaign_id: PathId('Campaign') });
export const CampaignList = ListEnvelope(Campaign, 'Campaign');
export const CampaignListQuery = Type.Composite(
  [Pagination({ default: 50, maximum: 100 }), Type.Object({ status: Type.Optional(StringEnum(CAMPAIGN_STATUSES)) })],
  { additionalProperties: false },
);

export const CampaignContact = Type.Object(
  {
    id: Uuid(),
    campaign_id: Uuid(),
    row: Type.Integer({ description: 'The CSV row (the header is row 1) or the JSON index + 1' }),
    to_number: Type.String(),
    timezone: Nullable(Type.String({ description: "The zone its windows are read in (several, comma-separated, for a region with many and no row's timezone)" })),
    state: StringEnum(CONTACT_STATES),
    skip_reason: Nullable(StringEnum(SKIP_REASONS)),
    attempts: Type.Integer({ minimum: 0 }),
    last_result: Nullable(StringEnum(ATTEMPT_RESULTS)),
    next_attempt_at: Nullable(DateTime({ description: 'When a retry is due (then its window)' })),
    call_ids: Type.Array(Uuid(), { description: 'Its attempts, first to last' }),
    outcome: Nullable(Type.String({ description: 'The outcome of its last call' })),
    variables: Type.Record(Type.String(), Type.Unknown()),
    updated_at: DateTime(),
  },
  { title: 'CampaignContact' },
);
export type CampaignContact = Static<typeof CampaignContact>;

export const CampaignContactList = ListEnvelope(CampaignContact, 'CampaignContact');
export const CampaignContactQuery = Type.Composite(
  [Pagination({ default: 50, maximum: 100 }), Type.Object({ state: Type.Optional(StringEnum(CONTACT_STATES)) })],
  { additionalProperties: false },
);
