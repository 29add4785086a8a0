// The workspace: name and settings through the API, limits read-only there and set by the admin command.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { commands, UsageError } from '../../admin.ts';
import { canonicalTimeZone } from './routes.ts';
import { insertBareAgent } from '../../../../test/support/bare-agent.ts';

let tp: TestPlatform;
let key: string;
let orgId: string;
let other: { orgId: string; key: string };

beforeAll(async () => {
  tp = await usePlatform();
  ({ key, orgId } = await tp.createOrg('Acme'));
  other = await tp.createOrg('Other');
});

const patch = (body: unknown, k = key) => tp.request('patch', '/v1/workspace', { key: k, body });
const auditOf = (org: string, action: string) =>
  tp.sql<{ actor_type: string; actor_id: string | null; resource_id: string; details: Record<string, unknown> }[]>`
    select actor_type, actor_id, resource_id, details from audit_events where org_id = ${org} and action = ${action} order by created_at`;
const webhookOf = async (org: string) =>
  (await tp.sql<{ id: string }[]>`insert into webhooks (org_id, name, url) values (${org}, 'hook', 'https://example.com/hook') returning id`)[0]!.id;

async function agentOf(org: string): Promise<string> {
  return insertBareAgent(tp.sql, org);
}

describe('time zones', () => {
  it('accepts IANA names in their canonical form and refuses offsets and unknown names', () => {
    expect(canonicalTimeZone('UTC')).toBe('UTC');
    expect(canonicalTimeZone('europe/paris')).toBe('Europe/Paris');
    expect(canonicalTimeZone('US/Eastern')).toBe('America/New_York');
    expect(canonicalTimeZone('Etc/GMT+1')).toBe('Etc/GMT+1');
    expect(canonicalTimeZone('+01:00')).toBeNull();
    expect(canonicalTimeZone('Mars/Olympus_Mons')).toBeNull();
  });
});

