// Toll fraud: a tenant (or whoever holds its key, or talks its agent into a transfer) must not ring premium-rate,
// shared-cost or satellite numbers, numbers no one can classify, or countries the org does not call, and must
// not run up carrier cost past its daily cap. Real numbers of each type, through the real POST /v1/calls, the
// real session config of the worker and its transfer_call tool, the rate table and the spend cap.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llm } from '@livekit/agents';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { checkDestination, classifyNumber, DEFAULT_BLOCKED_NUMBER_TYPES, type DestinationPolicy } from '../../shared/destination-policy.ts';
import { buildTools } from '../../media-worker/src/session/tools.ts';
import { InternalApiClient } from '../../shared/internal-api.ts';
import { mintCapability } from '../../control-plane/src/modules/calls/capability.ts';
import { carrierFor, setCarrier } from '../../control-plane/src/modules/phone-numbers/carriers/index.ts';
import { lookupRate, parseRateTable, rateTableFor } from '../../control-plane/src/modules/phone-numbers/rates.ts';
import { dialCall } from '../../control-plane/src/modules/calls/dial.ts';
import { spendTodayCents } from '../../control-plane/src/modules/calls/queries-admission.ts';
import { commands } from '../../control-plane/src/admin.ts';

// Real numbers, one or two of each type (libphonenumber's metadata, and the ITU's satellite codes).
const PREMIUM_UK = '+449098790000'; // 09 premium-rate service, United Kingdom
const PREMIUM_US = '+19005551234'; // 1-900, United States
const SHARED_COST_ES = '+34901123456'; // 901 tarificación compartida, Spain
const SHARED_COST_CH = '+41840123456'; // 0840 shared cost, Switzerland
const SATELLITE_IRIDIUM = '+881612345678'; // +881 6 global mobile satellite system (Iridium)
const SATELLITE_INMARSAT = '+870772001899'; // +870 Inmarsat
const INVALID_UK = '+4470123456789'; // too long for a UK number
const UNASSIGNED_CODE = '+99912345678'; // +999 is no country's code
const FIXED_UK = '+442071234567'; // London fixed line
const MOBILE_UK = '+447400123456'; // UK mobile
const FIXED_OR_MOBILE_US = '+12127365000'; // New York
const FICTIONAL_US = '+15550001111'; // the simulated carrier's fiction (area code 555)

const FROM = '+14155550142';

let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;
let rateDir: string;

async function agentOf(orgId: string, toolIds: string[] = []): Promise<string> {
  const [model] = await tp.sql<{ id: string }[]>`
    insert into llm_models (org_id, name, provider, model, temperature, tool_ids) values (${orgId}, 'm', 'openai', 'gpt-4o-mini', 0.7, ${toolIds}) returning id`;
  const [agent] = await tp.sql<{ id: string }[]>`
    insert into agents (org_id, name, llm_id, transcriber, tts)
    values (${orgId}, 'a', ${model!.id}, '{"provider": "local", "model": "pocketsphinx", "language": "en-US"}',
            '{"provider": "local", "voice_id": "en-us", "model": "espeak-ng"}')
    returning id`;
  return agent!.id;
}

const create = (to: string, extra: Record<string, unknown> = {}, key = org.key) =>
  tp.request('post', '/v1/calls', { key, body: { agent_id: agentId, to_number: to, ...extra } });
const setPolicy = (policy: Record<string, unknown>, key = org.key) => tp.request('patch', '/v1/workspace', { key, body: { settings: { destination_policy: policy } } });
const callsTo = (orgId: string, to: string) => tp.sql`select id from calls where org_id = ${orgId} and to_number = ${to}`;

