-- Inbound routing on a squad (docs/decisions.md, "Inbound routing on a squad"). A number routed to a squad keeps
-- the squad in `squad_id` and the squad's entry agent in `agent_id` (kept in step when the squad's entry agent
-- changes), as a squad's call does, so every reader of a number's agent_id goes on working. The routing override
-- and its fallback name a squad inside inbound_routing (`squad_id`, `fallback.squad_id`).

alter table phone_numbers add column squad_id uuid references squads (id);
create index phone_numbers_squad_idx on phone_numbers (squad_id) where squad_id is not null;

-- Every stored routing has every key of the API's InboundRouting.
update phone_numbers set inbound_routing = inbound_routing || '{"squad_id": null}'::jsonb where inbound_routing is not null;