describe('GET /v1/workspace', () => {
  it("answers the caller's organisation with default settings and limits", async () => {
    const res = await tp.request('get', '/v1/workspace', { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: orgId,
      name: 'Acme',
      settings: {
        timezone: 'UTC',
        default_webhook_id: null,
        default_agent_id: null,
        destination_policy: { allowed_countries: null, blocked_number_types: ['premium_rate', 'shared_cost', 'satellite', 'unknown'], allowed_sip_hosts: [] },
        data_retention: 'everything',
        retain_days: null,
      },
      limits: {
        max_calls_per_day: 1000,
        kb_token_budget: 1000000,
        max_concurrent_calls: 10,
        daily_spend_cap_cents: 10000,
        destination_extra_countries: [],
        destination_unblockable_types: [],
      },
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const theirs = await tp.request('get', '/v1/workspace', { key: other.key });
    expect(theirs.body).toMatchObject({ id: other.orgId, name: 'Other' });
  });
});

describe('PATCH /v1/workspace', () => {
  it('renames and changes settings; only the settings given change; audited', async () => {
    const org = await tp.createOrg('Renamer');
    const hook = await webhookOf(org.orgId);
    const first = await patch({ name: 'Renamed Inc.', settings: { timezone: 'europe/paris', default_webhook_id: hook } }, org.key);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      id: org.orgId,
      name: 'Renamed Inc.',
      settings: { timezone: 'Europe/Paris', default_webhook_id: hook, default_agent_id: null },
      limits: { max_calls_per_day: 1000 },
    });
    const second = await patch({ settings: { timezone: 'America/New_York' } }, org.key);
    expect(second.body.settings).toMatchObject({ timezone: 'America/New_York', default_webhook_id: hook, default_agent_id: null });
    expect(second.body.name).toBe('Renamed Inc.');
    const cleared = await patch({ settings: { default_webhook_id: null } }, org.key);
    expect(cleared.body.settings.default_webhook_id).toBeNull();
    expect((await tp.request('get', '/v1/workspace', { key: org.key })).body).toEqual(cleared.body);

    const audit = await auditOf(org.orgId, 'workspace.update');
    expect(audit.map((a) => [a.actor_type, a.resource_id, a.details])).toEqual([
      ['api_key', org.orgId, { name: 'Renamed Inc.', settings: { timezone: 'Europe/Paris', default_webhook_id: hook } }],
      ['api_key', org.orgId, { settings: { timezone: 'America/New_York' } }],
      ['api_key', org.orgId, { settings: { default_webhook_id: null } }],
    ]);
  });

  it('a deleted webhook stops being the default', async () => {
    const org = await tp.createOrg('Hooks');
    const hook = await webhookOf(org.orgId);
    await patch({ settings: { default_webhook_id: hook } }, org.key);
    await tp.sql`delete from webhooks where id = ${hook}`;
    expect((await tp.request('get', '/v1/workspace', { key: org.key })).body.settings.default_webhook_id).toBeNull();
  });

  it('sets the default agent; a deleted agent stops being the default', async () => {
    const org = await tp.createOrg('Agents');
    const agent = await agentOf(org.orgId);
    const res = await patch({ settings: { default_agent_id: agent } }, org.key);
    expect(res.status).toBe(200);
    expect(res.body.settings.default_agent_id).toBe(agent);
    await tp.sql`update agents set deleted_at = now() where id = ${agent}`;
    expect((await tp.request('get', '/v1/workspace', { key: org.key })).body.settings.default_agent_id).toBeNull();
    const again = await patch({ settings: { default_agent_id: agent } }, org.key);
    expect(again.body.detail).toEqual([
      { type: 'reference_not_found', loc: ['body', 'settings', 'default_agent_id'], msg: 'No agent with this id in your organisation', input: agent },
    ]);
  });

  it('422: limits are read-only', async () => {
    const res = await patch({ limits: { max_calls_per_day: 1_000_000 } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          type: 'read_only',
          loc: ['body', 'limits'],
          msg: 'Limits are read-only; the platform operator changes them',
          input: { max_calls_per_day: 1_000_000 },
        },
      ],
    });
    expect((await tp.request('get', '/v1/workspace', { key })).body.limits.max_calls_per_day).toBe(1000);
  });

  it('422: unknown time zone', async () => {
    const res = await patch({ settings: { timezone: 'Mars/Olympus_Mons' } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          type: 'timezone',
          loc: ['body', 'settings', 'timezone'],
          msg: 'Input should be an IANA time zone name, such as "Europe/Paris" or "UTC"',
          input: 'Mars/Olympus_Mons',
        },
      ],
    });
    const offset = await patch({ settings: { timezone: '+01:00' } });
    expect(offset.body.detail[0]).toMatchObject({ type: 'timezone', input: '+01:00' });
  });

  it("422: another organisation's webhook or agent, or one that does not exist", async () => {
    const theirHook = await webhookOf(other.orgId);
    const agent = await agentOf(other.orgId);
    const res = await patch({ settings: { default_webhook_id: theirHook, default_agent_id: agent } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: 'reference_not_found', loc: ['body', 'settings', 'default_webhook_id'], msg: 'No webhook with this id in your organisation', input: theirHook },
        { type: 'reference_not_found', loc: ['body', 'settings', 'default_agent_id'], msg: 'No agent with this id in your organisation', input: agent },
      ],
    });
    const missing = randomUUID();
    const both = await patch({ settings: { timezone: 'Nowhere/Land', default_agent_id: missing } });
    expect(both.body.detail.map((d: { type: string; loc: unknown[] }) => [d.type, d.loc])).toEqual([
      ['timezone', ['body', 'settings', 'timezone']],
      ['reference_not_found', ['body', 'settings', 'default_agent_id']],
    ]);
  });

  it('422: schema errors have the exact body', async () => {
    const res = await patch({ name: '', colour: 'red', settings: { timezone: 5, default_agent_id: 'x', theme: 'dark' } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: 'extra_forbidden', loc: ['body', 'colour'], msg: 'Extra inputs are not permitted', input: 'red' },
        { type: 'string_too_short', loc: ['body', 'name'], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } },
        { type: 'extra_forbidden', loc: ['body', 'settings', 'theme'], msg: 'Extra inputs are not permitted', input: 'dark' },
        { type: 'string_type', loc: ['body', 'settings', 'timezone'], msg: 'Input should be a valid string', input: 5 },
        { type: 'uuid_parsing', loc: ['body', 'settings', 'default_agent_id'], msg: 'Input should be a valid UUID', input: 'x' },
      ],
    });
  });
});

