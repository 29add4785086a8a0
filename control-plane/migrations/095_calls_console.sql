-- The console's calls list (docs/decisions.md, "Calls list at scale"): every filter of GET /v1/calls has an
-- index leading with org_id and ending with the list's order (created_at desc, id desc), so a page is a walk of
-- one index range, never a sort of the org's calls; the id makes the order total (stable pages, keyset-ready).

-- Text in the transcript: the messages' `content` strings only (no roles, no tool arguments), with the
-- `simple` configuration (no stemming: calls are in any language). A stored column, kept in step with
-- `messages` (partial transcripts, retention wiping) by PostgreSQL: with an index on the expression instead,
-- every match checked or counted recomputed the tsvector from the JSON (about 70 us a call; a count of 10,000
-- matches took 0.7 s at 1M calls). ANALYZE gathers its per-word frequencies, which let the planner walk the
-- time index for a common word and use the GIN index for a rare one. Adding it rewrites the table once.
alter table calls add column transcript_tsv tsvector generated always as (
  jsonb_to_tsvector('simple'::regconfig, jsonb_path_query_array(messages, '$[*].content'), '["string"]')
) stored;
create index calls_transcript_idx on calls using gin (transcript_tsv);

-- The agent index gains the tie-breaker.
drop index calls_org_agent_idx;
create index calls_org_agent_idx on calls (org_id, agent_id, created_at desc, id desc);
create index calls_org_status_idx on calls (org_id, status, created_at desc, id desc);
create index calls_org_type_idx on calls (org_id, type, created_at desc, id desc);
create index calls_org_outcome_idx on calls (org_id, outcome, created_at desc, id desc) where outcome is not null;
-- A phone number's calls: the platform's side of the call, the number called for inbound, the caller ID for
-- outbound (web calls have none). The same expression is in calls/queries.ts.
create index calls_org_number_idx on calls (org_id, (case type when 'inbound' then to_number when 'outbound' then from_number end), created_at desc, id desc)
  where type <> 'web';
