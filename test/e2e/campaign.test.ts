// A campaign end to end: POST /v1/campaigns (a CSV upload) on the real control plane, its scheduler (pg-boss
// ticks) placing ordinary outbound calls through the dial job, LiveKit's SIP bridge and the simulated carrier's
// edge, to SIPp callees that answer, answer busy (486) or ring until the ring timeout. 20 contacts; busy and
// unanswered ones are retried once a minute later. No media worker: an answered call is hung up by the test once
// it is in progress (the callee ending the call). The export then shows each contact's attempts and final state,
// and the campaign's own webhook_url got campaign.started and campaign.completed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { SipCallee } from '../support/sip-callee.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { until } from '../support/e2e.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';
import type { SimulatedEdge } from '../../control-plane/src/modules/phone-numbers/carriers/simulated-edge.ts';
import { addOutboundNumber, startCalleeEdge } from '../support/outbound-edge.ts';

const FROM = '+14155550100';
const RING_TIMEOUT = 6;
// Fictional numbers by behaviour: 8 answer, 6 busy, 6 never answer.
const ANSWER = Array.from({ length: 8 }, (_, i) => `+1555000100${i}`);
const BUSY = Array.from({ length: 6 }, (_, i) => `+1555000200${i}`);
const NO_ANSWER = Array.from({ length: 6 }, (_, i) => `+1555000300${i}`);

let stack: TestStack;
let sql: Sql;
let key: string;
let orgId: string;
let agentId: string;
let edge: SimulatedEdge;
let answer: SipCallee;
let busy: SipCallee;
let noAnswer: SipCallee;
let hooks: Receiver;

const fixture = stackFixture();
const { api } = fixture;

beforeAll(async () => {
  [answer, busy, noAnswer] = await Promise.all([SipCallee.start('answer'), SipCallee.start('busy'), SipCallee.start('no-answer')]);
  edge = await startCalleeEdge([
    ['+15550001', answer],
    ['+15550002', busy],
    ['+15550003', noAnswer],
  ]);
  hooks = await new Receiver().start();
  ({ stack, sql, key, orgId } = await fixture.start({
    org: 'campaign',
    worker: false,
    sip: true,
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      OUTBOUND_RING_TIMEOUT_SECONDS: String(RING_TIMEOUT),
      // No media worker: dial at once, and leave answered calls to the test (no reaping as a lost worker).
      OUTBOUND_AGENT_WAIT_SECONDS: '0',
      WORKER_SILENCE_SECONDS: '600',
      DISPATCH_TIMEOUT_SECONDS: '600',
    },
  }));
  // No worker runs the agent here: its model and voice settings are never used.
  const [model] = await sql<{ id: string }[]>`insert into llm_models (org_id, name, provider, model, temperature) values (${orgId}, 'm', 'openai', 'gpt-4o-mini', 0.7) returning id`;
  const [agent] = await sql<{ id: string }[]>`insert into agents (org_id, name, llm_id, transcriber, tts) values (${orgId}, 'Caller', ${model!.id}, '{}', '{}') returning id`;
  agentId = agent!.id;
  await addOutboundNumber(stack, sql, edge, { trunkName: 'campaign-test', orgId, from: FROM, agentId });
}, 240_000);

afterAll(async () => {
  await fixture.stop();
  await Promise.all([answer?.close(), busy?.close(), noAnswer?.close()]);
  await edge?.close();
  await hooks?.close();
});