beforeAll(async () => {
  // The operator's rate table (RATE_TABLE_PATH) replaces the committed one.
  rateDir = mkdtempSync(path.join(tmpdir(), 'vap-rates-'));
  const rates = path.join(rateDir, 'rates.csv');
  writeFileSync(
    rates,
    ['# test rates', 'simulated,outbound,+1,5', 'simulated,outbound,+1555,3', 'simulated,outbound,+15550001,7', '*,outbound,+44,9', 'simulated,outbound,+447,11', ''].join('\n'),
  );
  tp = await usePlatform({ JOBS_ENABLED: false, RATE_TABLE_PATH: rates } as never);
  org = await tp.createOrg('toll');
  // Queued calls are live calls: room for the many this file creates.
  await commands['set-limits']!.run(tp.sql, ['--org', org.orgId, '--max-concurrent-calls', '100']);
  agentId = await agentOf(org.orgId);
  await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
               values (${org.orgId}, ${FROM}, 'simulated', ${agentId}, 'ST_toll')`;
});

afterAll(() => rmSync(rateDir, { recursive: true, force: true }));

describe('number types, from real numbers', () => {
  it('classifies each type as libphonenumber (max metadata) and the satellite codes say', () => {
    expect(classifyNumber(PREMIUM_UK)).toEqual({ country: 'GB', type: 'premium_rate' });
    expect(classifyNumber(PREMIUM_US)).toEqual({ country: 'US', type: 'premium_rate' });
    expect(classifyNumber(SHARED_COST_ES)).toEqual({ country: 'ES', type: 'shared_cost' });
    expect(classifyNumber(SHARED_COST_CH)).toEqual({ country: 'CH', type: 'shared_cost' });
    expect(classifyNumber(SATELLITE_IRIDIUM)).toEqual({ country: '001', type: 'satellite' });
    expect(classifyNumber(SATELLITE_INMARSAT)).toEqual({ country: '001', type: 'satellite' });
    expect(classifyNumber(INVALID_UK).type).toBe('unknown');
    expect(classifyNumber(UNASSIGNED_CODE)).toEqual({ country: null, type: 'unknown' });
    expect(classifyNumber(FIXED_UK)).toEqual({ country: 'GB', type: 'fixed_line' });
    expect(classifyNumber(MOBILE_UK)).toEqual({ country: 'GB', type: 'mobile' });
    expect(classifyNumber(FIXED_OR_MOBILE_US)).toEqual({ country: 'US', type: 'fixed_line_or_mobile' });
    // Fiction is a fixed line only where the simulated carrier places the calls.
    expect(classifyNumber(FICTIONAL_US)).toEqual({ country: null, type: 'unknown' });
    expect(classifyNumber(FICTIONAL_US, { fictional: true })).toEqual({ country: 'US', type: 'fixed_line' });
    expect(classifyNumber('+14165550142', { fictional: true })).toEqual({ country: 'CA', type: 'fixed_line' });
    expect(classifyNumber('+442079460123', { fictional: true })).toEqual({ country: 'GB', type: 'fixed_line' });
  });

  it('decides: blocked types first, then countries; sip: by host', () => {
    const policy: DestinationPolicy = { allowed_countries: ['US', 'GB'], blocked_number_types: [...DEFAULT_BLOCKED_NUMBER_TYPES], allowed_sip_hosts: ['pbx.acme.example', '*.acme.example'], fictional_numbers: false };
    expect(checkDestination(policy, PREMIUM_UK)).toMatchObject({ ok: false, reason: 'number_type', type: 'premium_rate' });
    expect(checkDestination(policy, SHARED_COST_ES)).toMatchObject({ ok: false, reason: 'number_type', type: 'shared_cost' });
    expect(checkDestination(policy, SATELLITE_IRIDIUM)).toMatchObject({ ok: false, reason: 'number_type', type: 'satellite' });
    expect(checkDestination(policy, UNASSIGNED_CODE)).toMatchObject({ ok: false, reason: 'number_type', type: 'unknown' });
    expect(checkDestination(policy, '+33612345678')).toMatchObject({ ok: false, reason: 'country', country: 'FR' });
    expect(checkDestination(policy, MOBILE_UK)).toMatchObject({ ok: true, country: 'GB', type: 'mobile' });
    expect(checkDestination(policy, `tel:${FIXED_OR_MOBILE_US}`)).toMatchObject({ ok: true, country: 'US' });
    expect(checkDestination(policy, 'sip:desk@pbx.acme.example:5061;transport=tls')).toEqual({ ok: true, kind: 'sip', host: 'pbx.acme.example' });
    expect(checkDestination(policy, 'sip:desk@eu.pbx.ACME.example')).toMatchObject({ ok: true, host: 'eu.pbx.acme.example' });
    expect(checkDestination(policy, 'sip:+449098790000@sip.attacker.example')).toMatchObject({ ok: false, reason: 'sip_host', host: 'sip.attacker.example' });
    // A look-alike suffix is not a subdomain.
    expect(checkDestination(policy, 'sip:x@evilacme.example')).toMatchObject({ ok: false, reason: 'sip_host' });
    expect(checkDestination(policy, 'sip:x@pbx.acme.example.attacker.example')).toMatchObject({ ok: false, reason: 'sip_host' });
    expect(checkDestination(policy, 'nonsense')).toMatchObject({ ok: false, reason: 'invalid_destination' });
  });
});

describe('sip: destinations: the number in the user part, parameters and headers (issue 50, item 8)', () => {
  // pbx.example.com is allowed, so each refusal below is for the URI itself, not its host.
  const policy: DestinationPolicy = { allowed_countries: ['US'], blocked_number_types: [...DEFAULT_BLOCKED_NUMBER_TYPES], allowed_sip_hosts: ['pbx.example.com'], fictional_numbers: false };

  it('refuses a premium-rate number in the user part, with or without user=phone', () => {
    expect(checkDestination(policy, 'sip:+19005551234@pbx.example.com;user=phone')).toMatchObject({ ok: false, host: 'pbx.example.com' });
    expect(checkDestination(policy, 'sip:+19005551234@pbx.example.com')).toMatchObject({ ok: false, reason: 'number_type', type: 'premium_rate' });
    // Percent-encoded and with visual separators, the same number.
    expect(checkDestination(policy, 'sip:%2B1-900-555-1234@pbx.example.com')).toMatchObject({ ok: false, reason: 'number_type', type: 'premium_rate' });
  });

  it('refuses a satellite number at an allowed host', () => {
    expect(checkDestination(policy, 'sip:+881612345678@pbx.example.com')).toMatchObject({ ok: false, reason: 'number_type', type: 'satellite' });
    // A country the org does not call, too.
    expect(checkDestination(policy, 'sip:+442071234567@pbx.example.com')).toMatchObject({ ok: false, reason: 'country', country: 'GB' });
  });

  it('refuses maddr (the request sent to another host) and every parameter but transport', () => {
    expect(checkDestination(policy, 'sip:desk@pbx.example.com;maddr=203.0.113.9')).toMatchObject({ ok: false, reason: 'sip_uri', host: 'pbx.example.com' });
    expect(checkDestination(policy, 'sip:desk@pbx.example.com;transport=udp;maddr=sip.attacker.example')).toMatchObject({ ok: false, reason: 'sip_uri' });
    expect(checkDestination(policy, 'sip:desk@pbx.example.com;lr')).toMatchObject({ ok: false, reason: 'sip_uri' });
    expect(checkDestination(policy, 'sip:desk@pbx.example.com;transport=carrier-pigeon')).toMatchObject({ ok: false, reason: 'sip_uri' });
    expect(checkDestination(policy, 'sip:desk;x=1@pbx.example.com')).toMatchObject({ ok: false, reason: 'sip_uri' });
  });

  it('refuses headers (?Route=...)', () => {
    const d = checkDestination(policy, 'sip:desk@pbx.example.com?Route=%3Csip:sip.attacker.example;lr%3E');
    expect(d).toMatchObject({ ok: false, reason: 'sip_uri' });
    expect(!d.ok && d.message).toContain('headers');
    expect(checkDestination(policy, 'sip:desk@pbx.example.com;transport=tcp?X-Foo=1')).toMatchObject({ ok: false, reason: 'sip_uri' });
  });

  it('refuses a long dial string with no country code; allows extensions, names and allowed numbers', () => {
    expect(checkDestination(policy, 'sip:0119005551234@pbx.example.com')).toMatchObject({ ok: false, reason: 'invalid_destination' });
    expect(checkDestination(policy, 'sip:1001@pbx.example.com')).toEqual({ ok: true, kind: 'sip', host: 'pbx.example.com' });
    expect(checkDestination(policy, 'sip:desk@pbx.example.com:5061;transport=TLS')).toEqual({ ok: true, kind: 'sip', host: 'pbx.example.com' });
    expect(checkDestination(policy, 'sip:pbx.example.com')).toEqual({ ok: true, kind: 'sip', host: 'pbx.example.com' });
    expect(checkDestination(policy, 'sip:+12127365000@pbx.example.com')).toMatchObject({ ok: true, kind: 'sip', number: '+12127365000', country: 'US' });
  });
});

describe('POST /v1/calls: 422 with the reason', () => {
  it.each([
    ['premium-rate (UK 09)', PREMIUM_UK, 'number_type', 'premium_rate', 'premium-rate numbers'],
    ['premium-rate (US 900)', PREMIUM_US, 'number_type', 'premium_rate', 'premium-rate numbers'],
    ['shared-cost (ES 901)', SHARED_COST_ES, 'number_type', 'shared_cost', 'shared-cost numbers'],
    ['shared-cost (CH 0840)', SHARED_COST_CH, 'number_type', 'shared_cost', 'shared-cost numbers'],
    ['satellite (Iridium)', SATELLITE_IRIDIUM, 'number_type', 'satellite', 'satellite numbers'],
    ['satellite (Inmarsat)', SATELLITE_INMARSAT, 'number_type', 'satellite', 'satellite numbers'],
    ['invalid', INVALID_UK, 'number_type', 'unknown', 'invalid or unrecognised numbers'],
    ['unassigned country code', UNASSIGNED_CODE, 'number_type', 'unknown', 'invalid or unrecognised numbers'],
    ['a country the org has no number in (GB fixed line)', FIXED_UK, 'country', 'fixed_line', 'numbers in GB are not allowed'],
  ])('refuses %s and creates no call', async (_what, to, reason, type, words) => {
    const res = await create(to);
    expect(res.status).toBe(422);
    expect(res.body.detail).toHaveLength(1);
    expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'to_number'], type: 'destination_not_allowed', input: to, ctx: { reason, number_type: type } });
    expect(res.body.detail[0].msg).toContain(words);
    expect(await callsTo(org.orgId, to)).toHaveLength(0);
  });

  it("allows the org's own countries (default), the simulated carrier's fiction, and what the org opens up", async () => {
    expect((await create(FIXED_OR_MOBILE_US)).status).toBe(201);
    expect((await create(FICTIONAL_US)).status).toBe(201);
    // Refused calls took no daily slot: only the two above are counted.
    const [day] = await tp.sql<{ calls: number }[]>`select calls from org_daily_calls where org_id = ${org.orgId}`;
    expect(day!.calls).toBe(2);

    const other = await tp.createOrg('toll-open');
    const otherAgent = await agentOf(other.orgId);
    await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
                 values (${other.orgId}, '+14155550143', 'simulated', ${otherAgent}, 'ST_open')`;
    const as = (to: string) => tp.request('post', '/v1/calls', { key: other.key, body: { agent_id: otherAgent, to_number: to } });
    expect((await as(MOBILE_UK)).status).toBe(422);
    // Opening up past the org's own numbers' countries is the operator's (issue 50, item 3).
    await commands['set-destination-limits']!.run(tp.sql, ['--org', other.orgId, '--extra-countries', 'GB,001', '--unblockable-types', 'shared_cost,satellite,unknown']);
    const opened = await setPolicy({ allowed_countries: ['US', 'GB', '001'], blocked_number_types: ['premium_rate'] }, other.key);
    expect(opened.status).toBe(200);
    expect(opened.body.settings.destination_policy).toEqual({ allowed_countries: ['US', 'GB', '001'], blocked_number_types: ['premium_rate'], allowed_sip_hosts: [] });
    expect((await as(MOBILE_UK)).status).toBe(201);
    expect((await as(FIXED_UK)).status).toBe(201);
    expect((await as(SATELLITE_IRIDIUM)).status).toBe(201); // unblocked by the org, and 001 allowed
    expect((await as(PREMIUM_UK)).body.detail[0].ctx).toMatchObject({ reason: 'number_type', number_type: 'premium_rate' });
    // null restores the defaults.
    const reset = await setPolicy({ allowed_countries: null, blocked_number_types: null }, other.key);
    expect(reset.body.settings.destination_policy).toEqual({ allowed_countries: null, blocked_number_types: [...DEFAULT_BLOCKED_NUMBER_TYPES], allowed_sip_hosts: [] });
    expect((await as(MOBILE_UK)).status).toBe(422);
  });

  it('an API key cannot widen the policy past the operator\'s ceiling (issue 50, item 3)', async () => {
    const o = await tp.createOrg('toll-widen');
    const a = await agentOf(o.orgId);
    await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
                 values (${o.orgId}, '+14155550146', 'simulated', ${a}, 'ST_widen')`;
    const as = (to: string) => tp.request('post', '/v1/calls', { key: o.key, body: { agent_id: a, to_number: to } });
    // What a stolen key would do: every country, nothing blocked.
    const widen = await setPolicy({ allowed_countries: ['US', 'GB', '001'], blocked_number_types: [] }, o.key);
    expect(widen.status).toBe(422);
    expect(widen.body.detail).toEqual([
      expect.objectContaining({ type: 'operator_limit', loc: ['body', 'settings', 'destination_policy', 'allowed_countries', 1], input: 'GB' }),
      expect.objectContaining({ type: 'operator_limit', loc: ['body', 'settings', 'destination_policy', 'allowed_countries', 2], input: '001' }),
      expect.objectContaining({ type: 'operator_limit', loc: ['body', 'settings', 'destination_policy', 'blocked_number_types'] }),
    ]);
    expect(widen.body.detail[2].msg).toContain('premium_rate');
    expect((await setPolicy({ blocked_number_types: ['shared_cost', 'satellite', 'unknown'] }, o.key)).status).toBe(422);
    const ws = await tp.request('get', '/v1/workspace', { key: o.key });
    expect(ws.body.settings.destination_policy).toMatchObject({ allowed_countries: null, blocked_number_types: [...DEFAULT_BLOCKED_NUMBER_TYPES] });
    expect((await as(PREMIUM_US)).status).toBe(422);
    expect((await as(SATELLITE_IRIDIUM)).status).toBe(422);
    // Narrowing is the org's: blocking more, or a subset of its own countries.
    expect((await setPolicy({ allowed_countries: ['US'], blocked_number_types: [...DEFAULT_BLOCKED_NUMBER_TYPES, 'mobile'] }, o.key)).status).toBe(200);

    // A policy stored wide before the ceiling existed (or by hand) is cut back to it at every check.
    await tp.sql`update orgs set destination_allowed_countries = '{US,GB,001}', destination_blocked_number_types = '{}' where id = ${o.orgId}`;
    expect((await as(PREMIUM_US)).body.detail[0].ctx).toMatchObject({ reason: 'number_type', number_type: 'premium_rate' });
    expect((await as(SATELLITE_IRIDIUM)).body.detail[0].ctx).toMatchObject({ reason: 'number_type', number_type: 'satellite' });
    expect((await as(MOBILE_UK)).body.detail[0].ctx).toMatchObject({ reason: 'country' });
    expect(await callsTo(o.orgId, PREMIUM_US)).toHaveLength(0);

    // The operator's grant: audited, shown as a limit; the org then chooses within it.
    const granted = await commands['set-destination-limits']!.run(tp.sql, ['--org', o.orgId, '--extra-countries', 'gb', '--unblockable-types', 'unknown']);
    expect(granted).toMatchObject({ limits: { destination_extra_countries: ['GB'], destination_unblockable_types: ['unknown'] } });
    const [audit] = await tp.sql`select actor_type from audit_events where org_id = ${o.orgId} and action = 'org.set_destination_limits'`;
    expect(audit).toMatchObject({ actor_type: 'system' });
    expect((await tp.request('get', '/v1/workspace', { key: o.key })).body.limits).toMatchObject({ destination_extra_countries: ['GB'], destination_unblockable_types: ['unknown'] });
    expect((await as(MOBILE_UK)).status).toBe(201);
    expect((await as(PREMIUM_US)).status).toBe(422);
    await expect(commands['set-destination-limits']!.run(tp.sql, ['--org', o.orgId, '--unblockable-types', 'mobile'])).rejects.toThrow(/not one of/);
    await expect(commands['set-destination-limits']!.run(tp.sql, ['--org', o.orgId, '--extra-countries', 'ZZ'])).rejects.toThrow(/ZZ/);
  });

  it('validates the policy in the spec 422 shape', async () => {
    const res = await setPolicy({ allowed_countries: ['ZZ'], blocked_number_types: ['expensive'], allowed_sip_hosts: ['not a host'] });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: { loc: (string | number)[] }) => d.loc.join('.')).sort();
    expect(locs).toEqual(expect.arrayContaining(['body.settings.destination_policy.allowed_sip_hosts.0', 'body.settings.destination_policy.blocked_number_types.0']));
    const zz = await setPolicy({ allowed_countries: ['ZZ'] });
    expect(zz.status).toBe(422);
    expect(zz.body.detail).toEqual([
      expect.objectContaining({ type: 'country_code', loc: ['body', 'settings', 'destination_policy', 'allowed_countries', 0], input: 'ZZ' }),
    ]);
  });

  it("fictional ranges are destinations only with the simulated carrier; a real carrier's org may not ring them", async () => {
    const services = tp.platform.services;
    const simulated = carrierFor(services);
    setCarrier(services, { ...simulated, name: 'twilio' });
    try {
      const res = await create(FICTIONAL_US);
      expect(res.status).toBe(422);
      expect(res.body.detail[0].ctx).toMatchObject({ reason: 'number_type', number_type: 'unknown' });
    } finally {
      setCarrier(services, simulated);
    }
  });

  it('a scheduled call fails at dial time when the policy changed meanwhile', async () => {
    const o = await tp.createOrg('toll-scheduled');
    const a = await agentOf(o.orgId);
    await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
                 values (${o.orgId}, '+14155550144', 'simulated', ${a}, 'ST_sched')`;
    await commands['set-destination-limits']!.run(tp.sql, ['--org', o.orgId, '--extra-countries', 'GB']);
    expect((await setPolicy({ allowed_countries: ['US', 'GB'] }, o.key)).status).toBe(200);
    const res = await tp.request('post', '/v1/calls', { key: o.key, body: { agent_id: a, to_number: MOBILE_UK, scheduled_at: new Date(Date.now() + 3600_000).toISOString() } });
    expect(res.status).toBe(201);
    await setPolicy({ allowed_countries: null }, o.key);
    await tp.sql`update calls set scheduled_at = now() - interval '1 second' where id = ${res.body.id}`;
    expect(await dialCall(tp.platform.services, res.body.id)).toBe('failed');
    const [row] = await tp.sql<{ status: string; end_reason: string }[]>`select status, end_reason from calls where id = ${res.body.id}`;
    expect(row).toEqual({ status: 'failed', end_reason: 'destination_not_allowed' });
  });
});

