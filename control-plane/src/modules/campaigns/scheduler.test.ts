// The campaign scheduler on a real PostgreSQL and pg-boss, driven tick by tick with a fake clock (JOBS_ENABLED
// is off: no dial job runs; the test plays the carrier by ending each attempt's call through the calls
// lifecycle, as the dial job and the worker would). Windows across time zones and DST changes, pacing,
// concurrency, retries, auto-pause, resume, cancel, the do-not-call list mid-campaign, the end date, limits.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { getCallById } from '../calls/queries.ts';
import { failCall, finishCall, markStarted } from '../calls/lifecycle.ts';
import { tickCampaign, failureRateTripped } from './scheduler.ts';
import { windowOpen, wallClock, zonesOfNumber } from './zones.ts';
import { afterAttempt, DEFAULT_RETRY } from './results.ts';
import { insertBareAgent } from '../../../../test/support/bare-agent.ts';

let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;
const FROM = '+14155550150';
const ALWAYS = [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }];

const at = (iso: string) => new Date(iso);
const plus = (d: Date, seconds: number) => new Date(d.getTime() + seconds * 1000);
const tick = (id: string, now: Date) => tickCampaign(tp.platform.services, id, now);

let n = 0;
/** A fresh fictional number (the simulated carrier's +1 555 range). */
const num = () => `+1555020${String(10000 + n++).slice(1)}`;

