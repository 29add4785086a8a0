-- GET /v1/calls/{id}/deliveries finds a call's delivery attempts through its events.
create index if not exists webhook_deliveries_event_idx on webhook_deliveries (event_id, created_at desc, id desc);
