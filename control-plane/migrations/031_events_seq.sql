-- A total order of events: several events emitted in one transaction can share a created_at, and their
-- uuids are random. The sequence follows insertion order, which is emission order.
alter table events add column seq bigint generated always as identity;
create index events_call_seq_idx on events (call_id, seq) where call_id is not null;
