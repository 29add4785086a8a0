-- Agents, and the phone numbers that route to them. Agents are soft-deleted (deleted_at) so call records that
-- point at them stay readable; numbers must be moved off an agent before it can be deleted.

create table agents (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null check (length(name) between 1 and 255),
  llm_id uuid not null references llm_models (id),
  -- The webhooks API deletes webhooks for good; an agent then simply has none.
  webhook_id uuid references webhooks (id) on delete set null,
  transcriber jsonb not null,
  tts jsonb not null,
  first_message text,
  end_call_phrases text[] not null default '{}',
  max_duration_seconds integer not null default 1800,
  interruption_sensitivity double precision not null default 0.5 check (interruption_sensitivity between 0 and 1),
  silence_timeout_seconds integer not null default 30,
  enable_recording boolean not null default false,
  language text not null default 'en-US',
  dynamic_variables jsonb not null default '{}'::jsonb,
  voicemail_detection boolean not null default false,
  voicemail_message text,
  responsiveness double precision not null default 0.5 check (responsiveness between 0 and 1),
  speed double precision not null default 1.0 check (speed between 0.5 and 2),
  background_sound text,
  emotions boolean not null default false,
  job_description text,
  metadata jsonb not null default '{}'::jsonb,
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index agents_org_idx on agents (org_id, created_at desc, id desc) where deleted_at is null;
create index agents_llm_idx on agents (llm_id) where deleted_at is null;
create index agents_webhook_idx on agents (webhook_id) where webhook_id is not null;

-- Numbers bought through the platform. The phone-numbers resource adds its own columns in its migrations.
create table phone_numbers (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  phone_number text not null unique check (phone_number ~ '^\+[1-9][0-9]{1,14}$'),
  friendly_name text,
  provider text not null,
  agent_id uuid not null references agents (id),
  status text not null default 'active' check (status in ('active', 'inactive')),
  inbound_trunk_id text,
  outbound_trunk_id text,
  dispatch_rule_id text,
  -- {agent_id, fallback: {agent_id, ...}, voicemail_message}
  inbound_routing jsonb,
  sms_capable boolean,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index phone_numbers_org_idx on phone_numbers (org_id, created_at desc);
create index phone_numbers_agent_idx on phone_numbers (agent_id);
