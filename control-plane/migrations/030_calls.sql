-- Calls, their worker reports (idempotency by sequence number) and the daily call counters.
create table calls (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  -- Agents are soft-deleted, so a call keeps pointing at its agent and stays readable.
  agent_id uuid not null references agents (id),
  type text not null check (type in ('web', 'outbound', 'inbound')),
  status text not null default 'queued' check (status in ('queued', 'initiated', 'in_progress', 'completed', 'failed')),
  direction text check (direction in ('inbound', 'outbound')),
  to_number text,
  from_number text,
  room_name text,
  carrier_call_sid text,
  scheduled_at timestamptz,
  variables jsonb not null default '{}'::jsonb,
  metadata jsonb not null default '{}'::jsonb,
  overrides jsonb not null default '{}'::jsonb,
  webhook_url text,
  started_at timestamptz,
  ended_at timestamptz,
  duration_seconds integer,
  end_reason text,
  outcome text,
  -- 'manual' when set by PATCH: the analysis never overwrites it.
  outcome_source text check (outcome_source in ('manual', 'analysis')),
  messages jsonb,
  ai_summary text,
  analysis_summary text,
  analysis_status text not null default 'pending' check (analysis_status in ('pending', 'running', 'completed', 'failed', 'skipped')),
  analysis_error text,
  latency jsonb,
  usage jsonb,
  cost_cents integer,
  recording_key text,
  -- Worker bookkeeping: the highest report sequence applied, and when the worker last reported.
  last_seq integer not null default 0,
  worker_seen_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index calls_org_time_idx on calls (org_id, created_at desc, id desc);
create index calls_org_agent_idx on calls (org_id, agent_id, created_at desc);
create index calls_live_idx on calls (status, updated_at) where status in ('queued', 'initiated', 'in_progress');
create unique index calls_room_idx on calls (room_name) where room_name is not null;

create table call_reports (
  call_id uuid not null references calls (id) on delete cascade,
  seq integer not null,
  kind text not null,
  received_at timestamptz not null default now(),
  primary key (call_id, seq)
);

-- Calls created per org and UTC day: the cap is enforced with one conditional upsert (atomic under
-- concurrency, no lock held across the request).
create table org_daily_calls (
  org_id uuid not null references orgs (id) on delete cascade,
  day date not null,
  calls integer not null default 0,
  primary key (org_id, day)
);