async function create(body: Record<string, unknown>): Promise<string> {
  const res = await tp.request('post', '/v1/campaigns', { key: org.key, body: { name: 'c', agent_id: agentId, ...body } });
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

const contacts = (id: string) =>
  tp.sql<{ id: string; row_number: number; to_number: string; state: string; attempts: number; last_result: string | null; next_attempt_at: Date | null; skip_reason: string | null; last_call_id: string | null }[]>`
    select id, row_number, to_number, state, attempts, last_result, next_attempt_at, skip_reason, last_call_id from campaign_contacts where campaign_id = ${id} order by row_number`;
const callsOf = (id: string) =>
  tp.sql<{ id: string; to_number: string; status: string; campaign_attempt: number; campaign_contact_id: string; from_number: string }[]>`
    select c.id, c.to_number, c.status, c.campaign_attempt, c.campaign_contact_id, c.from_number
    from calls c join campaign_contacts ct on ct.id = c.campaign_contact_id
    where c.campaign_id = ${id} order by c.created_at, ct.row_number, c.campaign_attempt`;
const campaign = async (id: string) => (await tp.request('get', `/v1/campaigns/${id}`, { key: org.key })).body;
const eventsOf = (id: string, type: string) =>
  tp.sql<{ payload: Record<string, unknown> }[]>`select payload from events where type = ${type} and payload->>'campaign_id' = ${id} order by created_at`;

/** Ends an attempt's call as the carrier and the worker would. */
async function end(callId: string, how: 'answered' | 'voicemail' | 'busy' | 'no_answer' | 'carrier_error') {
  const services = tp.platform.services;
  await services.sql.begin(async (tx) => {
    const call = (await getCallById(tx, callId, { lock: true }))!;
    if (how === 'answered' || how === 'voicemail') {
      await markStarted(tx, call, new Date().toISOString());
      const started = (await getCallById(tx, callId))!;
      await finishCall(tx, services, started, { endReason: how === 'voicemail' ? 'voicemail' : 'user_hangup', endedAt: new Date().toISOString(), messages: [] });
    } else await failCall(tx, call, how, how);
  });
}

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: false } as never);
  org = await tp.createOrg('scheduler');
  await tp.sql`update orgs set max_concurrent_calls = 1000, max_calls_per_day = 100000, daily_spend_cap_cents = 100000000 where id = ${org.orgId}`;
  agentId = await insertBareAgent(tp.sql, org.orgId);
  await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id) values (${org.orgId}, ${FROM}, 'simulated', ${agentId}, 'ST_s')`;
});

describe('calling windows', () => {
  it('are read on each callee\'s clock: New York and London in the morning, Tokyo after midnight UTC; holidays and the multi-zone US', async () => {
    const [ny, london, tokyo, us] = [num(), num(), num(), num()];
    const id = await create({
      contacts: [
        { to_number: ny, timezone: 'America/New_York' },
        { to_number: london, timezone: 'Europe/London' },
        { to_number: tokyo, timezone: 'Asia/Tokyo' },
        { to_number: us }, // no zone given: the US mainland's five clocks
      ],
      schedule: { windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00' }], holidays: ['2027-01-15'] },
      pacing: { calls_per_minute: 600, max_concurrent: 50 },
    });
    // Wednesday 2027-01-13 14:00 UTC: 09:00 in New York, 14:00 in London, 23:00 in Tokyo, 06:00 in Los Angeles.
    await tick(id, at('2027-01-13T14:00:00Z'));
    expect((await callsOf(id)).map((c) => c.to_number).sort()).toEqual([ny, london].sort());
    // 17:00 UTC: 09:00 in Los Angeles, 12:00 in New York: the US number's window is open in all five zones.
    await tick(id, at('2027-01-13T17:00:00Z'));
    expect((await callsOf(id)).map((c) => c.to_number)).toContain(us);
    // Thursday 00:00 UTC is 09:00 in Tokyo.
    expect((await tick(id, at('2027-01-13T23:59:00Z'))).dialed).toBe(0);
    await tick(id, at('2027-01-14T00:00:00Z'));
    expect((await callsOf(id)).map((c) => c.to_number)).toContain(tokyo);
  });

  it('skip a holiday on the callee\'s calendar and the weekend', async () => {
    const tokyo = num();
    const ny = num();
    const id = await create({
      contacts: [
        { to_number: tokyo, timezone: 'Asia/Tokyo' },
        { to_number: ny, timezone: 'America/New_York' },
      ],
      schedule: { windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00' }], holidays: ['2027-01-15'] },
      pacing: { calls_per_minute: 600, max_concurrent: 50 },
    });
    // Friday 2027-01-15 is a holiday everywhere: 10:00 in Tokyo (01:00Z) and 10:00 in New York (15:00Z).
    expect((await tick(id, at('2027-01-15T01:00:00Z'))).dialed).toBe(0);
    expect((await tick(id, at('2027-01-15T15:00:00Z'))).dialed).toBe(0);
    // Saturday: no window. Monday 2027-01-18 10:00 in New York: only New York (Tokyo is at midnight).
    expect((await tick(id, at('2027-01-16T15:00:00Z'))).dialed).toBe(0);
    await tick(id, at('2027-01-18T15:00:00Z'));
    expect((await callsOf(id)).map((c) => c.to_number)).toEqual([ny]);
  });

  it('follow DST: the same local hour is an hour earlier in UTC after the spring change; a skipped hour shrinks a window, a repeated one opens it twice', () => {
    const nine = [{ days: ['sat', 'sun'] as ('sat' | 'sun')[], start: '09:00', end: '10:00' }];
    const none = new Set<string>();
    // New York changes on Sunday 2027-03-14: 09:00 is 14:00Z on Saturday, 13:00Z on Sunday.
    expect(windowOpen('America/New_York', at('2027-03-13T13:30:00Z'), nine, none)).toBe(false);
    expect(windowOpen('America/New_York', at('2027-03-13T14:00:00Z'), nine, none)).toBe(true);
    expect(windowOpen('America/New_York', at('2027-03-14T13:00:00Z'), nine, none)).toBe(true);
    expect(windowOpen('America/New_York', at('2027-03-14T14:00:00Z'), nine, none)).toBe(false);
    // London changes on 2027-03-28: 09:00 is 09:00Z, then 08:00Z.
    expect(windowOpen('Europe/London', at('2027-03-27T09:30:00Z'), nine, none)).toBe(true);
    expect(windowOpen('Europe/London', at('2027-03-28T08:30:00Z'), nine, none)).toBe(true);
    expect(windowOpen('Europe/London', at('2027-03-28T09:30:00Z'), nine, none)).toBe(false);
    // 02:00-03:00 does not exist in New York on 2027-03-14: a 01:30-02:30 window is 30 minutes long that day.
    const night = [{ days: ['sun'] as 'sun'[], start: '01:30', end: '02:30' }];
    expect(windowOpen('America/New_York', at('2027-03-14T06:45:00Z'), night, none)).toBe(true); // 01:45 EST
    expect(windowOpen('America/New_York', at('2027-03-14T07:15:00Z'), night, none)).toBe(false); // 03:15 EDT
    // 01:00-02:00 happens twice on 2027-11-07: a 01:00-02:00 window is open both times.
    const repeated = [{ days: ['sun'] as 'sun'[], start: '01:00', end: '02:00' }];
    expect(windowOpen('America/New_York', at('2027-11-07T05:30:00Z'), repeated, none)).toBe(true); // 01:30 EDT
    expect(windowOpen('America/New_York', at('2027-11-07T06:30:00Z'), repeated, none)).toBe(true); // 01:30 EST
    expect(windowOpen('America/New_York', at('2027-11-07T07:30:00Z'), repeated, none)).toBe(false); // 02:30 EST
    expect(wallClock(at('2027-11-07T06:30:00Z'), 'America/New_York')).toEqual({ date: '2027-11-07', weekday: 'sun', minute: 90 });
  });

  it('dial across a DST change at the same local hour (scheduler, New York)', async () => {
    const [a, b] = [num(), num()];
    const id = await create({
      contacts: [{ to_number: a, timezone: 'America/New_York' }, { to_number: b, timezone: 'America/New_York' }],
      schedule: { windows: [{ days: ['sat', 'sun'], start: '09:00', end: '10:00' }] },
      pacing: { calls_per_minute: 1, max_concurrent: 5 },
    });
    expect((await tick(id, at('2027-03-13T13:59:00Z'))).dialed).toBe(0); // 08:59 EST
    expect((await tick(id, at('2027-03-13T14:00:00Z'))).dialed).toBe(1); // 09:00 EST
    expect((await tick(id, at('2027-03-14T12:59:00Z'))).dialed).toBe(0); // 08:59 EDT
    expect((await tick(id, at('2027-03-14T13:00:00Z'))).dialed).toBe(1); // 09:00 EDT, an hour earlier in UTC
  });

  it('zones of a number: its longest listed prefix\'s, else its country\'s', () => {
    expect(zonesOfNumber('+442079460123')).toEqual(['Europe/London']);
    // US area codes: Hawaii, Alaska (two clocks), New York, Arizona (no DST: not Denver's clock), and Idaho's 208,
    // split across Mountain and Pacific time until its exchange says which.
    expect(zonesOfNumber('+18085550123', { fictional: true })).toEqual(['Pacific/Honolulu']);
    expect(zonesOfNumber('+19075550123', { fictional: true })).toEqual(['America/Adak', 'America/Anchorage']);
    expect(zonesOfNumber('+12125550123', { fictional: true })).toEqual(['America/New_York']);
    expect(zonesOfNumber('+15205550123', { fictional: true })).toEqual(['America/Phoenix']);
    expect(zonesOfNumber('+12082955555', { fictional: true })).toEqual(['America/Boise', 'America/Los_Angeles']);
    expect(zonesOfNumber('+12082015555', { fictional: true })).toEqual(['America/Denver']);
    // Canada by area code; Australia's 02 is Sydney's clock, not the country's seven.
    expect(zonesOfNumber('+12045550123', { fictional: true })).toEqual(['America/Winnipeg']);
    expect(zonesOfNumber('+61291234567')).toEqual(['Australia/Sydney']);
    // An area code the table does not list (555) is bounded by the mainland's five clocks.
    expect(zonesOfNumber('+15550100081', { fictional: true })).toEqual(['America/New_York', 'America/Chicago', 'America/Denver', 'America/Phoenix', 'America/Los_Angeles']);
  });
});

describe('pacing and concurrency', () => {
  it('spaces calls evenly at calls_per_minute, whatever the tick rate, with no burst after a quiet spell', async () => {
    const id = await create({ contacts: Array.from({ length: 30 }, () => ({ to_number: num() })), schedule: { windows: ALWAYS }, pacing: { calls_per_minute: 6, max_concurrent: 100 } });
    const t0 = at('2027-02-01T12:00:00Z');
    const placedAt: number[] = [];
    for (let s = 0; s < 120; s++) {
      const r = await tick(id, plus(t0, s));
      for (let i = 0; i < r.dialed; i++) placedAt.push(s);
    }
    // One call every 10 s (the first slot starts 2 s back: the burst allowance).
    expect(placedAt).toEqual([0, 8, 18, 28, 38, 48, 58, 68, 78, 88, 98, 108, 118]);
    // Ten quiet minutes bank no more than the burst allowance: one call, then the pace again.
    const later = plus(t0, 720);
    expect((await tick(id, later)).dialed).toBe(1);
    expect((await tick(id, plus(later, 5))).dialed).toBe(0);
    expect((await tick(id, plus(later, 8))).dialed).toBe(1);
  });

  it('keeps at most max_concurrent calls live, and the org\'s own limit', async () => {
    const id = await create({ contacts: Array.from({ length: 6 }, () => ({ to_number: num() })), schedule: { windows: ALWAYS }, pacing: { calls_per_minute: 600, max_concurrent: 3 } });
    const t = at('2027-02-02T12:00:00Z');
    expect((await tick(id, t)).dialed).toBe(3);
    expect((await tick(id, plus(t, 10))).dialed).toBe(0);
    const [first] = await callsOf(id);
    await end(first!.id, 'answered');
    expect((await tick(id, plus(t, 20))).dialed).toBe(1);
    // The org's max_concurrent_calls counts every live call of the org: at it, the campaign waits (it does not pause).
    const live = Number((await tp.sql`select count(*) from calls where org_id = ${org.orgId} and status in ('queued', 'initiated', 'in_progress')`)[0]!.count);
    await tp.sql`update orgs set max_concurrent_calls = ${live} where id = ${org.orgId}`;
    const [second] = (await callsOf(id)).filter((c) => c.status === 'queued');
    await end(second!.id, 'busy');
    // Another call of the org takes the slot that freed.
    await tp.sql`insert into calls (org_id, agent_id, type, status, started_at) values (${org.orgId}, ${agentId}, 'web', 'in_progress', now())`;
    expect((await tick(id, plus(t, 30))).dialed).toBe(0);
    expect((await campaign(id)).status).toBe('running');
    await tp.sql`update orgs set max_concurrent_calls = 1000 where id = ${org.orgId}`;
    expect((await tick(id, plus(t, 40))).dialed).toBe(1);
  });

  it('rotates the caller IDs of a pool call by call', async () => {
    await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id) values (${org.orgId}, '+14155550151', 'simulated', ${agentId}, 'ST_s2')`;
    const id = await create({ from_numbers: [FROM, '+14155550151'], contacts: Array.from({ length: 4 }, () => ({ to_number: num() })), schedule: { windows: ALWAYS }, pacing: { calls_per_minute: 600, max_concurrent: 10 } });
    await tick(id, at('2027-02-03T12:00:00Z'));
    await tick(id, at('2027-02-03T12:00:01Z'));
    expect((await callsOf(id)).map((c) => c.from_number)).toEqual([FROM, '+14155550151', FROM, '+14155550151']);
  });
});

