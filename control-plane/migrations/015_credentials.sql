-- Third-party provider keys ("bring your own key"). The key itself is only ever stored sealed
-- (AES-256-GCM, see control-plane/src/crypto/secrets.ts) with the version of the master key that sealed it.
create table credentials (
  id uuid primary key default gen_random_uuid(),
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null check (length(name) between 1 and 255),
  provider text not null check (provider in ('openai', 'anthropic', 'gemini', 'deepgram', 'elevenlabs', 'cartesia')),
  ciphertext bytea not null,
  key_version integer not null check (key_version >= 1),
  -- Display hints for the masked form; null when the key is too short to show any of it safely.
  key_prefix text,
  last4 text,
  metadata jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index credentials_org_idx on credentials (org_id, created_at desc);
-- The media worker asks for the newest key of each provider of an org.
create index credentials_org_provider_idx on credentials (org_id, provider, created_at desc);
