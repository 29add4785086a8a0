// Hostile tests (docs/security.md, issue 50, item 6): the model's free text that is stored outside the messages (a
// squad hand-off's reason, the reason given to the do_not_call tool) follows the call's data retention, in the
// record and in the call.handoff webhook; and the retention job clears every copy of a call's content: hand-off
// reasons and their events, a warm transfer's held report, do-not-call reasons and the voice test's conversation.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { runRetention } from '../../control-plane/src/modules/retention/jobs.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const SECRET = 'ada.lovelace@example.com';
const REASON = `The caller, reachable at ${SECRET}, wants billing`;
let tp: TestPlatform;

beforeAll(async () => {
  tp = await usePlatform();
});

async function orgIn(mode: 'everything' | 'redact_pii' | 'no_content', retainDays: number | null = null) {
  const org = await tp.createOrg(`privacy-${mode}`);
  const settings = { data_retention: mode, ...(retainDays ? { retain_days: retainDays } : {}) };
  expect((await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings } })).status).toBe(200);
  const agents: string[] = [];
  for (const name of ['Front', 'Billing']) {
    const model = await tp.request('post', '/v1/models', { key: org.key, body: { name, model: 'gpt-4o-mini' } });
    const a = await tp.request('post', '/v1/agents', { key: org.key, body: { name, llm_id: model.body.id } });
    expect(a.status).toBe(201);
    agents.push(a.body.id);
  }
  const squad = await tp.request('post', '/v1/squads', {
    key: org.key,
    body: { name: 'desk', agent_ids: agents, entry_agent_id: agents[0], max_handoffs: 3, handoffs: [{ from_agent_id: agents[0], to_agent_id: agents[1], description: 'billing' }] },
  });
  expect(squad.status, JSON.stringify(squad.body)).toBe(201);
  return { ...org, front: agents[0]!, billing: agents[1]!, squadId: squad.body.id as string };
}

type Org = Awaited<ReturnType<typeof orgIn>>;

async function liveCall(org: Org, createdAt = new Date()): Promise<string> {
  const id = randomUUID();
  await tp.sql`insert into calls (id, org_id, agent_id, type, status, squad_id, room_name, to_number, created_at, started_at)
               values (${id}, ${org.orgId}, ${org.front}, 'outbound', 'in_progress', ${org.squadId}, ${'call-' + id}, ${'+1415555' + String(Math.floor(Math.random() * 9000) + 1000)}, ${createdAt}, ${createdAt})`;
  return id;
}

const internal = (callId: string, path: string, body: unknown) =>
  tp.request('post', `/internal/v1/calls/${callId}/${path}`, { key: WORKER, headers: { 'x-call-capability': tp.capability(callId) }, body });

async function attack(org: Org, callId: string) {
  expect((await internal(callId, 'handoff', { seq: 1, from_agent_id: org.front, to_agent_id: org.billing, reason: REASON, context: 'summary', at: new Date().toISOString() })).status).toBe(200);
  expect((await internal(callId, 'do-not-call', { reason: REASON })).status).toBe(200);
}

async function stored(callId: string) {
  const [call] = await tp.sql<{ handoffs: { reason: string | null }[] }[]>`select handoffs from calls where id = ${callId}`;
  const events = await tp.sql<{ payload: string }[]>`select payload::text as payload from events where call_id = ${callId} and type = 'call.handoff'`;
  const [dnc] = await tp.sql<{ reason: string | null }[]>`select reason from do_not_call where call_id = ${callId}`;
  return { handoff: call!.handoffs[0]!.reason, event: JSON.parse(events[0]!.payload) as { reason: string | null }, dnc: dnc!.reason, raw: JSON.stringify([call, events, dnc]) };
}

describe("the model's free text follows the call's data retention", () => {
  it('redact_pii: the hand-off reason (record and webhook) and the do-not-call reason are redacted', async () => {
    const org = await orgIn('redact_pii');
    const callId = await liveCall(org);
    await attack(org, callId);
    const s = await stored(callId);
    expect(s.raw).not.toContain(SECRET);
    expect(s.handoff).toMatch(/wants billing/);
    expect(s.event.reason).toBe(s.handoff);
    expect(s.dnc).toMatch(/wants billing/);
  });

  it('no_content: both reasons are dropped', async () => {
    const org = await orgIn('no_content');
    const callId = await liveCall(org);
    await attack(org, callId);
    const s = await stored(callId);
    expect(s).toMatchObject({ handoff: null, event: { reason: null }, dnc: null });
  });

  it('everything: kept as said (the defence is the mode, not a blanket drop)', async () => {
    const org = await orgIn('everything');
    const callId = await liveCall(org);
    await attack(org, callId);
    expect((await stored(callId)).handoff).toBe(REASON);
  });
});

describe('retention clears every copy of a call’s content', () => {
  it('hand-off reasons and their events, a held transfer report, do-not-call reasons and the voice test’s conversation', async () => {
    const org = await orgIn('everything', 1);
    const old = new Date(Date.now() - 3 * 86_400_000);
    const callId = await liveCall(org, old);
    await attack(org, callId);
    await tp.sql`update calls set status = 'completed', ended_at = ${old} where id = ${callId}`;
    await tp.sql`insert into call_transfers (call_id, org_id, mode, destination, status, held_report)
                 values (${callId}, ${org.orgId}, 'warm', '+14155550199', 'ended', ${tp.sql.json({ messages: [{ role: 'user', content: `mail ${SECRET}` }] })})`;
    const [run] = await tp.sql<{ id: string }[]>`
      insert into agent_test_runs (org_id, agent_id, mode, status, total) values (${org.orgId}, ${org.front}, 'voice', 'completed', 1) returning id`;
    await tp.sql`insert into agent_test_results (run_id, org_id, position, scenario_id, scenario, status, messages, tool_calls, call_id)
                 values (${run!.id}, ${org.orgId}, 0, ${randomUUID()}, '{}'::jsonb, 'passed', ${tp.sql.json([{ role: 'user', content: `mail ${SECRET}` }])},
                         ${tp.sql.json([{ name: 'book', arguments: SECRET }])}, ${callId})`;
    // A call inside the period keeps everything.
    const recent = await liveCall(org);
    await attack(org, recent);

    await runRetention(tp.platform.services);

    const s = await stored(callId);
    expect(s).toMatchObject({ handoff: null, event: { reason: null }, dnc: null });
    const [t] = await tp.sql`select held_report from call_transfers where call_id = ${callId}`;
    expect(t!.held_report).toBeNull();
    const [r] = await tp.sql`select messages, tool_calls from agent_test_results where call_id = ${callId}`;
    expect(r).toEqual({ messages: [], tool_calls: [] });
    // The do-not-call entry itself stays: it is what stops the next call.
    expect((await tp.sql`select 1 from do_not_call where call_id = ${callId}`).length).toBe(1);
    expect((await stored(recent)).handoff).toBe(REASON);
  });
});
