-- A publishable key is public by design (it sits in a web page), so its value is kept and answered whole in
-- lists and reads (docs/decisions/spec-publishable-keys-whole.md). Authentication still looks keys up by hash.
-- Keys created before this column existed have only their hash: they stay masked.
alter table publishable_keys add column key_value text;
