-- Standby agents (docs/decisions.md, "Standby agents"): rooms the control plane keeps with an agent job already
-- in them, so a web call takes a room whose agent has joined instead of waiting for LiveKit's dispatch and the
-- agent's join. starting: room made, dispatch sent, the agent not yet waiting; ready: its job waits for a call
-- (its worker holds POST /internal/v1/standby/{room}/wait open); taken: a call was given to it, the agent has not
-- claimed it yet. A claimed room leaves the table: from then on it is the call's room (calls.room_name).
create table standby_rooms (
  room_name text primary key,
  agent_name text not null,
  state text not null check (state in ('starting', 'ready', 'taken')),
  worker_id text,
  -- Deferred: the call's transaction takes the room before it inserts the call row that names the room.
  call_id uuid references calls (id) on delete cascade deferrable initially deferred,
  created_at timestamptz not null default now(),
  -- When the row entered its state: a room starting or taken for too long is given up.
  state_at timestamptz not null default now()
);
create index standby_rooms_ready_idx on standby_rooms (agent_name, state_at) where state = 'ready';
