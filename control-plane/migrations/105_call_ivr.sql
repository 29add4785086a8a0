-- Phone-menu navigation on outbound calls (POST /v1/calls `ivr_goal`, `ivr.max_menus`): what the agent is to
-- reach through a callee's phone menu, and after how many menus it gives up. Null: no navigation. The API
-- validates both (1-500 characters, 1-20 menus); nullable columns without defaults are added without a rewrite.
alter table calls add column ivr_goal text;
alter table calls add column ivr_max_menus smallint;
