// Webhooks end to end: the API, and delivery to a real local receiver, verified with the independent
// `standardwebhooks` package. Retries are shortened by config (the production schedule is in retry.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { usePlatform } from '../../../../test/support/platform.ts';
import { eventually, Receiver } from '../../../../test/support/webhook-receiver.ts';
import { emitEvent } from '../events/emit.ts';
import type { CallEventName, StoredPayload } from '../../../../shared/events.ts';

const tp = await usePlatform({
  SSRF_ALLOWLIST: '127.0.0.1',
  // A receiver on loopback answers well within this even on a loaded machine (at 700 ms, a slow answer at load
  // 24 became a timeout and a retry); only the receivers scripted to hang reach it.
  WEBHOOK_TIMEOUT_MS: 5000,
  WEBHOOK_RETRY_SCHEDULE: '50ms,50ms,50ms',
  WEBHOOK_POLL_INTERVAL_MS: 200,
});
const rx = new Receiver();
let org: { orgId: string; key: string };

beforeAll(async () => {
  await rx.start();
  org = await tp.createOrg('hooks');
});
afterAll(() => rx.close());

async function createWebhook(path: string, events: string[] = ['*'], key = org.key) {
  const res = await tp.request('post', '/v1/webhooks', { key, body: { name: path, url: rx.url(path), events } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; secret: string; url: string };
}

function payloadOf<T extends CallEventName>(type: T, callId: string): StoredPayload<T> {
  const agent = '5f0e2c1a-1111-4222-8333-444455556666';
  const p: Record<CallEventName, unknown> = {
    'call.started': { call_id: callId, agent_id: agent, to_number: '+14155550100', from_number: '+14155550199' },
    'call.ended': {
      call_id: callId, agent_id: agent, status: 'completed', duration_seconds: 42, to_number: '+14155550100', from_number: '+14155550199',
      outcome: null, ai_summary: null, analysis: { summary: null, outcome: null, status: 'completed', method: null },
    },
    'call.analyzed': { call_id: callId, agent_id: agent, outcome: 'booked', ai_summary: 'Booked a table.' },
    'call.failed': { call_id: callId, agent_id: agent, to_number: '+14155550100', from_number: null, reason: 'busy' },
    'call.recording.available': { call_id: callId, recording_api_url: `https://api.example.com/v1/calls/${callId}/recording` },
    'transcript.partial': { call_id: callId, messages: [{ role: 'user', content: 'hi' }] },
    'transcript.final': { call_id: callId, messages: [{ role: 'agent', content: 'hello' }, { role: 'user', content: 'hi' }] },
    'call.handoff': {
      call_id: callId, agent_id: agent, squad_id: randomUUID(), from_agent_id: agent, to_agent_id: randomUUID(), reason: 'billing question', context: 'full', index: 1,
      at: '2026-11-27T10:00:00.000Z',
    },
    'call.supervised': {
      call_id: callId, agent_id: agent, seq: 1, action: 'whisper', actor_type: 'api_key', actor_id: randomUUID(), at: '2026-11-27T10:00:00.000Z', details: { text: 'Offer the premium slot.' },
    },
  };
  return p[type] as StoredPayload<T>;
}

const emit = (type: CallEventName, callId = randomUUID(), extra: { webhookUrl?: string; orgId?: string } = {}) =>
  tp.sql.begin((tx) => emitEvent(tx, { orgId: extra.orgId ?? org.orgId, type, callId, webhookUrl: extra.webhookUrl ?? null, payload: payloadOf(type, callId) }));

const deliveries = async (webhookId: string, query = '') => (await tp.request('get', `/v1/webhooks/${webhookId}/deliveries${query}`, { key: org.key })).body;

describe('webhooks API', () => {
  it('creates with a one-time whsec_ secret, lists, gets, updates and deletes', async () => {
    const res = await tp.request('post', '/v1/webhooks', { key: org.key, body: { name: 'crm', url: 'https://hooks.example.com/a', events: ['call.ended'] } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'crm', url: 'https://hooks.example.com/a', events: ['call.ended'], status: 'active', disabled_reason: null });
    expect(res.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const id = res.body.id;

    const got = await tp.request('get', `/v1/webhooks/${id}`, { key: org.key });
    expect(got.status).toBe(200);
    expect(got.body.secret).toBeUndefined();
    const list = await tp.request('get', '/v1/webhooks', { key: org.key });
    expect(list.body.items.map((w: { id: string }) => w.id)).toContain(id);
    expect(list.body.total).toBe(list.body.items.length);

    const patched = await tp.request('patch', `/v1/webhooks/${id}`, { key: org.key, body: { events: ['call.started', 'transcript.final'], status: 'inactive', name: 'crm2' } });
    expect(patched.body).toMatchObject({ name: 'crm2', events: ['call.started', 'transcript.final'], status: 'inactive' });

    const rotated = await tp.request('post', `/v1/webhooks/${id}/rotate-secret`, { key: org.key });
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(res.body.secret);

    expect((await tp.request('delete', `/v1/webhooks/${id}`, { key: org.key })).status).toBe(204);
    expect((await tp.request('get', `/v1/webhooks/${id}`, { key: org.key })).status).toBe(404);
    const audit = await tp.request('get', `/v1/audit-events?resource_type=webhook`, { key: org.key });
    expect(audit.body.items.map((e: { action: string }) => e.action)).toEqual(
      expect.arrayContaining(['webhook.create', 'webhook.update', 'webhook.rotate_secret', 'webhook.delete']),
    );
    expect(JSON.stringify(audit.body)).not.toContain('whsec_');
  });

  it('validates event names, accepts "*", and refuses URLs that are not public', async () => {
    const bad = await tp.request('post', '/v1/webhooks', { key: org.key, body: { name: 'x', url: 'https://hooks.example.com', events: ['call.exploded'] } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['body', 'events', 0], type: 'enum' });
    const star = await tp.request('post', '/v1/webhooks', { key: org.key, body: { name: 'x', url: 'https://hooks.example.com', events: ['*'] } });
    expect(star.status).toBe(201);
    for (const url of ['http://10.0.0.8/hook', 'http://169.254.169.254/latest/meta-data', 'http://[::1]:8080/', 'http://localhost/x', 'ftp://hooks.example.com/']) {
      const res = await tp.request('post', '/v1/webhooks', { key: org.key, body: { name: 'x', url, events: ['*'] } });
      expect(res.status, url).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'url']);
    }
    const empty = await tp.request('post', '/v1/webhooks', { key: org.key, body: { name: 'x', url: 'https://hooks.example.com', events: [] } });
    expect(empty.body.detail[0]).toMatchObject({ loc: ['body', 'events'], type: 'too_short' });
  });

  it('answers 422 for bad list queries of deliveries', async () => {
    const w = await createWebhook('/q');
    const cases: [string, unknown[], string][] = [
      [`/v1/webhooks/not-a-uuid/deliveries`, ['path', 'webhook_id'], 'uuid_parsing'],
      [`/v1/webhooks/${w.id}/deliveries?limit=0`, ['query', 'limit'], 'greater_than_equal'],
      [`/v1/webhooks/${w.id}/deliveries?limit=201`, ['query', 'limit'], 'less_than_equal'],
      [`/v1/webhooks/${w.id}/deliveries?limit=abc`, ['query', 'limit'], 'int_type'],
      [`/v1/webhooks/${w.id}/deliveries?offset=-1`, ['query', 'offset'], 'greater_than_equal'],
      [`/v1/webhooks/${w.id}/deliveries?status=lost`, ['query', 'status'], 'enum'],
      [`/v1/webhooks/${w.id}/deliveries?event=call.exploded`, ['query', 'event'], 'enum'],
    ];
    for (const [path, loc, type] of cases) {
      const res = await tp.request('get', path, { key: org.key });
      expect(res.status, path).toBe(422);
      expect(res.body.detail[0], path).toMatchObject({ loc, type });
    }
    const ok = await tp.request('get', `/v1/webhooks/${w.id}/deliveries?limit=200&offset=0`, { key: org.key });
    expect(ok.body).toEqual({ items: [], total: 0, limit: 200, offset: 0 });
    expect((await tp.request('get', `/v1/webhooks/${w.id}/deliveries`, { key: org.key })).body.limit).toBe(50);
  });
});

