-- Supervising a live call (docs/decisions/supervise-control-channel.md).
-- supervision: each action a person took on the call through POST /v1/calls/{id}/control or /listen, in order:
-- {seq, action, actor_type, actor_id, at, details}; its free text follows the call's data retention.
-- supervision_outbox: the actions the call's media worker carries out (say, whisper, mute), with their text as
-- given, until the worker takes them (GET /internal/v1/calls/{id}/supervision empties it).
alter table calls add column supervision jsonb not null default '[]'::jsonb;
alter table calls add column supervision_outbox jsonb not null default '[]'::jsonb;