describe('transfer_call: a refusal the agent can say', () => {
  async function toolFor(destination: string): Promise<{ run: () => Promise<unknown>; transfers: string[] }> {
    const tool = await tp.request('post', '/v1/tools', { key: org.key, body: { type: 'transfer_call', name: 'transfer', destination } });
    expect(tool.status).toBe(201);
    agentId = await agentOf(org.orgId, [tool.body.id]);
    await tp.sql`update phone_numbers set agent_id = ${agentId} where org_id = ${org.orgId}`;
    const call = await create(FICTIONAL_US);
    expect(call.status).toBe(201);
    // The worker's own session config, fetched and checked against the contract by the worker's client.
    const client = new InternalApiClient({ baseUrl: tp.url, token: tp.config.WORKER_TOKEN! });
    // As a dispatched worker holds it: the call's capability (docs/internal-api.md).
    client.setCapability(call.body.id, mintCapability(tp.platform.services, call.body.id));
    const config = await client.getConfig(call.body.id);
    expect(config.destination_policy).toMatchObject({ allowed_countries: expect.arrayContaining(['US']), fictional_numbers: true });
    const transfers: string[] = [];
    const tools = buildTools(config, {
      hangUp: () => {},
      transfer: async (d) => void transfers.push(d),
      sendDtmf: async () => {},
      addToDoNotCall: async () => {},
    });
    const t = tools.find((x) => (x as unknown as { name?: string }).name === 'transfer') ?? tools[0]!;
    return { run: () => (t as unknown as { execute: (a: unknown, o: unknown) => Promise<unknown> }).execute({}, { toolCallId: 't1' }), transfers };
  }

  async function refusal(p: Promise<unknown>): Promise<string> {
    try {
      await p;
    } catch (err) {
      expect(err).toBeInstanceOf(llm.ToolError);
      return (err as Error).message;
    }
    throw new Error('the transfer was not refused');
  }

  it('refuses a premium-rate, satellite or foreign number, and never asks the SIP bridge', async () => {
    for (const [to, words] of [
      [PREMIUM_UK, 'premium-rate numbers'],
      [SATELLITE_IRIDIUM, 'satellite numbers'],
      [FIXED_UK, 'numbers in GB are not allowed'],
    ] as const) {
      const { run, transfers } = await toolFor(to);
      const msg = await refusal(run());
      expect(msg).toMatch(/^The transfer is not allowed: /);
      expect(msg).toContain(words);
      expect(transfers).toEqual([]);
    }
  });

  it('sip: transfers go only to allow-listed hosts', async () => {
    const attacker = await toolFor('sip:+449098790000@sip.attacker.example');
    expect(await refusal(attacker.run())).toContain('SIP host sip.attacker.example');
    expect(attacker.transfers).toEqual([]);

    expect((await setPolicy({ allowed_sip_hosts: ['PBX.acme.example'] })).body.settings.destination_policy.allowed_sip_hosts).toEqual(['pbx.acme.example']);
    const pbx = await toolFor('sip:desk@pbx.acme.example');
    await pbx.run();
    expect(pbx.transfers).toEqual(['sip:desk@pbx.acme.example']);
    await setPolicy({ allowed_sip_hosts: [] });
  });

  it('transfers to an allowed number as before', async () => {
    const ok = await toolFor('+15550100777');
    expect(await ok.run()).toBe('The call was transferred.');
    expect(ok.transfers).toEqual(['+15550100777']);
  });
});

