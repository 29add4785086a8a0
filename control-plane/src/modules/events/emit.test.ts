// emitEvent: the outbox row and its routing commit with the caller's transaction, or not at all.
// Delivery is off here (JOBS_ENABLED=false) so the tasks stay in the table for inspection.
import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { usePlatform } from '../../../../test/support/platform.ts';
import { emitEvent } from './emit.ts';

const tp = await usePlatform({ JOBS_ENABLED: false });

async function webhook(orgId: string, events: string[], name = 'w') {
  const [row] = await tp.sql`insert into webhooks (org_id, name, url, events) values (${orgId}, ${name}, 'https://hooks.example.com/x', ${events}) returning id`;
  return row!.id as string;
}

const started = (callId: string) => ({
  call_id: callId,
  agent_id: randomUUID(),
  to_number: '+14155550100',
  from_number: null,
});

describe('emitEvent', () => {
  it('routes to every subscribed webhook of the account, plus the call webhook_url', async () => {
    const { orgId } = await tp.createOrg();
    const all = await webhook(orgId, ['*']);
    const sub = await webhook(orgId, ['call.started']);
    await webhook(orgId, ['call.ended']);
    const callId = randomUUID();
    const ev = await tp.sql.begin((tx) =>
      emitEvent(tx, { orgId, type: 'call.started', callId, webhookUrl: 'https://crm.example.com/hook', payload: started(callId) }),
    );
    expect(ev.messages).toBe(3);
    const rows = await tp.sql`select webhook_id, url, target, order_key, status from webhook_messages where event_id = ${ev.id} order by target`;
    expect(rows.map((r) => r.webhook_id).sort()).toEqual([all, sub, null].sort());
    const own = rows.find((r) => r.webhook_id === null)!;
    expect(own).toMatchObject({ url: 'https://crm.example.com/hook', target: 'url:https://crm.example.com/hook', order_key: `url:https://crm.example.com/hook/${callId}` });
    const [event] = await tp.sql`select payload::text as body from events where id = ${ev.id}`;
    const body = JSON.parse(event!.body);
    expect(Object.keys(body).slice(0, 3)).toEqual(['id', 'event', 'created_at']);
    expect(body).toMatchObject({ id: ev.id, event: 'call.started', call_id: callId, to_number: '+14155550100', from_number: null });
  });

  it('a workspace default webhook takes nothing from the other subscribed webhooks', async () => {
    const { orgId, key } = await tp.createOrg();
    const def = await webhook(orgId, ['*']);
    const other = await webhook(orgId, ['*'], 'other');
    const patched = await tp.request('patch', '/v1/workspace', { key, body: { settings: { default_webhook_id: def } } });
    expect(patched.status).toBe(200);
    const callId = randomUUID();
    const ev = await tp.sql.begin((tx) => emitEvent(tx, { orgId, type: 'call.started', callId, payload: started(callId) }));
    const rows = await tp.sql`select webhook_id from webhook_messages where event_id = ${ev.id}`;
    expect(rows.map((r) => r.webhook_id).sort()).toEqual([def, other].sort());
  });

  it("an agent's webhook takes nothing from the others: every subscribed webhook gets the event, once", async () => {
    const { orgId } = await tp.createOrg();
    const mine = await webhook(orgId, ['call.started']);
    const def = await webhook(orgId, ['*']);
    const ended = await webhook(orgId, ['call.ended']);
    await tp.sql`update orgs set default_webhook_id = ${def} where id = ${orgId}`;
    const [llm] = await tp.sql`insert into llm_models (org_id, name, provider, model, temperature) values (${orgId}, 'm', 'openai', 'gpt-4o-mini', 0.7) returning id`;
    const [agent] = await tp.sql`
      insert into agents (org_id, name, llm_id, webhook_id, transcriber, tts)
      values (${orgId}, 'a', ${llm!.id}, ${mine}, '{}', '{}') returning id`;
    const callId = randomUUID();
    const ev = await tp.sql.begin((tx) => emitEvent(tx, { orgId, type: 'call.started', callId, agentId: agent!.id, payload: started(callId) }));
    expect((await tp.sql`select webhook_id from webhook_messages where event_id = ${ev.id}`).map((r) => r.webhook_id).sort()).toEqual([mine, def].sort());
    // The agent's webhook does not subscribe to call.ended; the webhooks that do still get it.
    const done = await tp.sql.begin((tx) =>
      emitEvent(tx, {
        orgId, type: 'call.ended', callId, agentId: agent!.id,
        payload: { call_id: callId, agent_id: agent!.id, status: 'completed', duration_seconds: 3, to_number: null, from_number: null, outcome: null, ai_summary: null, analysis: { summary: null, outcome: null, status: 'completed', method: null } },
      }),
    );
    expect((await tp.sql`select webhook_id from webhook_messages where event_id = ${done.id}`).map((r) => r.webhook_id).sort()).toEqual([def, ended].sort());
  });

  it("keeps a call's own webhook_url apart from an account webhook with the same URL: pausing the webhook holds only its own", async () => {
    const { orgId } = await tp.createOrg();
    const same = await webhook(orgId, ['call.started']); // https://hooks.example.com/x
    await tp.sql`update webhooks set status = 'inactive' where id = ${same}`;
    const callId = randomUUID();
    const ev = await tp.sql.begin((tx) =>
      emitEvent(tx, { orgId, type: 'call.started', callId, webhookUrl: 'https://hooks.example.com/x', payload: started(callId) }),
    );
    // Two destinations, as the spec reads: the call's webhook_url gets its events, the webhook what it subscribed to.
    expect(ev.messages).toBe(2);
    const rows = await tp.sql`select webhook_id, url, target, status from webhook_messages where event_id = ${ev.id} order by target`;
    expect(rows).toEqual([
      { webhook_id: same, url: null, target: same, status: 'paused' },
      { webhook_id: null, url: 'https://hooks.example.com/x', target: 'url:https://hooks.example.com/x', status: 'pending' },
    ]);
    // An event the webhook does not subscribe to goes to the call's URL the same way: one stream, one secret.
    const ended = await tp.sql.begin((tx) =>
      emitEvent(tx, {
        orgId, type: 'call.ended', callId, webhookUrl: 'https://hooks.example.com/x',
        payload: { call_id: callId, agent_id: randomUUID(), status: 'completed', duration_seconds: 3, to_number: null, from_number: null, outcome: null, ai_summary: null, analysis: { summary: null, outcome: null, status: 'completed', method: null } },
      }),
    );
    expect(await tp.sql`select webhook_id, target, status from webhook_messages where event_id = ${ended.id}`).toEqual([
      { webhook_id: null, target: 'url:https://hooks.example.com/x', status: 'pending' },
    ]);
  });

  it('rolls back with the state change', async () => {
    const { orgId } = await tp.createOrg();
    await webhook(orgId, ['*']);
    const callId = randomUUID();
    await expect(
      tp.sql.begin(async (tx) => {
        await emitEvent(tx, { orgId, type: 'call.started', callId, payload: started(callId) });
        throw new Error('state change failed');
      }),
    ).rejects.toThrow('state change failed');
    const [c] = await tp.sql`select count(*)::int as n from events where org_id = ${orgId}`;
    expect(c!.n).toBe(0);
  });

  it('coalesces waiting partial transcripts of the same call and endpoint', async () => {
    const { orgId } = await tp.createOrg();
    await webhook(orgId, ['transcript.partial', 'call.started']);
    const callId = randomUUID();
    const other = randomUUID();
    const partial = (id: string, n: number) => ({ call_id: id, messages: [{ role: 'user' as const, content: `hello ${n}` }] });
    await tp.sql.begin(async (tx) => {
      await emitEvent(tx, { orgId, type: 'call.started', callId, payload: started(callId) });
      for (let i = 1; i <= 3; i++) await emitEvent(tx, { orgId, type: 'transcript.partial', callId, payload: partial(callId, i) });
      await emitEvent(tx, { orgId, type: 'transcript.partial', callId: other, payload: partial(other, 1) });
    });
    const rows = await tp.sql`
      select e.type, m.status, e.call_id, e.payload->'messages'->0->>'content' as content
      from events e left join webhook_messages m on m.event_id = e.id where e.org_id = ${orgId} order by e.seq`;
    expect(rows.map((r) => [r.type, r.status, r.call_id === callId ? 'c1' : 'c2', r.content])).toEqual([
      ['call.started', 'pending', 'c1', null],
      ['transcript.partial', null, 'c1', 'hello 1'],
      ['transcript.partial', null, 'c1', 'hello 2'],
      ['transcript.partial', 'pending', 'c1', 'hello 3'],
      ['transcript.partial', 'pending', 'c2', 'hello 1'],
    ]);
  });
});