describe('delivery', () => {
  it('signs with Standard Webhooks headers that the standardwebhooks package verifies', async () => {
    const w = await createWebhook('/signed', ['call.started']);
    const callId = randomUUID();
    const ev = await emit('call.started', callId);
    await rx.until(() => rx.at('/signed').length === 1, 'the signed delivery');
    const req = rx.at('/signed')[0]!;
    const verified = new StandardWebhook(w.secret).verify(req.body, req.headers as Record<string, string>);
    expect(verified).toEqual({
      id: ev.id,
      event: 'call.started',
      created_at: ev.createdAt,
      call_id: callId,
      agent_id: '5f0e2c1a-1111-4222-8333-444455556666',
      to_number: '+14155550100',
      from_number: '+14155550199',
    });
    expect(req.headers['webhook-id']).toBe(ev.id);
    expect(req.headers['content-type']).toBe('application/json');
    expect(() => new StandardWebhook(w.secret).verify(req.body.replace('call.started', 'call.ended'), req.headers as Record<string, string>)).toThrow();
    const d = await eventually(async () => (await deliveries(w.id)).items[0], 'the delivery record');
    expect(d).toMatchObject({ webhook_id: w.id, event_id: ev.id, event: 'call.started', status: 'succeeded', attempt: 1, response_status: 200, response_body: 'ok', error: null, next_retry_at: null });
  });

  it('retries a receiver that fails twice, giving three records and one success', async () => {
    const w = await createWebhook('/flaky', ['call.ended']);
    rx.script('/flaky', (_r, n) => (n <= 2 ? { status: 503, body: `down ${n}` } : { status: 204 }));
    const ev = await emit('call.ended');
    const list = await eventually(async () => {
      const l = await deliveries(w.id);
      return l.total === 3 && l.items[0].status === 'succeeded' ? l : null;
    }, 'three attempts');
    expect(list.items.map((d: any) => [d.attempt, d.status, d.response_status, d.response_body])).toEqual([
      [3, 'succeeded', 204, ''],
      [2, 'retrying', 503, 'down 2'],
      [1, 'retrying', 503, 'down 1'],
    ]);
    expect(new Set(rx.at('/flaky').map((r) => r.headers['webhook-id']))).toEqual(new Set([ev.id]));
    expect(list.items[1].next_retry_at).not.toBeNull();
    expect(list.items[1].error).toBe('unexpected status 503');
    expect((await deliveries(w.id, '?status=succeeded')).total).toBe(1);
    expect((await deliveries(w.id, '?event=call.started')).total).toBe(0);
  });

  it('retries a 4xx answer on the schedule, as every answer that is not a 2xx, and 429 no earlier than its Retry-After', async () => {
    const w = await createWebhook('/reject', ['call.ended']);
    rx.script('/reject', (_r, n) => (n === 1 ? { status: 400, body: 'bad payload' } : { status: 200 }));
    await emit('call.ended');
    const r = await eventually(async () => {
      const x = await deliveries(w.id);
      return x.total === 2 ? x : null;
    }, '4xx then success');
    expect(r.items[1]).toMatchObject({ status: 'retrying', attempt: 1, response_status: 400, response_body: 'bad payload' });
    expect(r.items[1].next_retry_at).not.toBeNull();
    expect(r.items[0]).toMatchObject({ status: 'succeeded', attempt: 2 });

    const slow = await createWebhook('/busy', ['call.ended']);
    rx.script('/busy', (_r, n) => (n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
    await emit('call.ended');
    const l = await eventually(async () => {
      const x = await deliveries(slow.id);
      return x.total === 2 ? x : null;
    }, 'retry after Retry-After');
    const first = l.items[1];
    expect(first).toMatchObject({ status: 'retrying', response_status: 429 });
    expect(Date.parse(first.next_retry_at) - Date.parse(first.completed_at)).toBeGreaterThanOrEqual(1000);
    expect(Date.parse(l.items[0].created_at)).toBeGreaterThanOrEqual(Date.parse(first.next_retry_at));
  });

  it('records a timeout and retries it', async () => {
    const w = await createWebhook('/hang', ['call.ended']);
    rx.script('/hang', (_r, n) => (n === 1 ? { hang: true } : { status: 200 }));
    await emit('call.ended');
    const l = await eventually(async () => {
      const x = await deliveries(w.id);
      return x.total === 2 ? x : null;
    }, 'timeout then success');
    expect(l.items[1]).toMatchObject({ status: 'retrying', response_status: null, error: expect.stringMatching(/^timeout/) });
    expect(l.items[0]).toMatchObject({ status: 'succeeded', attempt: 2 });
  });

  it('gives up after the last retry of the schedule', async () => {
    const w = await createWebhook('/dead', ['call.ended']);
    rx.script('/dead', () => ({ status: 500 }));
    await emit('call.ended');
    const l = await eventually(async () => {
      const x = await deliveries(w.id);
      return x.items[0]?.status === 'failed' ? x : null;
    }, 'final failure');
    expect(l.items.map((d: any) => d.status)).toEqual(['failed', 'retrying', 'retrying', 'retrying']);
    const [wh] = await tp.sql`select failing_since from webhooks where id = ${w.id}`;
    expect(wh!.failing_since).not.toBeNull();
  });

  it('holds deliveries while inactive and sends them when active again', async () => {
    const w = await createWebhook('/paused', ['call.ended']);
    const sentinel = await createWebhook('/sentinel', ['call.analyzed']);
    await tp.request('patch', `/v1/webhooks/${w.id}`, { key: org.key, body: { status: 'inactive' } });
    const ev = await emit('call.ended');
    await emit('call.analyzed');
    // The dispatcher has run (a later event reached another endpoint), and the paused one waited.
    await rx.until(() => rx.at('/sentinel').length === 1, 'the sentinel');
    expect(rx.at('/paused')).toHaveLength(0);
    const [m] = await tp.sql`select status from webhook_messages where event_id = ${ev.id} and webhook_id = ${w.id}`;
    expect(m!.status).toBe('paused');
    expect(sentinel.id).toBeTruthy();

    await tp.request('patch', `/v1/webhooks/${w.id}`, { key: org.key, body: { status: 'active' } });
    await rx.until(() => rx.at('/paused').length === 1, 'the resumed delivery');
    expect(rx.at('/paused')[0]!.json.id).toBe(ev.id);
  });

  it('stops sending at once when the webhook is deleted', async () => {
    const w = await createWebhook('/deleted', ['call.ended', 'call.started']);
    // First message: fails and asks to come back in an hour. Second: hangs in flight.
    rx.script('/deleted', (r) => (r.json.event === 'call.ended' ? { status: 503, headers: { 'retry-after': '3600' } } : { hang: true }));
    await emit('call.ended');
    await emit('call.started');
    await rx.until(() => rx.at('/deleted').length === 2, 'both requests');
    await eventually(async () => (await deliveries(w.id)).total === 1, 'the first record');
    expect((await tp.request('delete', `/v1/webhooks/${w.id}`, { key: org.key })).status).toBe(204);
    // The request in flight is aborted, and nothing is left to send or to list.
    await rx.until(() => rx.at('/deleted')[1]!.aborted, 'the in-flight request to be aborted');
    const [c] = await tp.sql`select count(*)::int as n from webhook_messages where webhook_id = ${w.id}`;
    expect(c!.n).toBe(0);
    expect((await tp.request('get', `/v1/webhooks/${w.id}/deliveries`, { key: org.key })).status).toBe(404);
    const [d] = await tp.sql`select count(*)::int as n from webhook_deliveries where webhook_id = ${w.id}`;
    expect(d!.n).toBe(0);
  });

  it('keeps per-call order across retries, and lets a finally failed event pass', async () => {
    await createWebhook('/ordered', ['*']);
    const call = randomUUID();
    const other = randomUUID();
    // call.started fails twice (retried), call.ended then succeeds; the other call is not held up.
    rx.script('/ordered', (r) => {
      const tries = rx.at('/ordered').filter((x) => x.json.id === r.json.id).length;
      return r.json.event === 'call.started' && r.json.call_id === call && tries <= 2 ? { status: 500 } : { status: 200 };
    });
    await emit('call.started', call);
    await emit('call.ended', call);
    await emit('transcript.final', call);
    await emit('call.analyzed', call);
    await emit('call.started', other);
    await rx.until(() => rx.at('/ordered').filter((r) => r.json.call_id === call).length === 6, 'all attempts of the call');
    const seq = rx.at('/ordered').filter((r) => r.json.call_id === call).map((r) => r.json.event);
    expect(seq).toEqual(['call.started', 'call.started', 'call.started', 'call.ended', 'transcript.final', 'call.analyzed']);
    await rx.until(() => rx.at('/ordered').some((r) => r.json.call_id === other), 'the other call');

    // A 4xx is retried like a 5xx: the call's next event waits for it.
    const call2 = randomUUID();
    rx.script('/ordered', (r) => {
      const tries = rx.at('/ordered').filter((x) => x.json.id === r.json.id).length;
      return r.json.event === 'call.started' && tries <= 1 ? { status: 404 } : { status: 200 };
    });
    await emit('call.started', call2);
    await emit('call.ended', call2);
    await rx.until(() => rx.at('/ordered').filter((r) => r.json.call_id === call2).length === 3, 'the second call');
    expect(rx.at('/ordered').filter((r) => r.json.call_id === call2).map((r) => r.json.event)).toEqual(['call.started', 'call.started', 'call.ended']);
  });

  it('sets a webhook inactive when its receiver answers 410 Gone, and holds its messages until it is active again', async () => {
    const w = await createWebhook('/gone', ['call.started', 'call.ended']);
    rx.script('/gone', () => ({ status: 410 }));
    const call = randomUUID();
    const first = await emit('call.started', call);
    await emit('call.ended', call);
    await eventually(async () => (await tp.request('get', `/v1/webhooks/${w.id}`, { key: org.key })).body.status === 'inactive', 'the webhook set inactive');
    const got = (await tp.request('get', `/v1/webhooks/${w.id}`, { key: org.key })).body;
    expect(got).toMatchObject({ status: 'inactive', disabled_reason: 'gone' });
    const audit = await tp.request('get', '/v1/audit-events?action=webhook.disable', { key: org.key });
    expect(audit.body.items.some((a: any) => a.resource_id === w.id && a.details.reason === 'gone')).toBe(true);
    // Nothing is dropped: both events are held, in order, and go out once the receiver is back. An event
    // emitted while the webhook was being disabled may still read 'pending': the dispatcher never claims a
    // message of an inactive webhook, and the housekeeping pauses it.
    const held = await tp.sql`select status from webhook_messages where webhook_id = ${w.id} order by id`;
    expect(held).toHaveLength(2);
    for (const m of held) expect(['paused', 'pending']).toContain(m.status);
    // The dispatcher has run since (a later event reached another endpoint), and sent nothing more to it.
    const sentinel = await createWebhook('/gone-sentinel', ['call.analyzed']);
    await emit('call.analyzed');
    await rx.until(() => rx.at('/gone-sentinel').length === 1, 'the sentinel');
    expect(sentinel.id).toBeTruthy();
    expect(rx.at('/gone')).toHaveLength(1);
    rx.script('/gone', () => ({ status: 200 }));
    await tp.request('patch', `/v1/webhooks/${w.id}`, { key: org.key, body: { status: 'active' } });
    await rx.until(() => rx.at('/gone').length === 3, 'the held events');
    expect(rx.at('/gone').map((r) => r.json.event)).toEqual(['call.started', 'call.started', 'call.ended']);
    expect(rx.at('/gone')[1]!.json.id).toBe(first.id);

    // A call's own URL answering 410 has no webhook to disable: that message fails for good.
    const call3 = randomUUID();
    await emit('call.ended', call3, { webhookUrl: rx.url('/gone-url') });
    rx.script('/gone-url', () => ({ status: 410 }));
    await rx.until(() => rx.at('/gone-url').length === 1, 'the call URL attempt');
    const [d] = await eventually(async () => {
      const r = await tp.sql`select status, attempt, response_status from webhook_deliveries where url = ${rx.url('/gone-url')}`;
      return r.length ? r : null;
    }, 'the call URL attempt record');
    expect(d).toMatchObject({ status: 'failed', attempt: 1, response_status: 410 });
  });

  it('checks addresses at delivery time and never follows redirects', async () => {
    const w = await createWebhook('/moved', ['call.ended']);
    rx.script('/moved', () => ({ status: 302, headers: { location: rx.url('/elsewhere') } }));
    await emit('call.ended');
    const [d] = (await eventually(async () => (await deliveries(w.id)).items.length && (await deliveries(w.id)).items, 'redirect record')) as any[];
    expect(d).toMatchObject({ response_status: 302, error: 'redirect not followed (status 302)' });
    expect(rx.at('/elsewhere')).toHaveLength(0);

    // A URL that became private after creation (changed behind the API's back) is refused when sending.
    const p = await createWebhook('/private', ['call.ended']);
    await tp.sql`update webhooks set url = 'http://127.0.0.2:9/hook' where id = ${p.id}`;
    await emit('call.ended');
    const [b] = (await eventually(async () => (await deliveries(p.id)).items.length && (await deliveries(p.id)).items, 'blocked record')) as any[];
    expect(b).toMatchObject({ response_status: null, error: expect.stringMatching(/^blocked: address 127\.0\.0\.2 is not public/) });
  });

  it('sends a test delivery and returns its record', async () => {
    const w = await createWebhook('/test-me', ['call.ended']);
    const res = await tp.request('post', `/v1/webhooks/${w.id}/test`, { key: org.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ webhook_id: w.id, event: 'webhook.test', status: 'succeeded', attempt: 1, response_status: 200 });
    const req = rx.at('/test-me')[0]!;
    const body = new StandardWebhook(w.secret).verify(req.body, req.headers as Record<string, string>) as any;
    expect(body).toMatchObject({ id: res.body.event_id, event: 'webhook.test', webhook_id: w.id });
    expect(Object.keys(body)).toEqual(['id', 'event', 'created_at', 'webhook_id', 'message']);

    rx.script('/test-me', () => ({ status: 500, body: 'nope' }));
    const failed = await tp.request('post', `/v1/webhooks/${w.id}/test`, { key: org.key });
    expect(failed.body).toMatchObject({ status: 'failed', response_status: 500, response_body: 'nope', next_retry_at: null });
  });

  it('signs with both secrets during a rotation', async () => {
    const w = await createWebhook('/rotated', ['call.ended']);
    const r = await tp.request('post', `/v1/webhooks/${w.id}/rotate-secret`, { key: org.key });
    await emit('call.ended');
    await rx.until(() => rx.at('/rotated').length === 1, 'the delivery');
    const req = rx.at('/rotated')[0]!;
    expect(String(req.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [w.secret, r.body.secret]) expect(() => new StandardWebhook(secret).verify(req.body, req.headers as Record<string, string>)).not.toThrow();
  });

  it("delivers a call's events to its own webhook_url, signed with the account's call secret", async () => {
    const call = randomUUID();
    await emit('call.failed', call, { webhookUrl: rx.url('/call-url') });
    await rx.until(() => rx.at('/call-url').length === 1, 'the call URL delivery');
    const secret = (await tp.request('get', '/v1/webhooks/call-signing-secret', { key: org.key })).body;
    expect(secret.secret).toMatch(/^whsec_/);
    const req = rx.at('/call-url')[0]!;
    expect(new StandardWebhook(secret.secret).verify(req.body, req.headers as Record<string, string>)).toMatchObject({ event: 'call.failed', call_id: call, reason: 'busy' });
  });

  it("lists a call's delivery attempts, to its own webhook_url and to the account's webhooks, at GET /v1/calls/{id}/deliveries", async () => {
    // An org of its own: the other tests' webhooks subscribed to '*' would get these events too.
    const solo = await tp.createOrg('per-call deliveries');
    const w = await createWebhook('/per-call', ['call.failed'], solo.key);
    const [llm] = await tp.sql`insert into llm_models (org_id, name, provider, model, temperature) values (${solo.orgId}, 'm', 'openai', 'gpt-4o-mini', 0.7) returning id`;
    const [agent] = await tp.sql`insert into agents (org_id, name, llm_id, transcriber, tts) values (${solo.orgId}, 'a', ${llm!.id}, '{}', '{}') returning id`;
    const [call] = await tp.sql`insert into calls (org_id, agent_id, type, status) values (${solo.orgId}, ${agent!.id}, 'outbound', 'failed') returning id`;
    const callId = call!.id as string;
    rx.script('/call-own', (_r, n) => (n === 1 ? { status: 500, body: 'down' } : { status: 200 }));
    const ev = await emit('call.failed', callId as ReturnType<typeof randomUUID>, { webhookUrl: rx.url('/call-own'), orgId: solo.orgId });
    await emit('call.failed', randomUUID(), { orgId: solo.orgId }); // another call's event: not listed
    const list = await eventually(async () => {
      const res = await tp.request('get', `/v1/calls/${callId}/deliveries`, { key: solo.key });
      return res.body.total === 3 ? res : null;
    }, "the call's three attempts");
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 3, limit: 50, offset: 0 });
    const own = list.body.items.filter((d: any) => d.webhook_id === null);
    expect(own.map((d: any) => [d.attempt, d.status, d.url])).toEqual([
      [2, 'succeeded', rx.url('/call-own')],
      [1, 'retrying', rx.url('/call-own')],
    ]);
    expect(list.body.items.filter((d: any) => d.webhook_id === w.id)).toHaveLength(1);
    expect(list.body.items.every((d: any) => d.event_id === ev.id)).toBe(true);
    const failed = await tp.request('get', `/v1/calls/${callId}/deliveries?status=retrying&limit=1`, { key: solo.key });
    expect(failed.body).toMatchObject({ total: 1, limit: 1, items: [{ status: 'retrying', response_body: 'down' }] });
    // Another organisation's call is a 404, like a missing one; bad queries are 422s.
    const stranger = await tp.createOrg('stranger');
    expect((await tp.request('get', `/v1/calls/${callId}/deliveries`, { key: stranger.key })).status).toBe(404);
    expect((await tp.request('get', `/v1/calls/${randomUUID()}/deliveries`, { key: solo.key })).status).toBe(404);
    const bad = await tp.request('get', `/v1/calls/${callId}/deliveries?limit=201`, { key: solo.key });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['query', 'limit'], type: 'less_than_equal' });
  });

  it('schedules the minute housekeeping with pg-boss', async () => {
    const schedules = await tp.platform.services.boss.getSchedules();
    expect(schedules.map((x) => [x.name, x.cron])).toContainEqual(['webhooks-maintenance', '* * * * *']);
  });

  it('disables an endpoint that has failed for too long, and audits it', async () => {
    const w = await createWebhook('/broken', ['call.ended']);
    rx.script('/broken', () => ({ status: 500 }));
    await tp.sql`update webhooks set failing_since = now() - interval '6 days' where id = ${w.id}`;
    await emit('call.ended');
    const got = await eventually(async () => {
      const x = (await tp.request('get', `/v1/webhooks/${w.id}`, { key: org.key })).body;
      return x.status === 'inactive' ? x : null;
    }, 'the webhook to be disabled');
    expect(got).toMatchObject({ disabled_reason: 'failing', disabled_at: expect.any(String) });
    const audit = await tp.request('get', `/v1/audit-events?action=webhook.disable`, { key: org.key });
    expect(audit.body.items[0]).toMatchObject({ actor_type: 'system', resource_id: w.id, details: { reason: 'failing' } });
    const back = await tp.request('patch', `/v1/webhooks/${w.id}`, { key: org.key, body: { status: 'active' } });
    expect(back.body).toMatchObject({ status: 'active', disabled_reason: null, failing_since: null });
  });
});
