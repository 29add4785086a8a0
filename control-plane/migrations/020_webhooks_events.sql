-- Webhooks and events: signing secrets, the events outbox, per-endpoint delivery tasks and attempt records.
-- See docs/decisions.md ("Webhooks and events") for the rules these tables implement.

-- Signing secrets are sealed with the master key (services.secrets). After a rotation the previous secret
-- keeps signing too (a second signature) until previous_secret_expires_at, so receivers can switch over.
alter table webhooks
  add column secret_ciphertext bytea,
  add column secret_key_version integer,
  add column previous_secret_ciphertext bytea,
  add column previous_secret_key_version integer,
  add column previous_secret_expires_at timestamptz,
  -- First failed attempt since the last success; cleared by a success. Drives the automatic disabling.
  add column failing_since timestamptz,
  add column disabled_at timestamptz,
  add column disabled_reason text;

-- The secret that signs deliveries to a call's own `webhook_url` (which has no webhook record).
create table webhook_org_secrets (
  org_id uuid primary key references orgs (id) on delete cascade,
  secret_ciphertext bytea not null,
  secret_key_version integer not null,
  previous_secret_ciphertext bytea,
  previous_secret_key_version integer,
  previous_secret_expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- The transactional outbox: one row per event, written in the transaction of the change that causes it.
-- `payload` is `json` (not jsonb) so the body keeps its exact bytes and key order across retries.
create table events (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  type text not null,
  call_id uuid,
  agent_id uuid,
  payload json not null,
  created_at timestamptz not null default now()
);
create index events_org_time_idx on events (org_id, created_at desc);
create index events_call_idx on events (call_id, created_at) where call_id is not null;

-- One row per event and endpoint: the unit the dispatcher claims (SKIP LOCKED), retries and orders.
--   target    = the endpoint (webhook id, or 'url:' + the call's webhook_url): concurrency per endpoint
--   order_key = target + '/' + call id: a message waits while an earlier one with its key is unfinished
create table webhook_messages (
  id bigint generated always as identity primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  event_id uuid not null references events (id) on delete cascade,
  event_type text not null,
  webhook_id uuid references webhooks (id) on delete cascade,
  url text,
  target text not null,
  order_key text,
  status text not null default 'pending'
    check (status in ('pending', 'delivering', 'succeeded', 'failed', 'coalesced')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  locked_until timestamptz,
  created_at timestamptz not null default now(),
  completed_at timestamptz,
  check (webhook_id is not null or url is not null)
);
create index webhook_messages_due_idx on webhook_messages (next_attempt_at, id) where status = 'pending';
create index webhook_messages_order_idx on webhook_messages (order_key, id) where status in ('pending', 'delivering');
create index webhook_messages_locked_idx on webhook_messages (locked_until) where status = 'delivering';
create index webhook_messages_webhook_idx on webhook_messages (webhook_id);
create index webhook_messages_event_idx on webhook_messages (event_id);
create index webhook_messages_done_idx on webhook_messages (completed_at) where completed_at is not null;

-- One row per attempt (the spec's webhook delivery record).
--   status: succeeded | retrying (failed, another attempt at next_retry_at) | failed (failed, no more attempts)
create table webhook_deliveries (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  webhook_id uuid references webhooks (id) on delete cascade,
  event_id uuid not null,
  event text not null,
  url text not null,
  status text not null check (status in ('succeeded', 'retrying', 'failed')),
  attempt integer not null,
  response_status integer,
  response_body text,
  error text,
  duration_ms integer not null,
  next_retry_at timestamptz,
  completed_at timestamptz not null,
  created_at timestamptz not null
);
create index webhook_deliveries_webhook_idx on webhook_deliveries (webhook_id, created_at desc, id desc);
create index webhook_deliveries_org_idx on webhook_deliveries (org_id, created_at desc);
