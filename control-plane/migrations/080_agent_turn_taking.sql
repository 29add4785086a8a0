-- An agent's turn taking (schemas/agents.ts `turn_taking`, docs/decisions.md "Turn-taking"). Existing agents get
-- what they had: the local end-of-turn model, fixed endpointing with the delays their responsiveness gave
-- (1000 - 800 r / 4000 - 3000 r ms), preemptive generation on, backchannels interrupting. The API always writes
-- the whole object; the column default (the API's defaults at responsiveness 0.5) is for rows written by SQL.
alter table agents add column turn_taking jsonb not null default
  '{"detection": "model", "endpointing": "fixed", "min_delay_ms": 600, "max_delay_ms": 2500, "preemptive_generation": true, "ignore_backchannels": false}'::jsonb;
update agents set turn_taking = jsonb_build_object(
  'detection', 'model',
  'endpointing', 'fixed',
  'min_delay_ms', round(1000 - 800 * responsiveness)::int,
  'max_delay_ms', round(4000 - 3000 * responsiveness)::int,
  'preemptive_generation', true,
  'ignore_backchannels', false);
