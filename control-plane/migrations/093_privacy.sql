-- Privacy (docs/decisions.md, "Privacy"): what a call keeps of its conversation, and for how long.
--
-- data_retention: `everything`, `redact_pii` (personal data replaced by typed placeholders before anything is
-- stored or sent) or `no_content` (no text, analysis or recording). The org's setting, which an agent's own
-- (null: none) overrides. retain_days: the age past which a call's content is deleted (null: kept).
alter table orgs
  add column data_retention text not null default 'everything' check (data_retention in ('everything', 'redact_pii', 'no_content')),
  add column retain_days integer check (retain_days between 1 and 3650);

alter table agents
  add column data_retention text check (data_retention in ('everything', 'redact_pii', 'no_content'));

-- When the retention job deleted the call's content; the job's scan of an org skips calls already done.
alter table calls add column content_deleted_at timestamptz;
create index calls_retention_idx on calls (org_id, created_at) where content_deleted_at is null;
