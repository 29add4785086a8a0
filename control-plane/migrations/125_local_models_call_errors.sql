-- Day one (issue 48): the platform's own local model is a provider of its own, and a call that cannot start says
-- why. See docs/decisions.md ("The offline path", "A call that cannot start").
--  - `local`: an LLM model record served by the operator's local model (LOCAL_LLM_BASE_URL or LLM_MODEL_PATH on the
--    workers), with no key and no base_url (base_url stays for provider openai only).
--  - calls.error_code / error_message: why a call failed (a worker that could not build the call's agent reports
--    `configuration_error` with one of shared/agent-problems.ts's codes; the control plane's own failures say theirs).
alter table llm_models drop constraint llm_models_provider_check;
alter table llm_models add constraint llm_models_provider_check check (provider in ('openai', 'gemini', 'anthropic', 'local'));

alter table calls add column error_code text, add column error_message text;