describe('rates by destination prefix', () => {
  it('the longest prefix wins, the carrier before *, else the flat rate', () => {
    const table = parseRateTable('twilio,outbound,+44,1\n*,outbound,+447,2\ntwilio,outbound,+447,3\ntwilio,outbound,+4474,4\n*,inbound,+1800,2.2');
    expect(lookupRate(table, 'twilio', 'outbound', '+442071234567')).toBe(1);
    expect(lookupRate(table, 'twilio', 'outbound', '+447700900123')).toBe(3);
    expect(lookupRate(table, 'telnyx', 'outbound', '+447700900123')).toBe(2);
    expect(lookupRate(table, 'twilio', 'outbound', '+447400123456')).toBe(4);
    expect(lookupRate(table, 'twilio', 'outbound', '+33612345678')).toBeNull();
    expect(lookupRate(table, 'twilio', 'inbound', '+18005550100')).toBe(2.2);
    expect(() => parseRateTable('twilio,outbound,44,1')).toThrow(/prefix/);
    expect(() => parseRateTable('twilio,outbound,+44,-1')).toThrow(/cents_per_minute/);
    expect(() => parseRateTable('twilio,outbound,+44,1\ntwilio,outbound,+44,2')).toThrow(/twice/);
  });

  it('the committed default table prices satellite and premium ranges far above a fixed line', () => {
    const table = rateTableFor({ RATE_TABLE_PATH: undefined });
    expect(lookupRate(table, 'twilio', 'outbound', SATELLITE_IRIDIUM)!).toBeGreaterThan(100);
    expect(lookupRate(table, 'twilio', 'outbound', PREMIUM_UK)!).toBeGreaterThan(lookupRate(table, 'twilio', 'outbound', FIXED_UK)! * 10);
  });

  it("a call's rate is the destination's (the operator's table), not one flat rate of the caller ID", async () => {
    const rateOf = async (to: string) => {
      const res = await create(to);
      expect(res.status).toBe(201);
      const [row] = await tp.sql<{ rate: string }[]>`select rate_cents_per_minute::text as rate from calls where id = ${res.body.id}`;
      return Number(row!.rate);
    };
    expect(await rateOf('+15550001111')).toBe(7); // +15550001 beats +1555
    expect(await rateOf('+15550100777')).toBe(3); // +1555
    expect(await rateOf(FIXED_OR_MOBILE_US)).toBe(5); // +1
  });
});

