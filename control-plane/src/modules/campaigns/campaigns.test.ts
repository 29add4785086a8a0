// The campaigns API against a real PostgreSQL (the scheduler's jobs are queued, not run: JOBS_ENABLED=false):
// creation from JSON and from a CSV upload with per-row problems, the size and row limits, list, get, pause,
// resume, edit, cancel, the contacts list, the export; the do-not-call list and the agent's do_not_call route.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { InternalApiClient } from '../../../../shared/internal-api.ts';
import { insertBareAgent } from '../../../../test/support/bare-agent.ts';

let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;
const FROM = '+14155550142';
const FROM2 = '+14155550143';
const MAX_CONTACTS = 40;
const MAX_BYTES = 8192;

async function agentOf(orgId: string): Promise<string> {
  return insertBareAgent(tp.sql, orgId);
}

const post = (body: unknown, key = org.key) => tp.request('post', '/v1/campaigns', { key, body });

async function upload(fields: Record<string, string>, csv: string | null, opts: { key?: string; fileField?: string } = {}) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (csv !== null) form.append(opts.fileField ?? 'file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv');
  const res = await fetch(`${tp.url}/v1/campaigns`, { method: 'POST', headers: { authorization: `Bearer ${opts.key ?? org.key}` }, body: form });
  const text = await res.text();
  return { status: res.status, body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

const later = () => new Date(Date.now() + 86400_000).toISOString();

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: false, SSRF_ALLOWLIST: 'localhost', CAMPAIGN_MAX_CONTACTS: MAX_CONTACTS, CAMPAIGN_UPLOAD_MAX_BYTES: MAX_BYTES } as never);
  org = await tp.createOrg('campaigns');
  agentId = await agentOf(org.orgId);
  // The agent's own number is its oldest: FROM.
  await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id, created_at)
               values (${org.orgId}, ${FROM}, 'simulated', ${agentId}, 'ST_c1', now() - interval '1 minute'), (${org.orgId}, ${FROM2}, 'simulated', ${agentId}, 'ST_c2', now())`;
});

describe('POST /v1/campaigns (JSON)', () => {
  it('creates a running campaign with defaults, its contacts pending, one tick queued, campaign.started and an audit event', async () => {
    const res = await post({
      name: 'Reminders',
      agent_id: agentId,
      contacts: [
        { to_number: '+15550100001', variables: { customer_name: 'Ada' } },
        { to_number: '+1 (555) 010-0002', timezone: 'America/Chicago' },
      ],
      variables: { clinic: 'Acme' },
      metadata: { crm: 'x' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'Reminders',
      agent_id: agentId,
      from_numbers: [FROM],
      status: 'running',
      pause_reason: null,
      schedule: { start_at: null, end_at: null, windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '18:00' }], holidays: [] },
      pacing: { calls_per_minute: 10, max_concurrent: 5 },
      retry: { on: ['no_answer', 'busy'], max_retries: 2, delay_minutes: 60 },
      stop_on: null,
      contacts: { total: 2, pending: 2, skipped: 0 },
      attempts: 0,
      import: { rows: 2, accepted: 2, skipped: 0, problems: [], problems_truncated: false },
    });
    expect(res.body.started_at).not.toBeNull();
    const id = res.body.id as string;
    const jobs = await tp.sql`select state from pgboss.job where name = 'campaigns.tick' and singleton_key = ${id}`;
    expect(jobs).toHaveLength(1);
    const [ev] = await tp.sql<{ payload: Record<string, unknown> }[]>`select payload from events where type = 'campaign.started' and payload->>'campaign_id' = ${id}`;
    expect(ev!.payload).toMatchObject({ event: 'campaign.started', campaign_id: id, name: 'Reminders', contacts: 2 });
    const [audit] = await tp.sql`select action, details from audit_events where resource_id = ${id}`;
    expect(audit).toMatchObject({ action: 'campaign.create', details: { rows: 2, accepted: 2 } });
    const contacts = await tp.request('get', `/v1/campaigns/${id}/contacts`, { key: org.key });
    expect(contacts.body.items.map((c: { row: number; to_number: string; timezone: string; state: string }) => [c.row, c.to_number, c.timezone, c.state])).toEqual([
      [1, '+15550100001', 'America/New_York,America/Chicago,America/Denver,America/Phoenix,America/Los_Angeles', 'pending'],
      [2, '+15550100002', 'America/Chicago', 'pending'],
    ]);
  });

  it('reports bad rows with their row numbers and skips them: invalid numbers, other countries, duplicates, do-not-call, bad time zones', async () => {
    const listed = await tp.request('post', '/v1/do-not-call', { key: org.key, body: { phone_number: '+15550100013', reason: 'asked' } });
    expect(listed.status).toBe(201);
    const res = await post({
      name: 'Mixed',
      agent_id: agentId,
      contacts: [
        { to_number: '+15550100011' },
        { to_number: 'not a number' },
        { to_number: '+442079460123' }, // a GB number: outside the default allowed countries (the org's: US)
        { to_number: '+15550100011' },
        { to_number: '+15550100013' },
        { to_number: '+15550100014', timezone: 'Mars/Olympus' },
        { to_number: '+19005551234' }, // premium rate
        { to_number: '' },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.body.import).toMatchObject({ rows: 8, accepted: 1, skipped: 7, problems_truncated: false });
    expect(res.body.import.problems.map((p: { row: number; type: string }) => [p.row, p.type])).toEqual([
      [2, 'invalid_number'],
      [3, 'destination_not_allowed'],
      [4, 'duplicate'],
      [5, 'do_not_call'],
      [6, 'timezone_invalid'],
      [7, 'destination_not_allowed'],
      [8, 'invalid_number'],
    ]);
    expect(res.body.import.problems[1].ctx).toMatchObject({ reason: 'country', country: 'GB' });
    expect(res.body.import.problems[2].ctx).toEqual({ first_row: 1 });
    expect(res.body.import.problems[5].ctx).toMatchObject({ reason: 'number_type', number_type: 'premium_rate' });
    // Stored skipped with their reason (the duplicate only reported): the export and the contacts list show them.
    expect(res.body.contacts).toMatchObject({ total: 7, pending: 1, skipped: 6 });
    const skipped = await tp.request('get', `/v1/campaigns/${res.body.id}/contacts?state=skipped`, { key: org.key });
    expect(skipped.body.items.map((c: { row: number; skip_reason: string }) => [c.row, c.skip_reason])).toEqual([
      [2, 'invalid_number'],
      [3, 'destination_not_allowed'],
      [5, 'do_not_call'],
      [6, 'timezone_unknown'],
      [7, 'destination_not_allowed'],
      [8, 'invalid_number'],
    ]);
  });

  it('national numbers need default_country; a pool of caller IDs is checked number by number', async () => {
    const res = await post({ name: 'National', agent_id: agentId, default_country: 'US', from_numbers: [FROM, FROM2], contacts: [{ to_number: '(555) 010-0021' }] });
    expect(res.status).toBe(201);
    expect(res.body.from_numbers).toEqual([FROM, FROM2]);
    expect(res.body.import.accepted).toBe(1);
    const without = await post({ name: 'National', agent_id: agentId, contacts: [{ to_number: '(555) 010-0021' }] });
    expect(without.body.import.problems[0]).toMatchObject({ row: 1, type: 'invalid_number', msg: expect.stringContaining('default_country') });
    const notOurs = await post({ name: 'x', agent_id: agentId, from_numbers: [FROM, '+14155559999'], contacts: [] });
    expect(notOurs.status).toBe(422);
    expect(notOurs.body.detail).toEqual([
      { loc: ['body', 'from_numbers', 1], msg: 'Must be one of your active phone numbers (GET /v1/phone-numbers)', type: 'phone_number_not_owned', input: '+14155559999' },
    ]);
  });

  it('422 for bad settings: schedule, pacing over the org limits, unknown fields, a private webhook_url, another org\'s agent', async () => {
    const bad = await post({
      name: 'x',
      agent_id: agentId,
      contacts: [{ to_number: '+15550100031', extra: 1 }],
      schedule: { windows: [{ days: ['mon'], start: '18:00', end: '09:00' }], end_at: '2020-01-01T00:00:00Z' },
      webhook_url: 'http://10.0.0.1/hook',
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: unknown[]; type: string }) => `${d.loc.join('.')}:${d.type}`)).toEqual(['body.contacts.0.extra:extra_forbidden']);
    const bad2 = await post({ name: 'x', agent_id: agentId, contacts: [], schedule: { windows: [{ days: ['mon'], start: '18:00', end: '09:00' }], end_at: '2020-01-01T00:00:00Z' }, webhook_url: 'http://10.0.0.1/hook' });
    expect(bad2.body.detail.map((d: { loc: unknown[]; type: string }) => `${d.loc.join('.')}:${d.type}`).sort()).toEqual([
      'body.schedule.end_at:datetime_future',
      'body.schedule.windows.0.end:window_invalid',
      'body.webhook_url:url_not_allowed',
    ]);
    await tp.sql`update orgs set max_concurrent_calls = 3 where id = ${org.orgId}`;
    const pace = await post({ name: 'x', agent_id: agentId, contacts: [], pacing: { calls_per_minute: 601, max_concurrent: 4 } });
    expect(pace.body.detail.map((d: { loc: unknown[]; ctx: unknown }) => [d.loc.join('.'), d.ctx])).toEqual([
      ['body.pacing.calls_per_minute', { le: 600 }],
      ['body.pacing.max_concurrent', { le: 3, limit: 'max_concurrent_calls' }],
    ]);
    await tp.sql`update orgs set max_concurrent_calls = 10 where id = ${org.orgId}`;
    const other = await tp.createOrg('other');
    const foreign = await post({ name: 'x', agent_id: await agentOf(other.orgId), contacts: [] });
    expect(foreign.body.detail[0]).toMatchObject({ loc: ['body', 'agent_id'], type: 'reference_not_found' });
    const both = await post({ name: 'x', agent_id: agentId, from_number: FROM, from_numbers: [FROM2], contacts: [] });
    expect(both.body.detail[0]).toMatchObject({ loc: ['body', 'from_numbers'], type: 'value_error' });
  });

  it(`more than CAMPAIGN_MAX_CONTACTS rows is a 422 naming the rows over; a body over CAMPAIGN_UPLOAD_MAX_BYTES is a 413`, async () => {
    const contacts = Array.from({ length: MAX_CONTACTS + 3 }, (_, i) => ({ to_number: `+1555010${String(1000 + i).slice(1)}` }));
    const res = await post({ name: 'Too many', agent_id: agentId, contacts });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        loc: ['body', 'contacts', MAX_CONTACTS],
        msg: `At most ${MAX_CONTACTS} contacts per campaign: rows ${MAX_CONTACTS + 1} to ${MAX_CONTACTS + 3} are over the limit`,
        type: 'too_many_rows',
        ctx: { max_rows: MAX_CONTACTS, first_row_over: MAX_CONTACTS + 1, last_row: MAX_CONTACTS + 3 },
      },
    ]);
    const big = await post({ name: 'Too big', agent_id: agentId, contacts: [{ to_number: '+15550100041', variables: { notes: 'x'.repeat(MAX_BYTES) } }] });
    expect(big.status).toBe(413);
    expect(await tp.sql`select id from campaigns where name in ('Too many', 'Too big')`).toHaveLength(0);
  });
});

describe('POST /v1/campaigns (CSV upload)', () => {
  it('reads to_number, timezone and variable columns; reports bad rows by their CSV row', async () => {
    const csv = [
      '\ufeffto_number,timezone,customer_name,notes',
      '+15550100051,,Ada,"likes ""mornings"", early"',
      '+15550100052,Europe/London,Grace,',
      'bad,,Bad,',
      '+15550100051,,Dup,',
      '+15550100053,,Short', // a cell missing
      '',
      '+15550100054,America/Denver,Linus,"two',
      'lines"',
    ].join('\n');
    const res = await upload({ name: 'From CSV', agent_id: agentId, pacing: '{"calls_per_minute": 30}', from_numbers: `${FROM}, ${FROM2}`, schedule: JSON.stringify({ holidays: ['2027-01-01'] }) }, csv);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'From CSV', pacing: { calls_per_minute: 30 }, from_numbers: [FROM, FROM2], schedule: { holidays: ['2027-01-01'] } });
    expect(res.body.import).toMatchObject({ rows: 6, accepted: 3, skipped: 3 });
    expect(res.body.import.problems.map((p: { row: number; type: string }) => [p.row, p.type])).toEqual([
      [4, 'invalid_number'],
      [5, 'duplicate'],
      [6, 'columns_mismatch'],
    ]);
    const list = await tp.request('get', `/v1/campaigns/${res.body.id}/contacts`, { key: org.key });
    expect(list.body.items.map((c: { row: number; timezone: string | null; variables: unknown; state: string }) => [c.row, c.state, c.variables])).toEqual([
      [2, 'pending', { customer_name: 'Ada', notes: 'likes "mornings", early' }],
      [3, 'pending', { customer_name: 'Grace', notes: '' }],
      [4, 'skipped', { customer_name: 'Bad', notes: '' }],
      [9, 'pending', { customer_name: 'Linus', notes: 'two\nlines' }],
    ]);
    expect(list.body.items[1].timezone).toBe('Europe/London');
  });

  it('whole-file problems: no to_number column, malformed quoting, too many rows (their row numbers), over the byte limit (413), no file', async () => {
    const fields = { name: 'x', agent_id: agentId };
    const noColumn = await upload(fields, 'phone,name\n+15550100061,a\n');
    expect(noColumn.status).toBe(422);
    expect(noColumn.body.detail[0]).toMatchObject({ loc: ['body', 'file', 'header'], type: 'csv_header_invalid' });
    const broken = await upload(fields, 'to_number,name\n+15550100061,"open\n');
    expect(broken.status).toBe(422);
    expect(broken.body.detail[0]).toMatchObject({ loc: ['body', 'file'], type: 'csv_invalid', ctx: { code: 'CSV_QUOTE_NOT_CLOSED' } });
    const rows = Array.from({ length: MAX_CONTACTS + 2 }, (_, i) => `+1555011${String(1000 + i).slice(1)}`);
    const many = await upload(fields, ['to_number', ...rows].join('\n'));
    expect(many.status).toBe(422);
    expect(many.body.detail[0]).toMatchObject({
      loc: ['body', 'file'],
      type: 'too_many_rows',
      msg: `At most ${MAX_CONTACTS} contacts per campaign: rows ${MAX_CONTACTS + 2} to ${MAX_CONTACTS + 3} are over the limit`,
    });
    const big = await upload(fields, 'to_number,notes\n' + `+15550100062,${'x'.repeat(MAX_BYTES)}\n`);
    expect(big.status).toBe(413);
    const none = await upload(fields, null);
    expect(none.status).toBe(422);
    expect(none.body.detail[0]).toMatchObject({ loc: ['body', 'file'], type: 'missing' });
    const badJson = await upload({ ...fields, pacing: '{nope' }, 'to_number\n+15550100063\n');
    expect(badJson.body.detail[0]).toMatchObject({ loc: ['body', 'pacing'], type: 'json_invalid' });
    const badSetting = await upload({ ...fields, pacing: '{"calls_per_minute": 0}' }, 'to_number\n+15550100063\n');
    expect(badSetting.body.detail[0].loc).toEqual(['body', 'pacing', 'calls_per_minute']);
    expect(await tp.sql`select id from campaigns where name = 'x'`).toHaveLength(0);
  });
});

describe('list, get, pause, resume, edit, cancel', () => {
  let id: string;
  beforeAll(async () => {
    const res = await post({ name: 'Lifecycle', agent_id: agentId, contacts: [{ to_number: '+15550100071' }, { to_number: '+15550100072' }], schedule: { start_at: later() } });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('scheduled');
    id = res.body.id;
  });

  it('lists newest first in the envelope, filtered by status', async () => {
    const all = await tp.request('get', '/v1/campaigns?limit=2', { key: org.key });
    expect(all.body).toMatchObject({ limit: 2, offset: 0 });
    expect(all.body.total).toBeGreaterThanOrEqual(4);
    expect(all.body.items[0].id).toBe(id);
    const scheduled = await tp.request('get', '/v1/campaigns?status=scheduled', { key: org.key });
    expect(scheduled.body.items.map((c: { id: string }) => c.id)).toEqual([id]);
    const got = await tp.request('get', `/v1/campaigns/${id}`, { key: org.key });
    expect(got.body).toMatchObject({ id, contacts: { total: 2, pending: 2 } });
    expect((await tp.request('get', '/v1/campaigns/nope', { key: org.key })).status).toBe(404);
  });

  it('pauses (campaign.paused, manual), resumes, edits pacing and schedule; validates what it edits', async () => {
    const paused = await tp.request('patch', `/v1/campaigns/${id}`, { key: org.key, body: { status: 'paused' } });
    expect(paused.body).toMatchObject({ status: 'paused', pause_reason: 'manual' });
    const [ev] = await tp.sql<{ payload: Record<string, unknown> }[]>`select payload from events where type = 'campaign.paused' and payload->>'campaign_id' = ${id}`;
    expect(ev!.payload).toMatchObject({ reason: 'manual', name: 'Lifecycle' });
    // Never started: resuming goes back to waiting for start_at.
    const resumed = await tp.request('patch', `/v1/campaigns/${id}`, { key: org.key, body: { status: 'running', pacing: { calls_per_minute: 2 }, schedule: { holidays: ['2027-12-25'] } } });
    expect(resumed.body).toMatchObject({ status: 'scheduled', pause_reason: null, pacing: { calls_per_minute: 2, max_concurrent: 5 }, schedule: { holidays: ['2027-12-25'] } });
    expect(resumed.body.schedule.start_at).not.toBeNull();
    const bad = await tp.request('patch', `/v1/campaigns/${id}`, { key: org.key, body: { pacing: { max_concurrent: 1000 }, status: 'stopped' } });
    expect(bad.status).toBe(422);
    const audits = await tp.sql`select action from audit_events where resource_id = ${id} order by created_at`;
    expect(audits.map((a) => a.action)).toEqual(['campaign.create', 'campaign.update', 'campaign.update']);
  });

  it('cancel: contacts not called are canceled, a queued attempt is stopped; a canceled campaign no longer changes', async () => {
    // An attempt queued for the dial, as the scheduler leaves it.
    const [contact] = await tp.sql<{ id: string }[]>`select id from campaign_contacts where campaign_id = ${id} order by row_number limit 1`;
    const [call] = await tp.sql<{ id: string }[]>`
      insert into calls (org_id, agent_id, type, direction, to_number, from_number, campaign_id, campaign_contact_id, campaign_attempt)
      values (${org.orgId}, ${agentId}, 'outbound', 'outbound', '+15550100071', ${FROM}, ${id}, ${contact!.id}, 1) returning id`;
    await tp.sql`update campaign_contacts set state = 'scheduled', attempts = 1, last_call_id = ${call!.id} where id = ${contact!.id}`;
    const res = await tp.request('post', `/v1/campaigns/${id}/cancel`, { key: org.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'canceled', contacts: { canceled: 1, scheduled: 1 } });
    expect(res.body.canceled_at).not.toBeNull();
    const [stopped] = await tp.sql`select status, end_reason from calls where id = ${call!.id}`;
    expect(stopped).toMatchObject({ status: 'failed', end_reason: 'canceled' });
    expect((await tp.request('post', `/v1/campaigns/${id}/cancel`, { key: org.key })).body.status).toBe('canceled');
    const edit = await tp.request('patch', `/v1/campaigns/${id}`, { key: org.key, body: { status: 'running' } });
    expect(edit.status).toBe(409);
  });
});

describe('export.csv', () => {
  it('one row per contact with its attempts, results and call ids; formula-looking cells are neutralised', async () => {
    const res = await post({
      name: 'Export',
      agent_id: agentId,
      contacts: [
        { to_number: '+15550100081', variables: { customer_name: '=HYPERLINK("http://evil.example")', state: 'x' } },
        { to_number: 'nope', variables: { customer_name: 'Plain, with a comma' } },
        { to_number: '+15550100082', variables: { customer_name: '-2+3' } },
      ],
    });
    const id = res.body.id as string;
    const [contact] = await tp.sql<{ id: string }[]>`select id from campaign_contacts where campaign_id = ${id} and row_number = 1`;
    const calls = await tp.sql<{ id: string }[]>`
      insert into calls (org_id, agent_id, type, direction, to_number, status, end_reason, outcome, campaign_id, campaign_contact_id, campaign_attempt)
      values (${org.orgId}, ${agentId}, 'outbound', 'outbound', '+15550100081', 'failed', 'busy', null, ${id}, ${contact!.id}, 1),
             (${org.orgId}, ${agentId}, 'outbound', 'outbound', '+15550100081', 'completed', 'user_hangup', 'appointment_booked', ${id}, ${contact!.id}, 2)
      returning id`;
    await tp.sql`update campaign_contacts set state = 'completed', attempts = 2, last_call_id = ${calls[1]!.id}, last_result = 'completed' where id = ${contact!.id}`;
    const exp = await fetch(`${tp.url}/v1/campaigns/${id}/export.csv`, { headers: { authorization: `Bearer ${org.key}` } });
    expect(exp.status).toBe(200);
    expect(exp.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const lines = (await exp.text()).trimEnd().split('\r\n');
    expect(lines[0]).toBe('row,to_number,timezone,state,skip_reason,attempts,last_result,outcome,call_ids,attempt_results,first_attempt_at,last_attempt_at,customer_name,variable_state');
    const zones = '"America/New_York,America/Chicago,America/Denver,America/Phoenix,America/Los_Angeles"';
    expect(lines[1]).toBe(`1,+15550100081,${zones},completed,,2,completed,appointment_booked,${calls[0]!.id};${calls[1]!.id},busy;completed,,,"'=HYPERLINK(""http://evil.example"")",x`);
    expect(lines[2]).toBe('2,nope,,skipped,invalid_number,0,,,,,,,"Plain, with a comma",');
    expect(lines[3]).toBe(`3,+15550100082,${zones},pending,,0,,,,,,,'-2+3,`);
    expect(lines).toHaveLength(4);
  });
});

