-- An inbound caller's do-not-call request lists the number the call came from: its caller ID, which anyone
-- can set (issue 50, low). Such entries are told apart (`agent_unverified`): honoured like any entry, shown
-- for the organisation to review, and bounded per day (DNC_UNVERIFIED_PER_DAY), so spoofed calls cannot fill
-- the list with numbers the organisation means to call.
alter table do_not_call drop constraint do_not_call_source_check;
alter table do_not_call add constraint do_not_call_source_check check (source in ('api', 'agent', 'agent_unverified'));
