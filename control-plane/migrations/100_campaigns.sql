-- Campaigns: a list of contacts called within their calling hours, at a set pace, with retries
-- (docs/decisions.md, "Campaigns"). Each attempt is an ordinary outbound call row with `campaign_id`.
create table campaigns (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null,
  agent_id uuid not null references agents (id),
  -- The caller IDs, rotated attempt by attempt.
  from_numbers text[] not null,
  status text not null check (status in ('scheduled', 'running', 'paused', 'completed', 'canceled')),
  -- Why it is paused: manual, failure_rate, daily_call_limit, daily_spend_cap, from_number_unavailable.
  pause_reason text,
  -- {start_at, end_at, windows: [{days, start, end}], holidays: [YYYY-MM-DD]}; times are the callee's.
  schedule jsonb not null,
  -- {calls_per_minute, max_concurrent}
  pacing jsonb not null,
  -- {on: [results], max_retries, delay_minutes}
  retry jsonb not null,
  -- {failure_rate, window, results} or null
  stop_on jsonb,
  webhook_url text,
  variables jsonb not null default '{}'::jsonb,
  metadata jsonb not null default '{}'::jsonb,
  -- The variable columns of the upload, in its order (the export writes them back).
  variable_columns text[] not null default '{}',
  -- The time-zone keys of its contacts (zones.ts): the scheduler opens windows per key, not per contact.
  zone_keys text[] not null default '{}',
  -- Pacing: the earliest moment of the next dial (a virtual schedule, see scheduler.ts).
  pace_next_at timestamptz,
  -- Calls placed so far: rotates the caller IDs.
  dials integer not null default 0,
  -- The results of the latest attempts, newest last, at most stop_on.window (cleared on resume).
  recent_results text[] not null default '{}',
  started_at timestamptz,
  paused_at timestamptz,
  completed_at timestamptz,
  canceled_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index campaigns_org_idx on campaigns (org_id, created_at desc, id desc);
-- The sweep finds campaigns that still need ticks.
create index campaigns_active_idx on campaigns (status) where status in ('scheduled', 'running', 'paused', 'canceled');

create table campaign_contacts (
  id uuid primary key default gen_random_uuid(),
  campaign_id uuid not null references campaigns (id) on delete cascade,
  org_id uuid not null references orgs (id) on delete cascade,
  -- Where it came from: the CSV's row (the header is row 1) or the JSON index + 1.
  row_number integer not null,
  -- E.164 once valid; as given when the row was skipped as invalid.
  to_number text not null,
  -- The IANA zone from the row, if it gave one.
  timezone text,
  -- The zone key the windows are read in (an IANA zone, or several joined by commas); null when skipped.
  zone_key text,
  variables jsonb not null default '{}'::jsonb,
  state text not null default 'pending'
    check (state in ('pending', 'scheduled', 'calling', 'completed', 'retrying', 'failed', 'skipped', 'canceled')),
  skip_reason text,
  attempts integer not null default 0,
  -- Due from (a retry's delay); null for a contact never attempted.
  next_attempt_at timestamptz,
  last_call_id uuid,
  -- The end result of the latest attempt: completed, voicemail, busy, no_answer, failed, canceled.
  last_result text,
  first_attempt_at timestamptz,
  last_attempt_at timestamptz,
  updated_at timestamptz not null default now()
);
create index campaign_contacts_row_idx on campaign_contacts (campaign_id, row_number);
-- The scheduler's claim of due contacts, and the list filtered by state.
create index campaign_contacts_due_idx on campaign_contacts (campaign_id, state, next_attempt_at);

-- Each attempt is a call: (contact, attempt) is unique, so an attempt is placed at most once whatever crashes.
alter table calls
  add column campaign_id uuid references campaigns (id) on delete set null,
  add column campaign_contact_id uuid references campaign_contacts (id) on delete set null,
  add column campaign_attempt integer;
create unique index calls_campaign_attempt_idx on calls (campaign_contact_id, campaign_attempt) where campaign_contact_id is not null;
create index calls_campaign_idx on calls (campaign_id, created_at) where campaign_id is not null;
