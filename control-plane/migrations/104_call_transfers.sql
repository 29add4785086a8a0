-- Warm transfers (docs/decisions.md, "Warm transfer"): a transfer_call tool's `mode` (blind: SIP REFER, as
-- before; warm: a second SIP leg into the call's room, briefed by the agent, then joined to the caller), and
-- one row per transfer a call attempted, with its second leg's times (billed like the call's own minutes).

alter table tools add column transfer_mode text check (transfer_mode in ('blind', 'warm'));
update tools set transfer_mode = 'blind' where type = 'transfer_call';

create table call_transfers (
  id uuid primary key default gen_random_uuid(),
  call_id uuid not null references calls (id) on delete cascade,
  org_id uuid not null references orgs (id) on delete cascade,
  mode text not null check (mode in ('warm')),
  destination text not null,
  -- ringing -> answered -> joined -> ended; or busy, no_answer, failed, refused (by the destination policy)
  status text not null check (status in ('ringing', 'answered', 'joined', 'ended', 'busy', 'no_answer', 'failed', 'refused')),
  -- The second leg's SIP participant in the call's room.
  participant_identity text,
  sip_status integer,
  sip_call_id text,
  reason text,
  started_at timestamptz not null default now(),
  answered_at timestamptz,
  joined_at timestamptz,
  ended_at timestamptz,
  -- From answered_at to ended_at: the second leg's billed time.
  duration_seconds integer,
  -- The worker's `ended` report, held while the joined legs talk on without it (the call ends when a leg leaves).
  held_report jsonb
);
create index call_transfers_call_idx on call_transfers (call_id, started_at);
-- At most one transfer in flight (ringing, answered or joined) per call.
create unique index call_transfers_live_idx on call_transfers (call_id) where status in ('ringing', 'answered', 'joined');
