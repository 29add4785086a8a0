-- Tickets of the listen stream (POST /v1/calls/{id}/listen's stream_url; docs/decisions/supervise-control-channel.md).
-- Only the SHA-256 of a ticket is kept. A ticket opens one WebSocket (used_at is set as it is redeemed), for its
-- call only, until expires_at; actor_* is who asked for it, for the call's supervision[] and the audit log.
create table listen_stream_tickets (
  ticket_hash bytea primary key,
  call_id uuid not null references calls (id) on delete cascade,
  org_id uuid not null references orgs (id) on delete cascade,
  actor_type text not null,
  actor_id text not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index listen_stream_tickets_expires_idx on listen_stream_tickets (expires_at);
