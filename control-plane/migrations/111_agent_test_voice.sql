-- Voice-mode agent tests: each scenario is a real web call through the worker, with a simulated caller in the
-- room. The call row marks the run it belongs to, so it is left out of the organisation's billable calls, its
-- concurrency and daily limits and its call events; the result names its call (transcript, recording).
-- See docs/decisions.md ("Agent tests", "Voice mode").
alter table calls add column test_run_id uuid references agent_test_runs (id) on delete set null;
create index calls_test_run_idx on calls (test_run_id) where test_run_id is not null;

alter table agent_test_results add column call_id uuid references calls (id) on delete set null;
