-- Shared per-credential token buckets (control-plane/src/http/rate-limit.ts). Unlogged: the state is worth
-- nothing after a crash (buckets refill in seconds), so it skips the WAL.
create unlogged table rate_limit_buckets (
  key text primary key,
  tokens double precision not null,
  updated_at timestamptz not null
);
