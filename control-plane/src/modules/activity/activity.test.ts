// GET /v1/activity/summary: the spec's shape, the window rules, the counts and the error signals, each
// seeded through the API or as the records the platform itself stores.
import { describe, expect, it, beforeAll } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { ActivitySummary } from '../../../../schemas/activity.ts';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (a: Ajv2020) => Ajv2020;
const ajv = addFormats(new Ajv2020({ strict: false }));
const validSummary = ajv.compile(ActivitySummary);

let tp: TestPlatform;
let org: { orgId: string; key: string };
let other: { orgId: string; key: string };
let agentId: string;
let kbId: string;
let erroredSourceId: string;

const get = (query = '', key = org.key) => tp.request('get', `/v1/activity/summary${query}`, { key });

beforeAll(async () => {
  tp = await usePlatform();
  org = await tp.createOrg('Activity Org');
  other = await tp.createOrg('Other Org');
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'gpt-4o-mini' } });
  const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'a', llm_id: model.body.id } });
  agentId = agent.body.id;
  await tp.request('post', '/v1/tools', { key: org.key, body: { type: 'function', name: 'lookup', url: 'https://example.com/tool' } });
  await tp.request('post', '/v1/integrations', { key: org.key, body: { name: 'oa', provider: 'openai', api_key: 'sk-test-0123456789abcdef' } });
  // Calls as the platform stores them: two in the window (one failed, one completed with an outcome and a
  // failed analysis), one 40 days old (outside the default window).
  await tp.sql`
    insert into calls (org_id, agent_id, type, status, end_reason, outcome, analysis_status, created_at) values
      (${org.orgId}, ${agentId}, 'web', 'completed', 'api_stop', 'booked', 'failed', now() - interval '1 day'),
      (${org.orgId}, ${agentId}, 'web', 'failed', 'dispatch_timeout', null, 'skipped', now() - interval '2 days'),
      (${org.orgId}, ${agentId}, 'web', 'completed', 'caller_hangup', 'booked', 'completed', now() - interval '40 days')`;
  const hook = await tp.request('post', '/v1/webhooks', { key: org.key, body: { name: 'h', url: 'https://hooks.example.com/x', events: ['*'] } });
  await tp.sql`
    insert into webhook_deliveries (org_id, webhook_id, event_id, event, url, status, attempt, duration_ms, completed_at, created_at) values
      (${org.orgId}, ${hook.body.id}, gen_random_uuid(), 'call.ended', 'https://hooks.example.com/x', 'retrying', 1, 10, now(), now()),
      (${org.orgId}, ${hook.body.id}, gen_random_uuid(), 'call.ended', 'https://hooks.example.com/x', 'failed', 8, 10, now(), now()),
      (${org.orgId}, ${hook.body.id}, gen_random_uuid(), 'call.ended', 'https://hooks.example.com/x', 'succeeded', 1, 10, now(), now())`;
  await tp.sql`update webhooks set status = 'inactive', disabled_at = now(), disabled_reason = 'failing' where id = ${hook.body.id}`;
  // A knowledge base with one source in error and one ingested.
  const [kb] = await tp.sql`insert into knowledge_bases (org_id, name) values (${org.orgId}, 'docs') returning id`;
  kbId = kb!.id;
  const [src] = await tp.sql`insert into knowledge_sources (org_id, kb_id, type, source, status, error_message) values
    (${org.orgId}, ${kbId}, 'url', 'https://docs.example.com/missing', 'error', 'HTTP 404 from https://docs.example.com/missing') returning id`;
  erroredSourceId = src!.id;
  await tp.sql`insert into knowledge_sources (org_id, kb_id, type, source, status) values (${org.orgId}, ${kbId}, 'url', 'https://docs.example.com/', 'ready')`;
});

