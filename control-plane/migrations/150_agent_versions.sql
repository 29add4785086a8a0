-- Agent versions (docs/decisions.md, "Agent versions"): every change to an agent records an immutable snapshot of
-- its own fields and of what it refers to as resolved then (its LLM model's settings and prompt, the definitions of
-- the model's tools, the model's knowledge bases by id). The agents row stays the published version's own fields, so
-- the spec's agent resource reads as before; calls run a version's snapshot.

create table agent_versions (
  agent_id uuid not null references agents (id) on delete cascade,
  version integer not null check (version >= 1),
  org_id uuid not null references orgs (id) on delete cascade,
  -- {agent: {name, llm_id, webhook_id, ...behaviour}, model: {...}, tools: [...], knowledge_bases: [{id, name}]}
  snapshot jsonb not null,
  -- create, update (PATCH, published at once), draft (PATCH .../draft), dependency (its model or a tool changed),
  -- migration (version 1 of an agent that existed before versions).
  kind text not null check (kind in ('create', 'update', 'draft', 'dependency', 'migration')),
  -- The version it was made from (its diff is against it); null for a first version.
  base_version integer,
  -- The snapshot paths that differ from the base version (agent.first_message, model.system_prompt, tools.<name>...),
  -- and for a dependency the resource whose change made it ({resource_type, resource_id, action}).
  changes text[] not null default '{}',
  cause jsonb,
  -- Who made it, as audit events record actors.
  actor_type text not null,
  actor_id text,
  -- First publication (null while it has never been published: a draft, or a dependency held by a test gate).
  published_at timestamptz,
  created_at timestamptz not null default now(),
  primary key (agent_id, version)
);
create index agent_versions_org_idx on agent_versions (org_id, agent_id, version desc);

alter table agents
  add column published_version integer,
  add column draft_version integer,
  -- Traffic split: split_percent % of the calls that follow the published version run split_version instead.
  add column split_version integer,
  add column split_percent integer check (split_percent between 1 and 99),
  -- A test suite whose run against a version must pass before the version is published.
  add column test_suite_id uuid references agent_test_suites (id),
  add check ((split_version is null) = (split_percent is null));

-- Which version a call ran and why: `published`, `split` (the agent's traffic split sent it to the other version)
-- or `pinned` (its number, campaign or request named the version). Null until the config fetch resolves it, and
-- for a call that never reached a worker.
alter table calls
  add column agent_version integer,
  add column agent_version_source text check (agent_version_source in ('published', 'split', 'pinned'));
create index calls_agent_version_idx on calls (org_id, agent_id, agent_version, created_at) where agent_version is not null;

-- Pins: a number, a campaign may run one version of their agent instead of following the published one.
alter table phone_numbers add column agent_version integer;
alter table campaigns add column agent_version integer;
-- The version a test run ran against.
alter table agent_test_runs add column agent_version integer;

-- Version 1 of every existing agent, as it resolves now, published.
insert into agent_versions (agent_id, version, org_id, snapshot, kind, actor_type, actor_id, published_at, created_at)
select a.id, 1, a.org_id,
  jsonb_build_object(
    'agent', jsonb_build_object(
      'name', a.name, 'llm_id', a.llm_id, 'webhook_id', a.webhook_id, 'transcriber', a.transcriber, 'tts', a.tts,
      'first_message', a.first_message, 'end_call_phrases', to_jsonb(a.end_call_phrases),
      'max_duration_seconds', a.max_duration_seconds, 'interruption_sensitivity', a.interruption_sensitivity,
      'silence_timeout_seconds', a.silence_timeout_seconds, 'enable_recording', a.enable_recording, 'language', a.language,
      'dynamic_variables', a.dynamic_variables, 'voicemail_detection', a.voicemail_detection,
      'voicemail_message', a.voicemail_message, 'responsiveness', a.responsiveness, 'turn_taking', a.turn_taking,
      'speed', a.speed, 'background_sound', a.background_sound, 'emotions', a.emotions,
      'job_description', a.job_description, 'data_retention', a.data_retention,
      'recording_consent', a.recording_consent, 'recording_consent_message', a.recording_consent_message,
      'metadata', a.metadata),
    'model', jsonb_build_object(
      'id', m.id, 'name', m.name, 'provider', m.provider, 'model', m.model, 'base_url', m.base_url,
      'system_prompt', m.system_prompt, 'temperature', m.temperature, 'max_tokens', m.max_tokens),
    'tools', coalesce((
      select jsonb_agg(jsonb_build_object(
               'id', t.id, 'type', t.type, 'name', t.name, 'description', t.description, 'parameters', t.parameters,
               'url', t.url, 'method', t.method, 'timeout_ms', t.timeout_ms, 'destination', t.destination,
               'transfer_mode', t.transfer_mode) order by array_position(m.tool_ids, t.id))
      from tools t where t.id = any(m.tool_ids) and t.org_id = a.org_id and t.deleted_at is null), '[]'::jsonb),
    'knowledge_bases', coalesce((
      select jsonb_agg(jsonb_build_object('id', k.id, 'name', k.name) order by array_position(m.knowledge_base_ids, k.id))
      from knowledge_bases k where k.id = any(m.knowledge_base_ids) and k.org_id = a.org_id), '[]'::jsonb)),
  'migration', 'system', null, now(), a.created_at
from agents a join llm_models m on m.id = a.llm_id;

update agents set published_version = 1 where exists (select 1 from agent_versions v where v.agent_id = agents.id);
