// The agents API tests' fixture (agents*.test.ts): the platform, two orgs, two models, and their helpers. Importing
// this module registers the beforeAll that builds them in the importing test file; the exported bindings are live.
import { beforeAll } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';

export let tp: TestPlatform;
export let key: string;
export let orgId: string;
export let other: { orgId: string; key: string };
export let llmId: string;
export let bareLlmId: string;

beforeAll(async () => {
  tp = await usePlatform();
  ({ key, orgId } = await tp.createOrg('agents'));
  other = await tp.createOrg('other');
  llmId = (await tp.request('post', '/v1/models', { key, body: { name: 'Support', model: 'gpt-4o-mini', system_prompt: 'Answer for {{company}}. Be brief.' } }))
    .body.id;
  bareLlmId = (await tp.request('post', '/v1/models', { key, body: { name: 'Bare', model: 'gpt-4o-mini' } })).body.id;
});

export const create = (body: Record<string, unknown>, k = key) => tp.request('post', '/v1/agents', { key: k, body });
export const patch = (id: string, body: Record<string, unknown>, k = key) => tp.request('patch', `/v1/agents/${id}`, { key: k, body });
export const auditOf = (resourceId: string) =>
  tp.sql<{ action: string; details: Record<string, unknown> }[]>`
    select action, details from audit_events where resource_id = ${resourceId} order by created_at, id`;
export const webhook = async (org: string) =>
  (await tp.sql<{ id: string }[]>`insert into webhooks (org_id, name, url) values (${org}, 'hook', 'https://example.com/hook') returning id`)[0]!.id;
