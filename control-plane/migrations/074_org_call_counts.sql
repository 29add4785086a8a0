-- Lifetime call count per organisation, kept by triggers, so the activity summary does not count an org's
-- calls one index entry at a time (a million-call org took most of the summary's time). Call creation already
-- serialises per org (admission lock, daily counter), so one more per-org row adds no new contention.
create table org_call_counts (
  org_id uuid primary key references orgs (id) on delete cascade,
  calls bigint not null default 0
);

insert into org_call_counts (org_id, calls) select org_id, count(*) from calls group by org_id;

create function org_call_counts_bump() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    insert into org_call_counts as c (org_id, calls) values (new.org_id, 1)
    on conflict (org_id) do update set calls = c.calls + 1;
  elsif tg_op = 'DELETE' then
    update org_call_counts set calls = calls - 1 where org_id = old.org_id;
  end if;
  return null;
end $$;

create trigger calls_count_insert after insert on calls for each row execute function org_call_counts_bump();
create trigger calls_count_delete after delete on calls for each row execute function org_call_counts_bump();
