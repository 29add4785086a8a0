-- Blind transfers go through the control plane like warm ones (issue 50, item 3): the worker asks, the control
-- plane checks the destination policy and the day's spend, records the transfer, sends the REFER and prices it.
-- The carrier's new leg is out of sight once the REFER is accepted, so its cost is a reservation: the
-- destination's outbound rate times BLIND_TRANSFER_RESERVED_MINUTES, counted in the day's spend.
alter table call_transfers drop constraint call_transfers_mode_check;
alter table call_transfers add constraint call_transfers_mode_check check (mode in ('warm', 'blind'));
