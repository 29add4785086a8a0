-- Activity summary: the window counters over calls read the index alone (no heap visits for 1M-call orgs),
-- and failed webhook deliveries and disabled webhooks are counted from partial indexes.
create index calls_org_activity_idx on calls (org_id, created_at) include (status, outcome, end_reason, analysis_status);
create index webhook_deliveries_org_failed_idx on webhook_deliveries (org_id, created_at) where status <> 'succeeded';
create index webhooks_org_disabled_idx on webhooks (org_id, disabled_at) where disabled_at is not null;
