-- call.ended waits for the post-call analysis, up to CALL_ENDED_ANALYSIS_WAIT_SECONDS: true while it is held.
-- Whoever clears the flag (the analysis job when it is done, or the bound's job) emits call.ended in the same
-- transaction, so each call gets exactly one. Calls ended before this column existed have had theirs (false).
alter table calls add column if not exists ended_event_pending boolean not null default false;
