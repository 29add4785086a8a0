-- Media workers that registered with LiveKit report here every few seconds (internal API), so readiness can
-- tell whether any worker is there to take calls. LiveKit has no API that lists agent workers.
create table media_workers (
  id text primary key,
  agent_name text not null,
  active_calls integer not null default 0,
  load double precision not null default 0,
  draining boolean not null default false,
  first_seen_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now()
);
create index media_workers_seen_idx on media_workers (agent_name, last_seen_at desc);
