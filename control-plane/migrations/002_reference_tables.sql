-- Tables that several resources reference, created early so each resource's migration can point at them.
-- Their own issues add the remaining columns (webhooks: 020_*, knowledge bases: 04x_*).
create table webhooks (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null,
  url text not null,
  events text[] not null default '{}',
  status text not null default 'active' check (status in ('active', 'inactive')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index webhooks_org_idx on webhooks (org_id, created_at desc);

create table knowledge_bases (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null,
  chunk_size integer not null default 512,
  multilingual boolean not null default false,
  mode text not null default 'stuff',
  total_tokens integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index knowledge_bases_org_idx on knowledge_bases (org_id, created_at desc);
