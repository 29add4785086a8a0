-- An agent test's voice call (test_run_id set) is not a call of the organisation: no call.* events, not in usage,
-- and now not in GET /v1/calls, its total, or the activity summary (docs/decisions/spec-agent-test-calls.md).
-- The list's and the summary's indexes become partial on `test_run_id is null`, so their pages, counts and
-- window counters still read an index alone. The time and agent indexes serve other queries too: they stay, and
-- get partial twins for the list.
drop index calls_org_status_idx;
create index calls_org_status_idx on calls (org_id, status, created_at desc, id desc) where test_run_id is null;
drop index calls_org_type_idx;
create index calls_org_type_idx on calls (org_id, type, created_at desc, id desc) where test_run_id is null;
drop index calls_org_outcome_idx;
create index calls_org_outcome_idx on calls (org_id, outcome, created_at desc, id desc) where outcome is not null and test_run_id is null;
drop index calls_org_number_idx;
create index calls_org_number_idx on calls (org_id, (case type when 'inbound' then to_number when 'outbound' then from_number end), created_at desc, id desc)
  where type <> 'web' and test_run_id is null;
drop index calls_org_activity_idx;
create index calls_org_activity_idx on calls (org_id, created_at) include (status, outcome, end_reason, analysis_status) where test_run_id is null;
create index calls_org_list_idx on calls (org_id, created_at desc, id desc) where test_run_id is null;
create index calls_org_agent_list_idx on calls (org_id, agent_id, created_at desc, id desc) where test_run_id is null;

-- The lifetime counter (074), the unfiltered list's total and the summary's `resource_counts.calls`, counts the
-- organisation's calls only. A run is deleted only with its organisation, so test_run_id never turns null.
create or replace function org_call_counts_bump() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' and new.test_run_id is null then
    insert into org_call_counts as c (org_id, calls) values (new.org_id, 1)
    on conflict (org_id) do update set calls = c.calls + 1;
  elsif tg_op = 'DELETE' and old.test_run_id is null then
    update org_call_counts set calls = calls - 1 where org_id = old.org_id;
  end if;
  return null;
end $$;

update org_call_counts c set calls = (select count(*) from calls where org_id = c.org_id and test_run_id is null);
