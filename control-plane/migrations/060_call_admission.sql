-- Call admission counts an org's live calls under a per-org lock on every call creation: keep that count an
-- index-only range over the few live rows of the org, whatever the size of its history.
create index calls_org_live_idx on calls (org_id, status) include (scheduled_at)
  where status in ('queued', 'initiated', 'in_progress');
