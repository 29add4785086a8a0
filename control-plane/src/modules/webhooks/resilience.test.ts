// Delivery survives a process that stops between the commit and the delivery, and a hanging receiver does
// not hold up the others. Each case starts its own platform(s) with the settings it needs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startTestPlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { Receiver } from '../../../../test/support/webhook-receiver.ts';
import { emitEvent } from '../events/emit.ts';
import { runWebhookMaintenance } from './jobs.ts';

const rx = new Receiver();
beforeAll(() => rx.start());
afterAll(() => rx.close());

const started = (callId: string) => ({ call_id: callId, agent_id: randomUUID(), to_number: null, from_number: null });

async function webhook(tp: TestPlatform, key: string, path: string, events: string[]) {
  const res = await tp.request('post', '/v1/webhooks', { key, body: { name: path, url: rx.url(path), events } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

describe('crash safety', () => {
  it('delivers once an event committed by a process that stopped before delivering it', async () => {
    // A process that commits events but never delivers them (as if killed right after the commit).
    const first = await startTestPlatform({ JOBS_ENABLED: false, SSRF_ALLOWLIST: '127.0.0.1' });
    let second: TestPlatform | null = null;
    try {
      const org = await first.createOrg();
      const hook = await webhook(first, org.key, '/crash', ['call.started']);
      const callId = randomUUID();
      const ev = await first.sql.begin((tx) => emitEvent(tx, { orgId: org.orgId, type: 'call.started', callId, payload: started(callId) }));
      await first.platform.close();
      expect(rx.at('/crash')).toHaveLength(0);

      second = await startTestPlatform({
        DATABASE_URL: first.config.DATABASE_URL!,
        MASTER_KEY: first.config.MASTER_KEY!,
        SSRF_ALLOWLIST: '127.0.0.1',
        WEBHOOK_POLL_INTERVAL_MS: 200,
      });
      await rx.until(() => rx.at('/crash').length === 1, 'the delivery after restart');
      expect(rx.at('/crash')[0]!.json.id).toBe(ev.id);

      // A process that died after claiming (message left `delivering`): housekeeping hands it out again.
      // (Written while the webhook is paused, so no dispatcher takes it first.)
      await second.sql`update webhooks set status = 'inactive' where id = ${hook}`;
      const call2 = randomUUID();
      const ev2 = await second.sql.begin((tx) => emitEvent(tx, { orgId: org.orgId, type: 'call.started', callId: call2, payload: started(call2) }));
      await second.sql`update webhook_messages set status = 'delivering', attempts = 1, locked_until = now() - interval '1 second' where event_id = ${ev2.id}`;
      await second.sql`update webhooks set status = 'active' where id = ${hook}`;
      const r = await runWebhookMaintenance(second.platform.services);
      expect(r.released).toBe(1);
      await rx.until(() => rx.at('/crash').length === 2, 'the redelivery');
      expect(rx.at('/crash')[1]!.json.id).toBe(ev2.id);

      // Exactly once for the first event: a later event arrives and nothing else did.
      const call3 = randomUUID();
      await second.sql.begin((tx) => emitEvent(tx, { orgId: org.orgId, type: 'call.started', callId: call3, payload: started(call3) }));
      await rx.until(() => rx.at('/crash').length === 3, 'a sentinel');
      expect(rx.at('/crash').filter((x) => x.json.id === ev.id)).toHaveLength(1);
      const records = await second.sql`select status, attempt from webhook_deliveries where event_id = ${ev.id} and webhook_id = ${hook}`;
      expect(records).toEqual([{ status: 'succeeded', attempt: 1 }]);
      const [left] = await second.sql`select count(*)::int as n from webhook_messages where event_id = ${ev.id}`;
      expect(left!.n).toBe(0);
    } finally {
      await second?.close();
      await first.close();
    }
  });
});

describe('slow receivers', () => {
  let tp: TestPlatform;
  beforeAll(async () => {
    tp = await startTestPlatform({
      SSRF_ALLOWLIST: '127.0.0.1',
      WEBHOOK_TIMEOUT_MS: 60_000,
      WEBHOOK_CONCURRENCY: 4,
      WEBHOOK_ENDPOINT_CONCURRENCY: 2,
    });
  });
  afterAll(() => tp.close());

  it('a receiver that hangs holds at most its own share of the workers', async () => {
    const org = await tp.createOrg();
    await webhook(tp, org.key, '/stuck', ['call.started']);
    await webhook(tp, org.key, '/fast', ['call.ended']);
    rx.script('/stuck', () => ({ hang: true }));
    const emit = (type: 'call.started' | 'call.ended') =>
      tp.sql.begin((tx) => {
        const callId = randomUUID();
        const payload =
          type === 'call.started'
            ? started(callId)
            : { call_id: callId, agent_id: randomUUID(), status: 'completed', duration_seconds: 1, to_number: null, from_number: null, outcome: null, ai_summary: null, analysis: { summary: null, outcome: null, status: 'completed', method: null } };
        return emitEvent(tx, { orgId: org.orgId, type, callId, payload });
      });
    for (let i = 0; i < 6; i++) await emit('call.started');
    await rx.until(() => rx.at('/stuck').length === 2, 'two hanging requests');
    for (let i = 0; i < 20; i++) await emit('call.ended');
    // All twenty go through while the two hanging requests are still open, with 4 workers in all (and both
    // endpoints on the same host, as customers' endpoints often are).
    try {
      await rx.until(() => rx.at('/fast').length === 20, 'the fast receiver');
      expect(rx.at('/stuck')).toHaveLength(2);
      expect(rx.at('/stuck').every((r) => !r.aborted)).toBe(true);
    } finally {
      rx.script('/stuck', () => ({ status: 200 }));
      rx.release();
    }
    await rx.until(() => rx.at('/stuck').length === 6, 'the stuck receiver to catch up');
  });
});