describe.skipIf(!sipBridgeVersion())('a campaign over the SIP bridge', () => {
  it('calls 20 contacts: answered ones complete, busy and unanswered ones are retried once, the export shows every attempt', { timeout: 420_000 }, async () => {
    const rows = [...ANSWER, ...BUSY, ...NO_ANSWER].map((n, i) => `${n},Contact ${i + 1}`);
    const form = new FormData();
    form.append('name', 'Twenty');
    form.append('agent_id', agentId);
    form.append('pacing', JSON.stringify({ calls_per_minute: 60, max_concurrent: 4 }));
    form.append('retry', JSON.stringify({ on: ['busy', 'no_answer'], max_retries: 1, delay_minutes: 1 }));
    form.append('schedule', JSON.stringify({ windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }] }));
    form.append('webhook_url', hooks.url('/campaign'));
    form.append('file', new Blob([['to_number,customer_name', ...rows].join('\n')], { type: 'text/csv' }), 'contacts.csv');
    const res = await fetch(`${stack.controlPlaneUrl}/v1/campaigns`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    const created = (await res.json()) as { id: string; status: string; import: { accepted: number } };
    expect(res.status, JSON.stringify(created)).toBe(201);
    expect(created).toMatchObject({ status: 'running', import: { accepted: 20 } });
    const id = created.id;

    // The callee hangs up an answered call once it is connected.
    const hungUp = new Set<string>();
    const done = await until(
      'the campaign to complete',
      async () => {
        const live = (await api('GET', `/v1/calls?campaign_id=${id}&status=in_progress&limit=100`)).body.items as { id: string }[];
        for (const c of live.filter((x) => !hungUp.has(x.id))) {
          hungUp.add(c.id);
          await api('POST', `/v1/calls/${c.id}/stop`);
        }
        const c = (await api('GET', `/v1/campaigns/${id}`)).body;
        return c.status === 'completed' ? c : null;
      },
      360_000,
      500,
    );
    expect(done).toMatchObject({ attempts: 32, contacts: { total: 20, completed: 8, failed: 12, pending: 0, retrying: 0 } });
    // Each answered number was rung once, each busy and unanswered one twice.
    expect(answer.invites).toHaveLength(8);
    expect(busy.invites).toHaveLength(12);
    expect(noAnswer.invites).toHaveLength(12);

    const csv = await (await fetch(`${stack.controlPlaneUrl}/v1/campaigns/${id}/export.csv`, { headers: { authorization: `Bearer ${key}` } })).text();
    const [header, ...lines] = csv.trimEnd().split('\r\n');
    expect(header).toBe('row,to_number,timezone,state,skip_reason,attempts,last_result,outcome,call_ids,attempt_results,first_attempt_at,last_attempt_at,customer_name');
    const byNumber = new Map(lines.map((l) => {
      const cells = l.split(',');
      // The timezone cell is quoted (the US mainland's zones, comma-separated): read around it.
      const tail = l.slice(l.lastIndexOf('"') + 2).split(',');
      return [cells[1]!, { state: tail[0], attempts: Number(tail[2]), last: tail[3], calls: tail[5]!.split(';'), results: tail[6], name: tail.at(-1) }];
    }));
    expect(byNumber.size).toBe(20);
    for (const n of ANSWER) expect(byNumber.get(n)).toMatchObject({ state: 'completed', attempts: 1, last: 'completed', results: 'completed' });
    for (const n of BUSY) expect(byNumber.get(n)).toMatchObject({ state: 'failed', attempts: 2, last: 'busy', results: 'busy;busy' });
    for (const n of NO_ANSWER) expect(byNumber.get(n)).toMatchObject({ state: 'failed', attempts: 2, last: 'no_answer', results: 'no_answer;no_answer' });
    expect(byNumber.get(ANSWER[0]!)!.name).toBe('Contact 1');
    // The call ids are the attempts' call records, with the campaign's id.
    const ids = [...byNumber.values()].flatMap((v) => v.calls);
    const calls = await sql<{ id: string; campaign_id: string }[]>`select id, campaign_id from calls where id = any(${ids}::uuid[])`;
    expect(calls).toHaveLength(32);
    expect(new Set(calls.map((c) => c.campaign_id))).toEqual(new Set([id]));

    // The campaign's webhook_url got its events and those of its calls.
    await hooks.until(() => hooks.at('/campaign').some((r) => r.json?.event === 'campaign.completed'), 'campaign.completed', 30_000);
    const events = hooks.at('/campaign').map((r) => r.json?.event as string);
    expect(events.filter((e) => e === 'campaign.started')).toHaveLength(1);
    expect(events.filter((e) => e === 'call.failed').length).toBeGreaterThanOrEqual(24);
    const completed = hooks.at('/campaign').find((r) => r.json?.event === 'campaign.completed')!.json;
    expect(completed).toMatchObject({ campaign_id: id, contacts: { completed: 8, failed: 12 } });
  });
});
