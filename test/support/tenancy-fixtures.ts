// What the tenant-isolation test (test/tenancy.test.ts) needs to reach every route with another org's ids:
//  - `fixtures`: for each path parameter name, how to create such a resource in org A (through the API);
//    `get` resolves other parameters a resource depends on (for nested paths).
//  - `sampleBodies`: a valid body per operationId, for routes whose body has required fields (validation runs
//    before the lookup, so an invalid body would answer 422 instead of the 404 under test).
// Every new route with a path parameter or a required body must be covered here; the test fails otherwise.
import type { TestPlatform } from './platform.ts';

export interface FixtureContext {
  tp: TestPlatform;
  key: string;
  orgId: string;
  get(param: string): Promise<string>;
}

export type Fixture = (c: FixtureContext) => Promise<string>;

async function created(c: FixtureContext, path: string, body: unknown, field = 'id'): Promise<string> {
  const res = await c.tp.request('post', path, { key: c.key, body });
  if (res.status >= 300) throw new Error(`fixture POST ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body[field] as string;
}

export const fixtures: Record<string, Fixture> = {
  webhook_id: (c) => created(c, '/v1/webhooks', { name: 'tenancy', url: 'https://hooks.example.com/tenancy', events: ['*'] }),
  // A delivery attempt of the webhook fixture, as the delivery worker records one (its event kept).
  delivery_id: async (c) => {
    const webhookId = await c.get('webhook_id');
    const [row] = await c.tp.sql<{ id: string }[]>`
      with e as (
        insert into events (id, org_id, type, payload) values (gen_random_uuid(), ${c.orgId}, 'call.ended', '{"event":"call.ended"}') returning id
      )
      insert into webhook_deliveries (org_id, webhook_id, event_id, event, url, status, attempt, duration_ms, completed_at, created_at)
      select ${c.orgId}, ${webhookId}, e.id, 'call.ended', 'https://hooks.example.com/tenancy', 'failed', 1, 10, now(), now() from e
      returning id`;
    return row!.id;
  },
  model_id: (c) => created(c, '/v1/models', { name: 'tenancy', model: 'gpt-4o-mini' }),
  tool_id: (c) => created(c, '/v1/tools', { type: 'function', name: 'tenancy', url: 'https://example.com/tool' }),
  agent_id: async (c) => created(c, '/v1/agents', { name: 'tenancy', llm_id: await c.get('model_id') }),
  api_key_id: (c) => created(c, '/v1/api-keys', { name: 'tenancy' }),
  // Without a LiveKit server the creation answers 503 but the call record exists (failed): its id is enough.
  call_id: async (c) => {
    const res = await c.tp.request('post', '/v1/calls/web', { key: c.key, body: { agent_id: await c.get('agent_id') } });
    const id = res.body.id ?? res.body.call_id;
    if (!id) throw new Error(`fixture POST /v1/calls/web answered ${res.status}: ${JSON.stringify(res.body)}`);
    return id as string;
  },
  credential_id: (c) => created(c, '/v1/integrations', { name: 'tenancy', provider: 'openai', api_key: 'sk-tenancy-0123456789abcdef' }),
  // Knowledge bases
  kb_id: (c) => created(c, '/v1/knowledge-bases', { name: 'tenancy' }, 'kb_id'),
  source_id: async (c) => (await addTextSource(c, await c.get('kb_id'))).source.source_id as string,
  job_id: async (c) => (await addTextSource(c, await c.get('kb_id'))).job.job_id as string,
  // Buying a number wires LiveKit SIP trunks, which this platform has no server for: the fixture is the row a
  // completed purchase leaves (wired, active), so every phone-number route is reached with a real id.
  phone_number_id: async (c) => {
    const agentId = await c.get('agent_id');
    const number = `+1415555${String(Math.floor(Math.random() * 10000)).padStart(4, '0')}`;
    const [row] = await c.tp.sql<{ id: string }[]>`
      insert into phone_numbers (org_id, phone_number, provider, agent_id, status, wiring_state, country)
      values (${c.orgId}, ${number}, 'simulated', ${agentId}, 'active', 'wired', 'US')
      returning id`;
    return row!.id;
  },
  // Agent tests
  scenario_id: (c) => created(c, '/v1/test-scenarios', { name: 'tenancy', script: [{ say: 'Hello?' }] }),
  suite_id: async (c) => created(c, '/v1/test-suites', { name: 'tenancy', agent_id: await c.get('agent_id'), scenario_ids: [await c.get('scenario_id')] }),
  test_run_id: async (c) => created(c, `/v1/agents/${await c.get('agent_id')}/test-runs`, { scenario_ids: [await c.get('scenario_id')] }),
  // A campaign needs a caller ID that can place calls (an outbound trunk), which the phone-number fixture lacks.
  campaign_id: async (c) => {
    const agentId = await c.get('agent_id');
    const number = `+1415555${String(Math.floor(Math.random() * 10000)).padStart(4, '0')}`;
    await c.tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
                   values (${c.orgId}, ${number}, 'simulated', ${agentId}, 'ST_tenancy')`;
    return created(c, '/v1/campaigns', { name: 'tenancy', agent_id: agentId, from_number: number, contacts: [{ to_number: '+15550100001' }], schedule: { start_at: new Date(Date.now() + 86400_000).toISOString() } });
  },
  squad_id: async (c) => {
    const agentId = await c.get('agent_id');
    return created(c, '/v1/squads', { name: 'tenancy', agent_ids: [agentId], entry_agent_id: agentId });
  },
  entry_id: (c) => created(c, '/v1/do-not-call', { phone_number: '+15550100002' }),
  // A version number of organisation A's agent (version 1 exists from its creation).
  version: async (c) => {
    await c.get('agent_id');
    return '1';
  },
  publishable_key_id: (c) =>
    created(c, '/v1/publishable-keys', { name: 'tenancy', allowed_origins: ['https://tenancy.example.com'], scopes: ['voices:read'] }),
};

export const sampleBodies: Record<string, unknown> = {
  createApiKey: { name: 'tenancy' },
  updateCall: { outcome: 'tenancy' },
  rollbackAgent: { version: 1 },
  controlCall: { action: 'mute_agent' },
};

/** Adds a text source (multipart) to a knowledge base of the fixture's org. */
async function addTextSource(c: FixtureContext, kbId: string): Promise<{ source: Record<string, string>; job: Record<string, string> }> {
  const form = new FormData();
  form.append('type', 'text');
  form.append('text', 'Tenancy fixture text.');
  const res = await fetch(`${c.tp.url}/v1/knowledge-bases/${kbId}/sources`, { method: 'POST', headers: { authorization: `Bearer ${c.key}` }, body: form });
  const body = (await res.json()) as { source: Record<string, string>; job: Record<string, string> };
  if (res.status !== 201) throw new Error(`fixture add source answered ${res.status}: ${JSON.stringify(body)}`);
  return body;
}

export { created };
