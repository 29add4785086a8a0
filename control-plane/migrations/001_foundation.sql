-- Foundation: organisations, users, API keys and the audit log.
create extension if not exists pgcrypto;

create table orgs (
  id uuid primary key default gen_random_uuid(),
  name text not null check (length(name) between 1 and 255),
  settings jsonb not null default '{}'::jsonb,
  max_calls_per_day integer not null default 1000 check (max_calls_per_day >= 0),
  kb_token_budget integer not null default 1000000 check (kb_token_budget >= 0),
  max_concurrent_calls integer not null default 10 check (max_concurrent_calls >= 0),
  is_dev boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Dashboard users arrive through JWTs; `subject` is the token's `sub`.
create table users (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  subject text not null,
  email text,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz,
  unique (org_id, subject)
);

-- Only a SHA-256 of the key is stored: keys carry 256 random bits, so a slow hash adds nothing.
create table api_keys (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null,
  key_hash bytea not null unique,
  key_prefix text not null,
  last4 text not null,
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz,
  created_by text,
  created_at timestamptz not null default now()
);
create index api_keys_org_idx on api_keys (org_id, created_at desc);

create table audit_events (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  actor_type text not null check (actor_type in ('api_key', 'user', 'publishable_key', 'system', 'worker')),
  actor_id text,
  action text not null,
  resource_type text not null,
  resource_id text,
  request_id text,
  ip inet,
  details jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);
create index audit_events_org_time_idx on audit_events (org_id, created_at desc, id desc);
create index audit_events_org_actor_idx on audit_events (org_id, actor_id, created_at desc);

-- Publishable keys are meant for browsers; like secret keys only a hash is kept.
create table publishable_keys (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null,
  key_hash bytea not null unique,
  key_prefix text not null,
  last4 text not null,
  is_active boolean not null default true,
  allowed_origins text[] not null default '{}',
  scopes text[] not null default '{}',
  agent_ids uuid[],
  last_used_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index publishable_keys_org_idx on publishable_keys (org_id, created_at desc);
