-- Workspace settings: the organisation's time zone, its default webhook, and the agent that answers numbers
-- without a routing of their own. Columns rather than keys of `orgs.settings`, so the references are typed
-- and a deleted webhook simply stops being the default.
alter table orgs
  add column timezone text not null default 'UTC',
  add column default_webhook_id uuid references webhooks (id) on delete set null,
  -- Agents are soft-deleted; reads treat a deleted default agent as none.
  add column default_agent_id uuid references agents (id) on delete set null;