describe('/v1/do-not-call', () => {
  it('adds (201, then 200 with the same entry), lists, looks up, deletes; the calls API refuses a listed number', async () => {
    const first = await tp.request('post', '/v1/do-not-call', { key: org.key, body: { phone_number: '+15550100091', reason: 'email' } });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ phone_number: '+15550100091', reason: 'email', source: 'api', call_id: null });
    const again = await tp.request('post', '/v1/do-not-call', { key: org.key, body: { phone_number: '+15550100091' } });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    const one = await tp.request('get', '/v1/do-not-call?phone_number=%2B15550100091', { key: org.key });
    expect(one.body).toMatchObject({ total: 1, items: [{ id: first.body.id }] });
    const call = await tp.request('post', '/v1/calls', { key: org.key, body: { agent_id: agentId, to_number: '+15550100091' } });
    expect(call.status).toBe(422);
    expect(call.body.detail[0]).toMatchObject({ loc: ['body', 'to_number'], type: 'do_not_call' });
    expect((await tp.request('post', '/v1/do-not-call', { key: org.key, body: { phone_number: '555' } })).status).toBe(422);
    expect((await tp.request('delete', `/v1/do-not-call/${first.body.id}`, { key: org.key })).status).toBe(204);
    expect((await tp.request('delete', `/v1/do-not-call/${first.body.id}`, { key: org.key })).status).toBe(404);
    expect((await tp.request('post', '/v1/calls', { key: org.key, body: { agent_id: agentId, to_number: '+15550100091' } })).status).toBe(201);
  });

  it("the agent's do_not_call tool route lists the callee of an outbound call (source agent, the call's id), once", async () => {
    const created = await tp.request('post', '/v1/calls', { key: org.key, body: { agent_id: agentId, to_number: '+15550100092' } });
    const callId = created.body.id as string;
    const client = new InternalApiClient({ baseUrl: tp.url, token: tp.config.WORKER_TOKEN!, retry: { maxAttempts: 1 } });
    client.setCapability(callId, tp.capability(callId));
    expect(await client.addToDoNotCall(callId, { reason: 'please stop calling' })).toEqual({ phone_number: '+15550100092', already_listed: false });
    expect(await client.addToDoNotCall(callId, {})).toEqual({ phone_number: '+15550100092', already_listed: true });
    const list = await tp.request('get', '/v1/do-not-call?phone_number=%2B15550100092', { key: org.key });
    expect(list.body.items[0]).toMatchObject({ source: 'agent', call_id: callId, reason: 'please stop calling' });
    // Another call's capability is refused.
    const other = await tp.request('post', '/v1/calls', { key: org.key, body: { agent_id: agentId, to_number: '+15550100093' } });
    const forged = new InternalApiClient({ baseUrl: tp.url, token: tp.config.WORKER_TOKEN!, retry: { maxAttempts: 1 } });
    forged.setCapability(callId, tp.capability(other.body.id));
    await expect(forged.addToDoNotCall(callId, {})).rejects.toMatchObject({ status: 403 });
  });
});
