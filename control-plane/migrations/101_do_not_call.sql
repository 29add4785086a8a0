-- The organisation's do-not-call list (/v1/do-not-call), checked before every campaign attempt and every
-- POST /v1/calls; the agent's built-in `do_not_call` tool adds the callee to it.
create table do_not_call (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  phone_number text not null check (phone_number ~ '^\+[1-9][0-9]{1,14}$'),
  reason text,
  -- api (POST /v1/do-not-call) or agent (the do_not_call tool, on call_id).
  source text not null check (source in ('api', 'agent')),
  call_id uuid references calls (id) on delete set null,
  created_at timestamptz not null default now(),
  unique (org_id, phone_number)
);
create index do_not_call_org_idx on do_not_call (org_id, created_at desc, id desc);

alter table tools drop constraint tools_type_check;
alter table tools add constraint tools_type_check check (type in ('function', 'end_call', 'transfer_call', 'send_dtmf', 'do_not_call'));
