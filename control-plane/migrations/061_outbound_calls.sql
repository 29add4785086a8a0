-- Outbound calls: Idempotency-Key records, and the stop that ends a call before its worker reports.

-- Stripe's rules: a key (per org, 1-255 characters) names one request for 24 hours. The record is written in
-- the transaction that creates the call, so a retried request replays the first answer and dials once.
create table idempotency_keys (
  org_id uuid not null references orgs (id) on delete cascade,
  key text not null check (length(key) between 1 and 255),
  -- sha256 of method, path and the canonical JSON body: the same key with other parameters is refused.
  request_hash text not null,
  call_id uuid references calls (id) on delete cascade,
  response_status integer not null,
  response_body jsonb not null,
  created_at timestamptz not null default now(),
  primary key (org_id, key)
);
create index idempotency_keys_created_idx on idempotency_keys (created_at);

-- A stop completes the call at once (status, ended_at, duration); the conversation, latency and usage come
-- with the worker's report afterwards. While this is true, that report is still awaited: it fills those
-- fields (nothing else), then transcript.final fires and the analysis is queued.
alter table calls add column awaiting_report boolean not null default false;

-- Set by the dial job just before it asks LiveKit to place the call: a job resumed after a crash redials only
-- a call that was never placed, so a dial is neither lost nor doubled.
alter table calls add column dialed_at timestamptz;
