-- Publishable keys sit in customers' pages, where anyone can copy them (docs/decisions.md, "Publishable keys
-- and phone capacity"):
--  - `allowed_overrides`: the `overrides` fields and `variables` a key may send with a web call (none by default);
--  - `calls.publishable_key_id`: the key that started a web call, so those calls have their own concurrency
--    pool and are not counted against the org's phone capacity;
--  - `org_daily_calls.publishable_calls`: the part of the day's count started with publishable keys, which a
--    phone call's admission leaves out.
alter table publishable_keys add column allowed_overrides text[] not null default '{}';

alter table calls add column publishable_key_id uuid references publishable_keys (id);

-- Admission counts live calls per org and per kind: keep it index-only.
drop index calls_org_live_idx;
create index calls_org_live_idx on calls (org_id, status) include (scheduled_at, publishable_key_id)
  where status in ('queued', 'initiated', 'in_progress');

alter table org_daily_calls add column publishable_calls integer not null default 0;