describe('GET /v1/activity/summary', () => {
  it('answers exactly the spec shape with the default 30-day window', async () => {
    const res = await get();
    expect(res.status).toBe(200);
    expect(validSummary(res.body), JSON.stringify(validSummary.errors)).toBe(true);
    const b = res.body;
    expect(b.org_id).toBe(org.orgId);
    expect(b.org_name).toBe('Activity Org');
    expect(Date.parse(b.signup_date)).not.toBeNaN();
    const span = Date.parse(b.window.until) - Date.parse(b.window.since);
    expect(span).toBe(30 * 86_400_000);
  });

  it('counts lifetime resources, and calls by status, outcome and end reason within the window', async () => {
    const { body: b } = await get();
    expect(b.resource_counts).toEqual({ users: 0, api_keys: 1, agents: 1, calls: 3, phone_numbers: 0, knowledge_bases: 1, tools: 1, credentials: 1 });
    expect(b.call_summary.total).toBe(2);
    expect(b.call_summary.by_status).toEqual([
      { value: 'completed', count: 1 },
      { value: 'failed', count: 1 },
    ]);
    expect(b.call_summary.by_outcome).toEqual([{ value: 'booked', count: 1 }]);
    expect(b.call_summary.by_end_reason).toEqual([
      { value: 'api_stop', count: 1 },
      { value: 'dispatch_timeout', count: 1 },
    ]);
    // A wider window takes in the old call.
    const wide = await get(`?since=${encodeURIComponent(new Date(Date.now() - 60 * 86_400_000).toISOString())}`);
    expect(wide.body.call_summary.total).toBe(3);
    expect(wide.body.call_summary.by_outcome).toEqual([{ value: 'booked', count: 2 }]);
  });

  it('groups the audit log of the window', async () => {
    const { body: b } = await get();
    const byKey = Object.fromEntries(b.audit_actions.map((a: { action: string; resource_type: string; count: number }) => [`${a.action}/${a.resource_type}`, a.count]));
    expect(byKey['agent.create/agent']).toBe(1);
    expect(byKey['tool.create/tool']).toBe(1);
    expect(byKey['webhook.create/webhook']).toBe(1);
    const empty = await get(`?until=${encodeURIComponent(new Date(Date.now() - 86_400_000).toISOString())}`);
    expect(empty.body.audit_actions).toEqual([]);
  });

  it('reports error signals from stored records', async () => {
    const { body: b } = await get();
    expect(b.error_signals).toEqual({
      calls_ended_in_error: 1,
      kb_sources_errored: [{ knowledge_base_id: kbId, source_id: erroredSourceId, error_message: 'HTTP 404 from https://docs.example.com/missing' }],
      webhook_deliveries_failed: 2,
      webhooks_disabled: 1,
      analyses_failed: 1,
    });
  });

  it('is scoped to the calling organisation', async () => {
    const { body: b } = await get('', other.key);
    expect(b.org_id).toBe(other.orgId);
    expect(b.resource_counts.calls).toBe(0);
    expect(b.call_summary).toEqual({ total: 0, by_status: [], by_outcome: [], by_end_reason: [] });
    expect(b.error_signals.webhook_deliveries_failed).toBe(0);
  });

  it('defaults since to 30 days before until (before now when until is absent), so until alone in the past is a window', async () => {
    const before = Date.now();
    const until = new Date(before - 10 * 86_400_000).toISOString();
    const res = await get(`?until=${encodeURIComponent(until)}`);
    expect(res.status).toBe(200);
    expect(res.body.window).toEqual({ since: new Date(Date.parse(until) - 30 * 86_400_000).toISOString(), until });
    // until alone, further back than 30 days, is a window like any other, not a 422.
    const oldUntil = new Date(before - 40 * 86_400_000).toISOString();
    const old = await get(`?until=${encodeURIComponent(oldUntil)}`);
    expect(old.status).toBe(200);
    expect(old.body.window).toEqual({ since: new Date(Date.parse(oldUntil) - 30 * 86_400_000).toISOString(), until: oldUntil });
    // No bounds: the spec's default, 30 days before now.
    const plain = await get('');
    expect(Date.parse(plain.body.window.until) - Date.parse(plain.body.window.since)).toBe(30 * 86_400_000);
    expect(Date.parse(plain.body.window.until)).toBeGreaterThanOrEqual(before);
  });

  it('rejects malformed bounds and an inverted window with 422 on the parameter', async () => {
    const bad = await get('?since=yesterday');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['query', 'since'], type: 'datetime_parsing' });
    const badUntil = await get('?until=2026-02-30T00:00:00Z');
    expect(badUntil.status).toBe(422);
    expect(badUntil.body.detail[0].loc).toEqual(['query', 'until']);
    const inverted = await get('?since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z');
    expect(inverted.status).toBe(422);
    expect(inverted.body.detail).toEqual([expect.objectContaining({ loc: ['query', 'since'], type: 'value_error' })]);
    const future = await get(`?since=${encodeURIComponent(new Date(Date.now() + 86_400_000).toISOString())}`);
    expect(future.status).toBe(422);
    expect(future.body.detail[0].loc).toEqual(['query', 'since']);
    const explicit = await get('?since=2026-03-01T00:00:00Z&until=2026-03-02T00:00:00Z');
    expect(explicit.status).toBe(200);
    expect(explicit.body.window).toEqual({ since: '2026-03-01T00:00:00.000Z', until: '2026-03-02T00:00:00.000Z' });
  });

  it('needs a credential', async () => {
    expect((await tp.request('get', '/v1/activity/summary')).status).toBe(401);
  });
});
