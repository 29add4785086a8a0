-- Agent-test conversations that spent the platform's keys (or its local model), per organisation and UTC day:
-- AGENT_TEST_PLATFORM_DAILY_CONVERSATIONS caps them (agent-tests/platform-spend.ts). An organisation with its own
-- provider credentials is not counted.
create table agent_test_platform_usage (
  org_id uuid not null references orgs (id) on delete cascade,
  day date not null,
  conversations integer not null default 0,
  primary key (org_id, day)
);
