-- Knowledge bases: sources, ingestion jobs and the chunks the agents search at call time.
-- `knowledge_bases` itself was created early (002) so LLM models could reference it; its remaining columns
-- come here. Full-text search is the default retrieval: each chunk carries the text-search configuration it
-- was indexed with (the base's language, or `simple` for multilingual bases), so the generated tsvector and
-- the query agree, and the GIN index serves every base.

alter table knowledge_bases
  add column language text not null default 'english',
  alter column mode set default 'retrieval',
  add constraint knowledge_bases_mode_check check (mode in ('stuff', 'retrieval')),
  add constraint knowledge_bases_chunk_size_check check (chunk_size between 64 and 4096),
  add constraint knowledge_bases_total_tokens_check check (total_tokens >= 0);

create table knowledge_sources (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  kb_id uuid not null references knowledge_bases (id) on delete cascade,
  type text not null check (type in ('url', 'file', 'text')),
  -- The URL, the file name, or a short excerpt of the text.
  source text not null,
  file_name text not null default '',
  mime_type text not null default '',
  file_size integer not null default 0,
  -- The uploaded file or text, kept so a retried (or re-run) job needs nothing from the request.
  payload bytea,
  status text not null default 'queued' check (status in ('queued', 'processing', 'ready', 'error')),
  error_message text,
  chunk_count integer not null default 0,
  token_count integer not null default 0 check (token_count >= 0),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index knowledge_sources_kb_idx on knowledge_sources (kb_id, created_at, id);
create index knowledge_sources_org_status_idx on knowledge_sources (org_id, status);

create table knowledge_jobs (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  kb_id uuid not null references knowledge_bases (id) on delete cascade,
  source_id uuid not null references knowledge_sources (id) on delete cascade,
  status text not null default 'queued' check (status in ('queued', 'running', 'succeeded', 'failed')),
  attempts integer not null default 0,
  pages_found integer not null default 0,
  pages_fetched integer not null default 0,
  pages_skipped integer not null default 0,
  pages_failed integer not null default 0,
  chunks integer not null default 0,
  tokens integer not null default 0,
  error text,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz not null default now()
);
create index knowledge_jobs_source_idx on knowledge_jobs (source_id);

create table knowledge_chunks (
  id bigint generated always as identity primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  kb_id uuid not null references knowledge_bases (id) on delete cascade,
  source_id uuid not null references knowledge_sources (id) on delete cascade,
  -- Position within the source: (source_id, ordinal) is unique, so a retried job cannot duplicate a chunk.
  ordinal integer not null,
  heading text not null default '',
  content text not null,
  url text,
  title text not null default '',
  token_count integer not null,
  ts_config regconfig not null default 'english',
  tsv tsvector generated always as (
    setweight(to_tsvector(ts_config, heading), 'A') || setweight(to_tsvector(ts_config, content), 'B')
  ) stored,
  unique (source_id, ordinal)
);
create index knowledge_chunks_tsv_idx on knowledge_chunks using gin (tsv);
create index knowledge_chunks_kb_idx on knowledge_chunks (kb_id, source_id, ordinal);
