-- The column default follows the API's new turn-taking defaults (shared/turn-taking.ts; docs/decisions.md and
-- docs/benchmarks.md, "Turn-taking"): the transcript turn detector, 200 ms after a finished sentence and
-- 1500 ms after an open one. Stored agents keep what they have.
alter table agents alter column turn_taking set default
  '{"detection": "transcript", "endpointing": "fixed", "min_delay_ms": 200, "max_delay_ms": 1500, "preemptive_generation": true, "ignore_backchannels": true}'::jsonb;