describe('admin set-limits', () => {
  const setLimits = (args: string[]) => commands['set-limits']!.run(tp.sql, args);

  it('changes only the limits given, is audited as the system, and shows in the workspace', async () => {
    const org = await tp.createOrg('Limited');
    const out = await setLimits(['--org', org.orgId, '--max-calls-per-day', '50', '--max-concurrent-calls', '2']);
    expect(out).toEqual({
      org_id: org.orgId,
      limits: { max_calls_per_day: 50, kb_token_budget: 1000000, max_concurrent_calls: 2, daily_spend_cap_cents: 10000 },
      previous: { max_calls_per_day: 1000, kb_token_budget: 1000000, max_concurrent_calls: 10, daily_spend_cap_cents: 10000 },
    });
    const ws = await tp.request('get', '/v1/workspace', { key: org.key });
    expect(ws.body.limits).toEqual({
      max_calls_per_day: 50,
      kb_token_budget: 1000000,
      max_concurrent_calls: 2,
      daily_spend_cap_cents: 10000,
      destination_extra_countries: [],
      destination_unblockable_types: [],
    });
    await setLimits(['--org', org.orgId, '--kb-token-budget', '0']);
    expect((await tp.request('get', '/v1/workspace', { key: org.key })).body.limits.kb_token_budget).toBe(0);

    const audit = await auditOf(org.orgId, 'org.set_limits');
    expect(audit.map((a) => [a.actor_type, a.actor_id, a.resource_id, a.details])).toEqual([
      [
        'system',
        null,
        org.orgId,
        {
          limits: { max_calls_per_day: 50, max_concurrent_calls: 2 },
          previous: { max_calls_per_day: 1000, kb_token_budget: 1000000, max_concurrent_calls: 10, daily_spend_cap_cents: 10000 },
        },
      ],
      [
        'system',
        null,
        org.orgId,
        { limits: { kb_token_budget: 0 }, previous: { max_calls_per_day: 50, kb_token_budget: 1000000, max_concurrent_calls: 2, daily_spend_cap_cents: 10000 } },
      ],
    ]);
  });

  it('refuses bad input with a usage error and changes nothing', async () => {
    const org = await tp.createOrg('Untouched');
    for (const args of [
      ['--max-calls-per-day', '5'],
      ['--org', 'not-a-uuid', '--max-calls-per-day', '5'],
      ['--org', org.orgId],
      ['--org', org.orgId, '--max-calls-per-day', '1.5'],
      ['--org', org.orgId, '--kb-token-budget', 'lots'],
      ['--org', org.orgId, '--max-concurrent-calls', '2147483648'],
      ['--org', org.orgId, '--daily-spend-cap-cents', '12abc'],
      ['--org', randomUUID(), '--max-calls-per-day', '5'],
    ]) {
      await expect(setLimits(args), args.join(' ')).rejects.toBeInstanceOf(UsageError);
    }
    await expect(setLimits(['--org', org.orgId, '--max-calls', '5'])).rejects.toMatchObject({ code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION' });
    expect((await tp.request('get', '/v1/workspace', { key: org.key })).body.limits).toEqual({
      max_calls_per_day: 1000,
      kb_token_budget: 1000000,
      max_concurrent_calls: 10,
      daily_spend_cap_cents: 10000,
      destination_extra_countries: [],
      destination_unblockable_types: [],
    });
  });
});
