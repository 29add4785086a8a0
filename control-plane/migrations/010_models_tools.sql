-- LLM model records and tools. Both are soft-deleted (deleted_at) because other records point at them: agents
-- at models, models at tools, and call records (through their agent) at both.

create table llm_models (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null check (length(name) between 1 and 255),
  provider text not null check (provider in ('openai', 'gemini', 'anthropic')),
  model text not null check (length(model) between 1 and 255),
  -- OpenAI-compatible server (Ollama, vLLM, llama.cpp server); only with provider openai.
  base_url text check (base_url is null or provider = 'openai'),
  system_prompt text,
  temperature double precision not null check (temperature between 0 and 2),
  max_tokens integer check (max_tokens is null or max_tokens >= 1),
  -- Ordered lists; membership in the org is checked by the API, deletion of a linked tool is refused.
  tool_ids uuid[] not null default '{}',
  knowledge_base_ids uuid[] not null default '{}',
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index llm_models_org_idx on llm_models (org_id, created_at desc, id desc) where deleted_at is null;
create index llm_models_tool_ids_idx on llm_models using gin (tool_ids) where deleted_at is null;

create table tools (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  type text not null check (type in ('function', 'end_call', 'transfer_call', 'send_dtmf')),
  name text not null check (name ~ '^[a-zA-Z0-9_-]{1,64}$'),
  description text,
  -- function tools
  parameters jsonb,
  url text,
  method text check (method in ('GET', 'POST', 'PUT', 'PATCH', 'DELETE')),
  -- {header name: value} as JSON, sealed (AES-256-GCM, the tool id as associated data); names included.
  headers_ciphertext bytea,
  headers_key_version integer,
  timeout_ms integer,
  -- Standard Webhooks secret for requests to the tool's server, sealed; the previous one stays valid for a
  -- while after a rotation so receivers can switch without failed calls.
  signing_secret_ciphertext bytea,
  signing_secret_key_version integer,
  previous_secret_ciphertext bytea,
  previous_secret_key_version integer,
  previous_secret_expires_at timestamptz,
  -- transfer_call
  destination text,
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (type <> 'function' or (url is not null and method is not null and parameters is not null and timeout_ms is not null
                                and signing_secret_ciphertext is not null)),
  check (type <> 'transfer_call' or destination is not null)
);
create index tools_org_idx on tools (org_id, created_at desc, id desc) where deleted_at is null;
