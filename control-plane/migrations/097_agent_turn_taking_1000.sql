-- The column default follows the API's turn-taking default, now a 1000 ms floor after a finished sentence
-- (shared/turn-taking.ts; docs/benchmarks.md, "Results: the sweep between 300 and 1000 ms"): with a realistic STT
-- the 150 ms floor committed inside 38 % and 81 % of callers' mid-turn pauses on the two corpora, 1000 ms inside
-- 0 % and 7.5 %. Stored agents keep what they have.
alter table agents alter column turn_taking set default
  '{"detection": "transcript", "endpointing": "fixed", "min_delay_ms": 1000, "max_delay_ms": 1500, "preemptive_generation": true, "ignore_backchannels": true, "barge_in": "pause"}'::jsonb;