describe('daily spend cap', () => {
  it('refuses new outbound calls (429, reason daily_spend_cap) once today\'s ended and connected calls reach the cap', async () => {
    const o = await tp.createOrg('toll-spend');
    const a = await agentOf(o.orgId);
    await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
                 values (${o.orgId}, '+14155550145', 'simulated', ${a}, 'ST_spend')`;
    await commands['set-limits']!.run(tp.sql, ['--org', o.orgId, '--daily-spend-cap-cents', '100']);
    const ws = await tp.request('get', '/v1/workspace', { key: o.key });
    expect(ws.body.limits.daily_spend_cap_cents).toBe(100);
    const call = (body: Record<string, unknown> = {}) => tp.request('post', '/v1/calls', { key: o.key, body: { agent_id: a, to_number: FICTIONAL_US, ...body } });
    const past = async (status: string, cost: number | null, rate: number, started: string, ended: string | null) =>
      tp.sql`insert into calls (org_id, agent_id, type, direction, status, to_number, rate_cents_per_minute, cost_cents, started_at, ended_at)
             values (${o.orgId}, ${a}, 'outbound', 'outbound', ${status}, ${FICTIONAL_US}, ${rate}, ${cost},
                     now() - ${started}::interval, ${ended === null ? null : tp.sql`now() - ${ended}::interval`})`;

    // Yesterday's spend does not count.
    await past('completed', 500, 7, '25 hours', '24 hours 30 minutes');
    expect(await spendTodayCents(tp.sql, o.orgId)).toBeLessThan(100);
    // A scheduled call created while under the cap.
    const scheduled = await call({ scheduled_at: new Date(Date.now() + 3600_000).toISOString() });
    expect(scheduled.status).toBe(201);

    // 60 cents ended today + a connected call at 5 cents a minute for 8 minutes (40 so far, not yet written).
    await past('completed', 60, 7, '0 seconds', '0 seconds');
    await past('in_progress', null, 5, '7 minutes 30 seconds', null);
    expect(await spendTodayCents(tp.sql, o.orgId)).toBe(100);

    const refused = await call();
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ reason: 'daily_spend_cap', limit: 'daily_spend_cap_cents', limit_value: 100 });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const metric = await tp.platform.services.metrics.registry.getSingleMetricAsString('vap_outbound_refusals_total');
    expect(metric).toContain('vap_outbound_refusals_total{reason="daily_spend_cap",stage="api"} 1');
    expect(metric).toMatch(/vap_outbound_refusals_total\{reason="number_type",stage="api"\} \d+/);

    // The scheduled call, now due, fails rather than dialling past the cap.
    await tp.sql`update calls set scheduled_at = now() - interval '1 second' where id = ${scheduled.body.id}`;
    expect(await dialCall(tp.platform.services, scheduled.body.id)).toBe('failed');
    const [row] = await tp.sql<{ status: string; end_reason: string }[]>`select status, end_reason from calls where id = ${scheduled.body.id}`;
    expect(row).toEqual({ status: 'failed', end_reason: 'daily_spend_cap' });

    // Raised by the operator: calls go again.
    await commands['set-limits']!.run(tp.sql, ['--org', o.orgId, '--daily-spend-cap-cents', '1000']);
    expect((await call()).status).toBe(201);
  });
});
