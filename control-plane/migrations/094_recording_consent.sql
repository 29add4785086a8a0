-- Recording consent (docs/decisions.md, "Privacy"): what an agent says about the recording before anything else
-- (`announce`), or whether it asks first (`ask`: the recording starts only on the caller's yes); and, on the
-- call, which applied (reported by the worker with the end of the call; null before that, and for older calls).
alter table agents
  add column recording_consent text not null default 'none' check (recording_consent in ('none', 'announce', 'ask')),
  add column recording_consent_message text;

alter table calls
  add column recording_consent text check (recording_consent in ('none', 'announced', 'accepted', 'declined'));
