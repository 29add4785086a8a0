-- turn_taking.barge_in (schemas/agents.ts; docs/decisions.md, "Turn-taking"): new agents pause their audio at the
-- caller's first sound and let the words decide. Stored agents, and calls whose overrides carry a turn_taking,
-- keep what they did: they go on speaking until words are transcribed ("words").
alter table agents alter column turn_taking set default
  '{"detection": "transcript", "endpointing": "fixed", "min_delay_ms": 150, "max_delay_ms": 1500, "preemptive_generation": true, "ignore_backchannels": true, "barge_in": "pause"}'::jsonb;
update agents set turn_taking = turn_taking || '{"barge_in": "words"}'::jsonb where not turn_taking ? 'barge_in';
update calls set overrides = jsonb_set(overrides, '{turn_taking,barge_in}', '"words"')
  where jsonb_typeof(overrides -> 'turn_taking') = 'object' and not (overrides -> 'turn_taking') ? 'barge_in';
