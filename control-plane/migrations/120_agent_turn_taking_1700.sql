-- The column default follows the API's turn-taking default, now 1700 ms after a finished-sounding turn and 3000 ms
-- after an open one (shared/turn-taking.ts; docs/decisions/turns-default-wait.md; docs/benchmarks.md, "Turn-taking"):
-- with an STT stand-in that punctuates only from the words and the silence so far, 1000/1500 ms cut into 41 % and
-- 39.5 % of the mid-turn pauses of the tuning and held-out corpora, 1700/3000 ms into 4.0 % and 4.7 %. Stored agents
-- keep what they have (their owners see and may have chosen their delays; responsiveness sets the new ones).
alter table agents alter column turn_taking set default
  '{"detection": "transcript", "endpointing": "fixed", "min_delay_ms": 1700, "max_delay_ms": 3000, "preemptive_generation": true, "ignore_backchannels": true, "barge_in": "pause"}'::jsonb;