describe('retries', () => {
  it('retries the listed results after the delay, up to max_retries; other results are final', async () => {
    const [a, b, c, d] = [num(), num(), num(), num()];
    const id = await create({
      contacts: [a, b, c, d].map((to_number) => ({ to_number })),
      schedule: { windows: ALWAYS },
      pacing: { calls_per_minute: 600, max_concurrent: 10 },
      retry: { on: ['busy', 'no_answer'], max_retries: 2, delay_minutes: 30 },
    });
    const t = at('2027-02-04T12:00:00Z');
    expect((await tick(id, t)).dialed).toBe(4);
    const first = new Map((await callsOf(id)).map((x) => [x.to_number, x.id]));
    await end(first.get(a)!, 'busy');
    await end(first.get(b)!, 'answered');
    await end(first.get(c)!, 'voicemail');
    await end(first.get(d)!, 'carrier_error');
    const seen = plus(t, 5);
    await tick(id, seen);
    const byNumber = async () => new Map((await contacts(id)).map((x) => [x.to_number, x]));
    let cs = await byNumber();
    expect(cs.get(a)).toMatchObject({ state: 'retrying', attempts: 1, last_result: 'busy', next_attempt_at: plus(seen, 1800) });
    expect(cs.get(b)).toMatchObject({ state: 'completed', last_result: 'completed' });
    expect(cs.get(c)).toMatchObject({ state: 'completed', last_result: 'voicemail' });
    expect(cs.get(d)).toMatchObject({ state: 'failed', last_result: 'failed' });
    // Not before the delay.
    expect((await tick(id, plus(seen, 1799))).dialed).toBe(0);
    expect((await tick(id, plus(seen, 1800))).dialed).toBe(1);
    let attempts = (await callsOf(id)).filter((x) => x.to_number === a);
    expect(attempts.map((x) => x.campaign_attempt)).toEqual([1, 2]);
    await end(attempts[1]!.id, 'no_answer');
    const seen2 = plus(seen, 1810);
    await tick(id, seen2);
    expect((await byNumber()).get(a)).toMatchObject({ state: 'retrying', attempts: 2, last_result: 'no_answer' });
    expect((await tick(id, plus(seen2, 1800))).dialed).toBe(1);
    attempts = (await callsOf(id)).filter((x) => x.to_number === a);
    await end(attempts[2]!.id, 'busy');
    await tick(id, plus(seen2, 1810));
    cs = await byNumber();
    // Retries used up: failed, and with every contact final the campaign completes.
    expect(cs.get(a)).toMatchObject({ state: 'failed', attempts: 3, last_result: 'busy' });
    const done = await campaign(id);
    expect(done).toMatchObject({ status: 'completed', attempts: 6, contacts: { completed: 2, failed: 2 } });
    const [ev] = await eventsOf(id, 'campaign.completed');
    expect(ev!.payload).toMatchObject({ campaign_id: id, contacts: { completed: 2, failed: 2, pending: 0 } });
    // The export shows each attempt.
    const csv = await (await fetch(`${tp.url}/v1/campaigns/${id}/export.csv`, { headers: { authorization: `Bearer ${org.key}` } })).text();
    expect(csv.split('\r\n')[1]).toContain(',failed,,3,busy,,');
    expect(csv.split('\r\n')[1]).toContain('busy;no_answer;busy');
  });

  it('the state after an attempt (unit)', () => {
    const rules = { ...DEFAULT_RETRY, on: ['voicemail' as const], max_retries: 1 };
    expect(afterAttempt('voicemail', 1, rules)).toEqual({ state: 'retrying', retryInMinutes: 60 });
    expect(afterAttempt('voicemail', 2, rules)).toEqual({ state: 'failed' });
    expect(afterAttempt('voicemail', 1, rules, { canceled: true })).toEqual({ state: 'failed' });
    expect(afterAttempt('busy', 1, rules)).toEqual({ state: 'failed' });
    expect(afterAttempt('completed', 1, rules)).toEqual({ state: 'completed' });
    expect(afterAttempt('not_allowed', 1, rules, { endReason: 'do_not_call' })).toEqual({ state: 'skipped', skipReason: 'do_not_call' });
    expect(failureRateTripped({ failure_rate: 0.3, window: 4, results: ['failed'] }, ['failed', 'busy', 'completed'])).toBeNull();
    expect(failureRateTripped({ failure_rate: 0.3, window: 4, results: ['failed'] }, ['busy', 'failed', 'failed', 'completed', 'completed'])).toEqual({ rate: 0.5 });
  });
});

