-- Widening the destination policy is the operator's, not an API key's (issue 50, item 3): a stolen key or a
-- tenant that never pays could otherwise open every country and unblock premium-rate numbers.
--
-- The operator's ceiling (`npm run admin -- set-destination-limits`): countries an organisation may allow
-- beyond those of its own numbers, and default-blocked number types it may unblock. PATCH /v1/workspace may
-- only choose within it, and every check intersects the stored policy with it, so a policy widened before
-- this migration stops reaching past it until the operator grants it.
alter table orgs
  add column destination_extra_countries text[] not null default '{}',
  add column destination_unblockable_types text[] not null default '{}';
