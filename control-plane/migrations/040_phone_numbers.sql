-- Phone numbers: the purchase and wiring state machine, soft delete, and the simulated carrier's inventory.
--
-- wiring_state: purchasing -> wiring -> wired -> releasing -> released. A number is usable (listed, routed,
-- callable) only when `wired`. Anything else that is older than PHONE_WIRING_STALE_SECONDS is an interrupted
-- purchase or release, and the repair job undoes it completely (LiveKit objects, carrier, row).
alter table phone_numbers
  add column carrier_number_id text,
  add column wiring_state text not null default 'wired'
    check (wiring_state in ('purchasing', 'wiring', 'wired', 'releasing', 'released')),
  add column wiring_error text,
  add column country text,
  -- Soft delete: a released number keeps its row (call records and audit events point at it) and stops
  -- counting; `deleted_at is null` is the live set (usage and activity count `org_id` + `deleted_at is null`).
  add column deleted_at timestamptz;

-- A released number can be bought again, by anyone: uniqueness holds among live rows only.
alter table phone_numbers drop constraint phone_numbers_phone_number_key;
create unique index phone_numbers_live_number_idx on phone_numbers (phone_number) where deleted_at is null;
create index phone_numbers_org_live_idx on phone_numbers (org_id, status) where deleted_at is null;
create index phone_numbers_unwired_idx on phone_numbers (updated_at) where wiring_state <> 'wired' and wiring_state <> 'released';

-- Per-minute carrier rate captured when a phone call is opened; the call's cost_cents is this rate times
-- the billed minutes (whole minutes, rounded up), written when the call ends. Null for web calls.
alter table calls add column rate_cents_per_minute numeric(10, 4);

-- The simulated carrier's inventory: fictional numbers (ranges reserved for drama and documentation).
create table simulated_numbers (
  phone_number text primary key check (phone_number ~ '^\+[1-9][0-9]{1,14}$'),
  country text not null,
  region text,
  locality text,
  area_code text,
  sms_capable boolean not null default true,
  -- Set while a platform customer holds the number.
  purchased_at timestamptz,
  ingress text
);
create index simulated_numbers_free_idx on simulated_numbers (country, area_code, phone_number) where purchased_at is null;

-- North America: NXX-555-0100..0199 is reserved for fiction in every area code.
insert into simulated_numbers (phone_number, country, region, locality, area_code)
select '+1' || a.code || '5550' || lpad(n::text, 3, '0'), a.country, a.region, a.locality, a.code
from (values
  ('212', 'US', 'NY', 'New York'), ('415', 'US', 'CA', 'San Francisco'), ('312', 'US', 'IL', 'Chicago'),
  ('617', 'US', 'MA', 'Boston'), ('206', 'US', 'WA', 'Seattle'), ('512', 'US', 'TX', 'Austin'),
  ('305', 'US', 'FL', 'Miami'), ('303', 'US', 'CO', 'Denver'),
  ('416', 'CA', 'ON', 'Toronto'), ('604', 'CA', 'BC', 'Vancouver'), ('514', 'CA', 'QC', 'Montreal')
) as a(code, country, region, locality), generate_series(100, 199) as n;

-- United Kingdom: Ofcom's drama ranges (020 7946 0xxx London, 0161 496 0xxx Manchester).
insert into simulated_numbers (phone_number, country, region, locality, area_code)
select '+44' || a.prefix || lpad(n::text, 3, '0'), 'GB', a.region, a.locality, a.code
from (values ('2079460', 'England', 'London', '20'), ('1614960', 'England', 'Manchester', '161')) as a(prefix, region, locality, code),
     generate_series(0, 99) as n;

-- Australia: ACMA's fictional ranges (02 5550 xxxx, 03 7010 xxxx).
insert into simulated_numbers (phone_number, country, region, locality, area_code)
select '+61' || a.prefix || lpad(n::text, 4, '0'), 'AU', a.region, a.locality, a.code
from (values ('25550', 'NSW', 'Sydney', '2'), ('37010', 'VIC', 'Melbourne', '3')) as a(prefix, region, locality, code),
     generate_series(0, 99) as n;

-- France: ARCEP's fiction range (01 99 00 xx xx).
insert into simulated_numbers (phone_number, country, region, locality, area_code)
select '+3319900' || lpad(n::text, 4, '0'), 'FR', 'Île-de-France', 'Paris', '1'
from generate_series(0, 99) as n;
