-- When a call's session config (with the organisation's decrypted provider keys) was handed out: once per call, to
-- the inbound open, the standby claim or the first GET .../config (calls/config-once.ts). A replay is refused.
alter table calls add column config_served_at timestamptz;
