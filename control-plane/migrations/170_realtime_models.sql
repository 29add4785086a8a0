-- Realtime (speech-to-speech) models (issue 54): a model record with `realtime` set is the agent's whole voice loop
-- (OpenAI Realtime): its voice and its turn detection (the provider's server_vad or semantic_vad, or the platform's
-- own). Null for a text LLM. See docs/decisions/realtime-speech-to-speech.md.
alter table llm_models add column realtime jsonb;

-- Versions recorded before realtime models existed ran a text LLM: their snapshot's model says so (`realtime`:
-- null), as a snapshot the API records now does. Only that one key is added; nothing else of a version changes.
update agent_versions
   set snapshot = jsonb_set(snapshot, '{model,realtime}', 'null'::jsonb)
 where jsonb_typeof(snapshot -> 'model') = 'object'
   and not (snapshot -> 'model') ? 'realtime';
