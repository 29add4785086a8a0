-- Which way a call's post-call analysis was made (docs/decisions.md, "Post-call analysis through the agent's
-- provider"): the agent's own model, the configured analysis model, an extractive summary, or a rule.
alter table calls
  add column analysis_method text check (analysis_method in ('agent_model', 'analysis_model', 'extractive', 'rule')),
  add column analysis_model text;
