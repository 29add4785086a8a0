// A call's deliveries on a webhook (`call_id`), and retrying a delivery: a new attempt through the delivery
// worker to a real local receiver, 409 while one waits, 404 for another organisation's, 422 for bad ids.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { usePlatform } from '../../../../test/support/platform.ts';
import { eventually, Receiver } from '../../../../test/support/webhook-receiver.ts';
import { emitEvent } from '../events/emit.ts';

const tp = await usePlatform({
  SSRF_ALLOWLIST: '127.0.0.1',
  WEBHOOK_TIMEOUT_MS: 5000,
  // One automatic retry: an event's attempts are used up after two.
  WEBHOOK_RETRY_SCHEDULE: '50ms',
  WEBHOOK_POLL_INTERVAL_MS: 200,
});
const rx = new Receiver();
let org: { orgId: string; key: string };
let other: { orgId: string; key: string };

beforeAll(async () => {
  await rx.start();
  org = await tp.createOrg('retries');
  other = await tp.createOrg('retries neighbour');
});
afterAll(() => rx.close());

async function createWebhook(path: string, key = org.key) {
  const res = await tp.request('post', '/v1/webhooks', { key, body: { name: path, url: rx.url(path), events: ['call.ended'] } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string };
}

const ended = (callId: string, orgId = org.orgId) =>
  tp.sql.begin((tx) =>
    emitEvent(tx, {
      orgId,
      type: 'call.ended',
      callId,
      webhookUrl: null,
      payload: {
        call_id: callId,
        agent_id: randomUUID(),
        status: 'completed',
        duration_seconds: 42,
        to_number: null,
        from_number: null,
        outcome: null,
        ai_summary: null,
        analysis: { summary: null, outcome: null, status: 'completed', method: null },
      },
    }),
  );

const deliveries = async (webhookId: string, query = '', key = org.key) => tp.request('get', `/v1/webhooks/${webhookId}/deliveries${query}`, { key });
const retry = (webhookId: string, deliveryId: string, key = org.key) => tp.request('post', `/v1/webhooks/${webhookId}/deliveries/${deliveryId}/retry`, { key });

describe("a call's deliveries", () => {
  it("filters a webhook's deliveries by call_id", async () => {
    const w = await createWebhook('/by-call');
    const [a, b] = [randomUUID(), randomUUID()];
    await ended(a);
    await ended(b);
    await eventually(async () => (await deliveries(w.id)).body.total === 2, 'two deliveries');
    const onlyA = await deliveries(w.id, `?call_id=${a}`);
    expect(onlyA.status).toBe(200);
    expect(onlyA.body.total).toBe(1);
    const [eventA] = await tp.sql`select id from events where call_id = ${a}`;
    expect(onlyA.body.items[0].event_id).toBe(eventA!.id);
    expect((await deliveries(w.id, `?call_id=${randomUUID()}`)).body).toMatchObject({ items: [], total: 0 });
    const bad = await deliveries(w.id, '?call_id=nope');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['query', 'call_id'], type: 'uuid_parsing' });
  });
});

describe('POST /v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry', () => {
  it('sends the event again as a new attempt through the delivery worker, after the schedule was used up', async () => {
    const w = await createWebhook('/down');
    // Down for the two scheduled attempts, up for the retry.
    rx.script('/down', (_r, n) => (n <= 2 ? { status: 503, body: `down ${n}` } : { status: 204 }));
    const ev = await ended(randomUUID());
    const gaveUp = await eventually(async () => {
      const l = (await deliveries(w.id)).body;
      return l.total === 2 && l.items[0].status === 'failed' ? l : null;
    }, 'the last scheduled attempt');
    const res = await retry(w.id, gaveUp.items[0].id);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toEqual({ delivery_id: gaveUp.items[0].id, webhook_id: w.id, event_id: ev.id, event: 'call.ended', attempt: 3, status: 'pending' });
    const after = await eventually(async () => {
      const l = (await deliveries(w.id)).body;
      return l.total === 3 ? l : null;
    }, 'the retried attempt');
    expect(after.items[0]).toMatchObject({ attempt: 3, status: 'succeeded', response_status: 204, event_id: ev.id });
    // The same event id (webhook-id header) every time: receivers deduplicate on it.
    expect(new Set(rx.at('/down').map((r) => r.headers['webhook-id']))).toEqual(new Set([ev.id]));
    const audit = await tp.request('get', '/v1/audit-events?resource_type=webhook', { key: org.key });
    expect(audit.body.items.find((a: { action: string }) => a.action === 'webhook.delivery_retry')).toMatchObject({
      resource_id: w.id,
      details: { delivery_id: gaveUp.items[0].id, event_id: ev.id, attempt: 3 },
    });
  });

  it('holds the attempt of an inactive webhook, answers 409 while it waits, and sends it when the webhook is active', async () => {
    const w = await createWebhook('/paused');
    await ended(randomUUID());
    const first = await eventually(async () => (await deliveries(w.id)).body.items[0], 'the first delivery');
    expect(first.status).toBe('succeeded');
    expect((await tp.request('patch', `/v1/webhooks/${w.id}`, { key: org.key, body: { status: 'inactive' } })).status).toBe(200);
    const held = await retry(w.id, first.id);
    expect(held.status).toBe(202);
    expect(held.body).toMatchObject({ attempt: 2, status: 'paused' });
    const again = await retry(w.id, first.id);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ type: 'conflict' });
    expect(rx.at('/paused')).toHaveLength(1);
    expect((await tp.request('patch', `/v1/webhooks/${w.id}`, { key: org.key, body: { status: 'active' } })).status).toBe(200);
    const sent = await eventually(async () => {
      const l = (await deliveries(w.id)).body;
      return l.total === 2 ? l.items[0] : null;
    }, 'the held attempt');
    expect(sent).toMatchObject({ attempt: 2, status: 'succeeded' });
    expect(rx.at('/paused')).toHaveLength(2);
  });

  it("is a 404 for another organisation's delivery or webhook, and for a delivery of another webhook", async () => {
    const w = await createWebhook('/mine');
    await ended(randomUUID());
    const d = await eventually(async () => (await deliveries(w.id)).body.items[0], 'the delivery');
    const theirs = await retry(w.id, d.id, other.key);
    expect(theirs.status).toBe(404);
    expect(theirs.body).toMatchObject({ type: 'not_found' });
    const otherHook = await createWebhook('/theirs', other.key);
    expect((await retry(otherHook.id, d.id, other.key)).status).toBe(404);
    const sibling = await createWebhook('/sibling');
    expect((await retry(sibling.id, d.id)).status).toBe(404);
    expect((await retry(w.id, randomUUID())).status).toBe(404);
    // The neighbour's call filter finds nothing of ours either.
    const [ev] = await tp.sql`select call_id from events where id = ${d.event_id}`;
    expect((await deliveries(otherHook.id, `?call_id=${ev!.call_id}`, other.key)).body).toMatchObject({ items: [], total: 0 });
    expect(rx.at('/mine')).toHaveLength(1);
  });

  it('answers 422 for malformed ids', async () => {
    const w = await createWebhook('/ids');
    const bad = await retry(w.id, 'not-a-uuid');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['path', 'delivery_id'], type: 'uuid_parsing' });
    expect((await retry('nope', randomUUID())).body.detail[0]).toMatchObject({ loc: ['path', 'webhook_id'] });
  });
});
