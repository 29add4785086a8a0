-- Finished messages are deleted (their attempts stay in webhook_deliveries), so nothing needs this index.
drop index webhook_messages_done_idx;
