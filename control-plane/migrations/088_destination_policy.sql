-- Toll fraud: where an organisation may call, and what it may spend in a day.
--
-- The destination policy (workspace settings): allowed countries (null = the countries of the org's own
-- numbers), blocked number types (null = premium_rate, shared_cost, satellite, unknown), and the SIP hosts a
-- `sip:` transfer may reach (none by default). Checked for outbound calls and transfers (shared/destination-policy.ts).
alter table orgs
  add column destination_allowed_countries text[],
  add column destination_blocked_number_types text[],
  add column destination_allowed_sip_hosts text[] not null default '{}',
  -- A limit next to max_calls_per_day, set by the operator (`npm run admin -- set-limits`): new outbound calls
  -- are refused once the phone calls of the UTC day (ended today, or still connected) cost this much.
  add column daily_spend_cap_cents integer not null default 10000 check (daily_spend_cap_cents >= 0);

-- The day's spend of an org, read under the admission lock of every outbound call: the costed calls that
-- ended since midnight UTC, and the live ones, found without walking the org's history.
create index calls_org_spend_idx on calls (org_id, ended_at) include (cost_cents, rate_cents_per_minute, started_at, status)
  where rate_cents_per_minute is not null;
