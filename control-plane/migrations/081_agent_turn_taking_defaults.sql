-- The column default follows the API's turn-taking defaults, set from the turn-taking benchmark
-- (shared/turn-taking.ts; docs/decisions.md and docs/benchmarks.md, "Turn-taking"): Silero's end of speech with
-- a fixed 500 ms delay, backchannels ignored. Stored agents keep what they have.
alter table agents alter column turn_taking set default
  '{"detection": "vad", "endpointing": "fixed", "min_delay_ms": 500, "max_delay_ms": 3000, "preemptive_generation": true, "ignore_backchannels": true}'::jsonb;
