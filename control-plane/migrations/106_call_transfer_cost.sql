-- A warm transfer's second leg is an outbound carrier call: priced like one (the carrier's outbound rate to the
-- destination, captured when it is dialled, times its billed minutes) and counted in the day's carrier spend,
-- so a transfer cannot spend past daily_spend_cap_cents.
alter table call_transfers add column rate_cents_per_minute numeric(10, 4);
alter table call_transfers add column cost_cents integer;
create index call_transfers_org_spend_idx on call_transfers (org_id, ended_at) include (cost_cents, rate_cents_per_minute, answered_at, status)
  where rate_cents_per_minute is not null;
