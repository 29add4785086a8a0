-- The console's calls list (docs/decisions.md, "Calls list at scale"): every filter of GET /v1/calls has an
-- index leading with org_id and ending with the list's order (created_at desc, id desc), so a page is a walk of
-- one index range, never a sort of the org's calls; the id makes the order total (stable pages, keyset-ready).

-- Text in the transcript: the messages' `content` strings only (no roles, no tool arguments), with the
-- `simple` configuration (no stemming: calls are in any language). An expression index rather than a stored
-- column, so no `select *` of a call carries a tsvector; PostgreSQL keeps it in step with `messages` (partial
-- transcripts, retention wiping) and ANALYZE gathers per-word frequencies for it, which let the planner walk
-- the time index for a common word and use this index for a rare one. The same expression is in
-- calls/queries.ts (TRANSCRIPT_TSV): a query must spell it identically to use the index.
create index calls_transcript_idx on calls
  using gin (jsonb_to_tsvector('simple'::regconfig, jsonb_path_query_array(messages, '$[*].content'), '["string"]'));

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
