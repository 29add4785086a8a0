-- The column default follows the API's turn-taking default floor, now 150 ms after a finished sentence
-- (shared/turn-taking.ts; docs/benchmarks.md, "Turn-taking": it cut in no more often than 200 ms and answered
-- 50 ms sooner). Stored agents keep what they have.
alter table agents alter column turn_taking set default
  '{"detection": "transcript", "endpointing": "fixed", "min_delay_ms": 150, "max_delay_ms": 1500, "preemptive_generation": true, "ignore_backchannels": true}'::jsonb;
