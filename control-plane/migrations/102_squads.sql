-- Squads: agents that hand a call to one another inside one call (docs/decisions.md, "Squads"). A call started
-- on a squad keeps the squad in `squad_id` and its entry agent in `agent_id` (the agent that answered), so
-- every reader of agent_id goes on working; the hand-offs and each agent's latency are kept on the call.

create table squads (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null check (length(name) between 1 and 255),
  agent_ids uuid[] not null check (cardinality(agent_ids) between 1 and 20),
  entry_agent_id uuid not null references agents (id),
  -- [{from_agent_id, to_agent_id, description, context}]
  handoffs jsonb not null default '[]'::jsonb,
  max_handoffs integer not null default 10 check (max_handoffs between 1 and 100),
  metadata jsonb not null default '{}'::jsonb,
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (entry_agent_id = any (agent_ids))
);
create index squads_org_idx on squads (org_id, created_at desc, id desc) where deleted_at is null;

alter table calls add column squad_id uuid references squads (id);
-- [{from_agent_id, to_agent_id, reason, context, at}] in the order they happened.
alter table calls add column handoffs jsonb not null default '[]'::jsonb;
-- {agent_id: {llm_ttft, tts_ttfb, eou_delay, e2e}} of a squad's call; null on a single agent's call.
alter table calls add column agent_latency jsonb;
