-- Agent tests: scenarios (a simulated caller and its expectations), suites (named lists of scenarios for an
-- agent), runs of an agent against scenarios, and one result row per scenario of a run. See docs/decisions.md
-- ("Agent tests").

create table agent_test_scenarios (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null check (length(name) between 1 and 255),
  -- Exactly one of the two: instructions for a caller model, or fixed lines ([{say, wait_ms}]).
  persona text,
  script jsonb,
  variables jsonb not null default '{}'::jsonb,
  max_turns integer not null,
  max_duration_seconds integer not null,
  tool_mocks jsonb not null default '[]'::jsonb,
  expectations jsonb not null default '[]'::jsonb,
  metadata jsonb not null default '{}'::jsonb,
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((persona is null) <> (script is null))
);
create index agent_test_scenarios_org_idx on agent_test_scenarios (org_id, created_at desc, id desc) where deleted_at is null;

create table agent_test_suites (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  agent_id uuid not null references agents (id),
  name text not null check (length(name) between 1 and 255),
  scenario_ids uuid[] not null,
  metadata jsonb not null default '{}'::jsonb,
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index agent_test_suites_org_idx on agent_test_suites (org_id, created_at desc, id desc) where deleted_at is null;

create table agent_test_runs (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  agent_id uuid not null references agents (id),
  suite_id uuid references agent_test_suites (id),
  mode text not null check (mode in ('text', 'voice')),
  status text not null default 'queued' check (status in ('queued', 'running', 'completed', 'canceled')),
  total integer not null,
  passed integer not null default 0,
  failed integer not null default 0,
  errored integer not null default 0,
  started_at timestamptz,
  ended_at timestamptz,
  -- Set when test_run.completed was emitted: once per run, whoever finishes it.
  notified_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index agent_test_runs_agent_idx on agent_test_runs (org_id, agent_id, created_at desc, id desc);

-- One row per scenario of a run. `scenario` is the scenario as it was when the run was created, so editing or
-- deleting it later changes neither a run in progress nor the record of a finished one.
create table agent_test_results (
  id uuid primary key default gen_random_uuid(),
  run_id uuid not null references agent_test_runs (id) on delete cascade,
  org_id uuid not null references orgs (id) on delete cascade,
  position integer not null,
  scenario_id uuid not null,
  scenario jsonb not null,
  status text not null default 'pending' check (status in ('pending', 'running', 'passed', 'failed', 'error', 'canceled')),
  expectations jsonb not null default '[]'::jsonb,
  messages jsonb not null default '[]'::jsonb,
  tool_calls jsonb not null default '[]'::jsonb,
  ended_by text,
  end_reason text,
  outcome text,
  turns integer not null default 0,
  -- The conversation's own time (model and tool time, plus scripted waits); test minutes in usage.
  duration_ms integer,
  latency jsonb,
  error text,
  started_at timestamptz,
  ended_at timestamptz,
  unique (run_id, position)
);
-- The per-organisation concurrency bound counts running rows.
create index agent_test_results_running_idx on agent_test_results (org_id) where status = 'running';
create index agent_test_results_pending_idx on agent_test_results (run_id, position) where status = 'pending';
create index agent_test_results_month_idx on agent_test_results (org_id, ended_at) where duration_ms is not null;
