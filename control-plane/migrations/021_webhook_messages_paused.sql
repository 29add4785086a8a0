-- Messages of an inactive webhook wait as `paused`, out of the dispatcher's scan of due messages, so a large
-- paused backlog costs nothing per claim. Setting the webhook active moves them back to `pending`.
alter table webhook_messages drop constraint webhook_messages_status_check;
alter table webhook_messages add constraint webhook_messages_status_check
  check (status in ('pending', 'delivering', 'paused', 'succeeded', 'failed', 'coalesced'));
drop index webhook_messages_order_idx;
create index webhook_messages_order_idx on webhook_messages (order_key, id) where status in ('pending', 'delivering', 'paused');