describe('auto-pause, pause, resume, cancel, do-not-call, end', () => {
  it('pauses itself when the failure rate of the last attempts is over stop_on, and resumes with a fresh window', async () => {
    const id = await create({
      contacts: Array.from({ length: 10 }, () => ({ to_number: num() })),
      schedule: { windows: ALWAYS },
      pacing: { calls_per_minute: 600, max_concurrent: 5 },
      stop_on: { failure_rate: 0.3, window: 5 },
    });
    const t = at('2027-02-05T12:00:00Z');
    expect((await tick(id, t)).dialed).toBe(5);
    const calls = await callsOf(id);
    await end(calls[0]!.id, 'carrier_error');
    await end(calls[1]!.id, 'carrier_error');
    for (const c of calls.slice(2)) await end(c.id, 'busy');
    const r = await tick(id, plus(t, 5));
    expect(r.dialed).toBe(0);
    expect(await campaign(id)).toMatchObject({ status: 'paused', pause_reason: 'failure_rate' });
    const [ev] = await eventsOf(id, 'campaign.paused');
    expect(ev!.payload).toMatchObject({ reason: 'failure_rate', failure_rate: 0.4, window: 5 });
    // Paused: no calls, however long.
    expect((await tick(id, plus(t, 600))).dialed).toBe(0);
    const resumed = await tp.request('patch', `/v1/campaigns/${id}`, { key: org.key, body: { status: 'running' } });
    expect(resumed.body).toMatchObject({ status: 'running', pause_reason: null });
    expect((await tick(id, plus(t, 610))).dialed).toBe(5);
  });

  it('a manual pause stops new calls while live ones finish and are recorded', async () => {
    const id = await create({ contacts: Array.from({ length: 4 }, () => ({ to_number: num() })), schedule: { windows: ALWAYS }, pacing: { calls_per_minute: 600, max_concurrent: 2 } });
    const t = at('2027-02-06T12:00:00Z');
    expect((await tick(id, t)).dialed).toBe(2);
    await tp.request('patch', `/v1/campaigns/${id}`, { key: org.key, body: { status: 'paused' } });
    for (const c of await callsOf(id)) await end(c.id, 'answered');
    expect((await tick(id, plus(t, 5))).dialed).toBe(0);
    expect((await campaign(id)).contacts).toMatchObject({ completed: 2, pending: 2 });
    await tp.request('patch', `/v1/campaigns/${id}`, { key: org.key, body: { status: 'running' } });
    expect((await tick(id, plus(t, 10))).dialed).toBe(2);
  });

  it('cancel mid-campaign: queued attempts stop, live calls finish and are recorded, then the scheduler stops', async () => {
    const id = await create({ contacts: Array.from({ length: 5 }, () => ({ to_number: num() })), schedule: { windows: ALWAYS }, pacing: { calls_per_minute: 600, max_concurrent: 2 } });
    const t = at('2027-02-07T12:00:00Z');
    expect((await tick(id, t)).dialed).toBe(2);
    const [ringing, queued] = await callsOf(id);
    await tp.sql`update calls set status = 'initiated', dialed_at = now() where id = ${ringing!.id}`;
    const res = await tp.request('post', `/v1/campaigns/${id}/cancel`, { key: org.key });
    expect(res.body).toMatchObject({ status: 'canceled', contacts: { canceled: 3, scheduled: 2 } });
    expect((await getCallById(tp.sql, queued!.id))!).toMatchObject({ status: 'failed', end_reason: 'canceled' });
    const r1 = await tick(id, plus(t, 1));
    expect(r1).toMatchObject({ dialed: 0, ended: 1 });
    expect(r1.next).not.toBeNull(); // the ringing call is still live
    await tp.sql`update calls set status = 'in_progress', started_at = now() where id = ${ringing!.id}`;
    await end(ringing!.id, 'answered');
    const r2 = await tick(id, plus(t, 2));
    expect(r2).toMatchObject({ dialed: 0, ended: 1, next: null, outcome: 'done' });
    expect((await campaign(id)).contacts).toMatchObject({ canceled: 4, completed: 1 });
  });

  it('a number added to the do-not-call list mid-campaign is not called again: its retry and a pending contact are skipped', async () => {
    const [a, b, c] = [num(), num(), num()];
    const id = await create({
      contacts: [a, b, c].map((to_number) => ({ to_number })),
      schedule: { windows: ALWAYS },
      pacing: { calls_per_minute: 600, max_concurrent: 1 },
      retry: { on: ['busy'], max_retries: 1, delay_minutes: 10 },
    });
    const t = at('2027-02-08T12:00:00Z');
    expect((await tick(id, t)).dialed).toBe(1);
    const [first] = await callsOf(id);
    expect(first!.to_number).toBe(a);
    await end(first!.id, 'busy');
    await tp.request('post', '/v1/do-not-call', { key: org.key, body: { phone_number: a } });
    await tp.request('post', '/v1/do-not-call', { key: org.key, body: { phone_number: b } });
    // b is due now and listed: skipped, and c is called instead.
    expect((await tick(id, plus(t, 1))).dialed).toBe(1);
    const called = (await callsOf(id)).map((x) => x.to_number);
    expect(called).toEqual([a, c]);
    await end((await callsOf(id))[1]!.id, 'answered');
    // a's retry comes due: skipped, never dialled.
    await tick(id, plus(t, 700));
    const cs = await contacts(id);
    expect(cs.map((x) => [x.to_number, x.state, x.skip_reason])).toEqual([
      [a, 'skipped', 'do_not_call'],
      [b, 'skipped', 'do_not_call'],
      [c, 'completed', null],
    ]);
    expect((await callsOf(id)).map((x) => x.to_number)).toEqual([a, c]);
    expect((await campaign(id)).status).toBe('completed');
  });

  it('at end_at: contacts never tried are skipped (campaign_ended), retries waiting fail, live calls finish, then it completes', async () => {
    const endAt = new Date(Date.now() + 7 * 86400_000);
    const id = await create({
      contacts: Array.from({ length: 4 }, () => ({ to_number: num() })),
      schedule: { windows: ALWAYS, end_at: endAt.toISOString() },
      pacing: { calls_per_minute: 600, max_concurrent: 2 },
      retry: { on: ['busy'], max_retries: 3, delay_minutes: 60 },
    });
    const t = plus(endAt, -120);
    expect((await tick(id, t)).dialed).toBe(2);
    const [busy] = await callsOf(id);
    await end(busy!.id, 'busy');
    expect((await tick(id, plus(t, 10))).dialed).toBe(1);
    const after = plus(endAt, 1);
    expect((await tick(id, after)).dialed).toBe(0);
    expect((await contacts(id)).map((x) => x.state).sort()).toEqual(['failed', 'scheduled', 'scheduled', 'skipped']);
    expect((await campaign(id)).status).toBe('running');
    for (const c of (await callsOf(id)).filter((x) => x.status === 'queued')) await end(c.id, 'answered');
    await tick(id, plus(after, 1));
    const done = await campaign(id);
    expect(done).toMatchObject({ status: 'completed', contacts: { completed: 2, failed: 1, skipped: 1 } });
    expect((await contacts(id)).find((x) => x.state === 'skipped')!.skip_reason).toBe('campaign_ended');
  });

  it('pauses at the org\'s daily call limit, with the reason', async () => {
    const other = await tp.createOrg('capped');
    const cappedAgentId = await insertBareAgent(tp.sql, other.orgId);
    await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id) values (${other.orgId}, '+14155550152', 'simulated', ${cappedAgentId}, 'ST_cap')`;
    await tp.sql`update orgs set max_calls_per_day = 2, max_concurrent_calls = 10 where id = ${other.orgId}`;
    const res = await tp.request('post', '/v1/campaigns', {
      key: other.key,
      body: { name: 'capped', agent_id: cappedAgentId, contacts: Array.from({ length: 4 }, () => ({ to_number: num() })), schedule: { windows: ALWAYS }, pacing: { calls_per_minute: 600, max_concurrent: 5 } },
    });
    const id = res.body.id as string;
    expect((await tick(id, at('2027-02-09T12:00:00Z'))).dialed).toBe(2);
    const after = (await tp.request('get', `/v1/campaigns/${id}`, { key: other.key })).body;
    expect(after).toMatchObject({ status: 'paused', pause_reason: 'daily_call_limit', contacts: { pending: 2, scheduled: 2 } });
    expect((await eventsOf(id, 'campaign.paused'))[0]!.payload).toMatchObject({ reason: 'daily_call_limit' });
  });

  it('a scheduled campaign starts at start_at (campaign.started), not before', async () => {
    const start = new Date(Date.now() + 2 * 86400_000);
    const id = await create({ contacts: [{ to_number: num() }], schedule: { start_at: start.toISOString(), windows: ALWAYS } });
    expect((await campaign(id)).status).toBe('scheduled');
    expect((await tick(id, plus(start, -1))).dialed).toBe(0);
    expect(await eventsOf(id, 'campaign.started')).toHaveLength(0);
    expect((await tick(id, start)).dialed).toBe(1);
    expect((await campaign(id)).status).toBe('running');
    expect((await eventsOf(id, 'campaign.started'))[0]!.payload).toMatchObject({ contacts: 1 });
  });
});
