// GET /v1/calls for the console: every filter (number, outcome, text in the transcript among them), the order
// and its tie-breaker, the total (exact, or an estimate past the count cap, with Total-Exact saying which), the
// 422s of bad filters, and another organisation's calls, numbers and words staying out of view.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { CALL_COUNT_CAP } from '../../../../schemas/calls.ts';

let tp: TestPlatform;
let org: { orgId: string; key: string };
let other: { orgId: string; key: string };
let agentA: string;
let agentB: string;
let numberId: string;
let otherNumberId: string;
const ids: Record<string, string> = {};

const NUMBER = '+14155550101';
const msgs = (...lines: string[]) => lines.map((content, i) => ({ role: i % 2 ? 'user' : 'agent', content }));

async function agentOf(o: { orgId: string; key: string }): Promise<string> {
  const model = await tp.request('post', '/v1/models', { key: o.key, body: { name: 'm', model: 'gpt-4o-mini' } });
  const agent = await tp.request('post', '/v1/agents', { key: o.key, body: { name: 'a', llm_id: model.body.id } });
  expect(agent.status).toBe(201);
  return agent.body.id;
}

async function call(o: { orgId: string }, name: string, c: Record<string, unknown>): Promise<void> {
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, direction, status, to_number, from_number, outcome, messages, created_at)
    values (${o.orgId}, ${c.agent as string}, ${c.type as string}, ${(c.direction as string) ?? null}, ${c.status as string},
            ${(c.to as string) ?? null}, ${(c.from as string) ?? null}, ${(c.outcome as string) ?? null},
            ${c.messages ? tp.sql.json(c.messages as never) : null}, ${(c.at as string) ?? new Date().toISOString()})
    returning id`;
  ids[name] = row!.id;
}

const list = (query: string, key = org.key) => tp.request('get', `/v1/calls${query}`, { key });
const names = (body: { items: { id: string }[] }) => body.items.map((c) => Object.entries(ids).find(([, id]) => id === c.id)?.[0] ?? c.id);
const ago = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();

beforeAll(async () => {
  tp = await usePlatform();
  org = await tp.createOrg('console calls');
  other = await tp.createOrg('console neighbour');
  agentA = await agentOf(org);
  agentB = await agentOf(org);
  const otherAgent = await agentOf(other);
  [{ id: numberId }] = await tp.sql`
    insert into phone_numbers (org_id, phone_number, provider, agent_id) values (${org.orgId}, ${NUMBER}, 'simulated', ${agentA}) returning id`;
  [{ id: otherNumberId }] = await tp.sql`
    insert into phone_numbers (org_id, phone_number, provider, agent_id) values (${other.orgId}, '+14155550199', 'simulated', ${otherAgent}) returning id`;
  await call(org, 'inboundRefund', {
    agent: agentA,
    type: 'inbound',
    direction: 'inbound',
    status: 'completed',
    to: NUMBER,
    from: '+447700900123',
    outcome: 'refund_requested',
    messages: msgs('Hello, how can I help?', 'I would like a REFUND for my order'),
    at: ago(10),
  });
  await call(org, 'outboundFailed', {
    agent: agentB,
    type: 'outbound',
    direction: 'outbound',
    status: 'failed',
    to: '+447700900124',
    from: NUMBER,
    at: ago(20),
  });
  await call(org, 'webBooked', {
    agent: agentA,
    type: 'web',
    status: 'completed',
    outcome: 'booked',
    messages: msgs('Hi!', 'Book a table for two, please'),
    at: ago(30),
  });
  // Another number of the org: its calls are not the first number's, whichever side it is on.
  await call(org, 'otherNumber', {
    agent: agentB,
    type: 'inbound',
    direction: 'inbound',
    status: 'in_progress',
    to: '+14155550102',
    from: NUMBER,
    at: ago(40),
  });
  // Three calls created in the same instant: the id orders them.
  const same = ago(50);
  for (const n of ['tieA', 'tieB', 'tieC']) await call(org, n, { agent: agentB, type: 'web', status: 'queued', at: same });
  // The neighbour: a call on the same number string, with the same word in its transcript.
  await call(other, 'neighbour', {
    agent: otherAgent,
    type: 'inbound',
    direction: 'inbound',
    status: 'completed',
    to: NUMBER,
    outcome: 'refund_requested',
    messages: msgs('Hello', 'refund please'),
    at: ago(5),
  });
});

describe('GET /v1/calls filters', () => {
  it('lists newest first, and calls created in the same instant by id, descending', async () => {
    const res = await list('');
    expect(res.status).toBe(200);
    const tie = [ids.tieA!, ids.tieB!, ids.tieC!].sort().reverse();
    expect(res.body.items.map((c: { id: string }) => c.id)).toEqual([ids.inboundRefund, ids.outboundFailed, ids.webBooked, ids.otherNumber, ...tie]);
    expect(res.body).toMatchObject({ total: 7, limit: 50, offset: 0 });
    expect(res.headers.get('total-exact')).toBe('true');
    // Pages follow the same order.
    const page = await list('?limit=2&offset=4');
    expect(page.body.items.map((c: { id: string }) => c.id)).toEqual(tie.slice(0, 2));
    expect(page.body).toMatchObject({ total: 7, limit: 2, offset: 4 });
  });

  it('filters by phone number: inbound calls to it and outbound calls from it', async () => {
    const res = await list(`?phone_number_id=${numberId}`);
    expect(res.status).toBe(200);
    expect(names(res.body)).toEqual(['inboundRefund', 'outboundFailed']);
    expect(res.body.total).toBe(2);
    expect(res.headers.get('total-exact')).toBe('true');
    expect(names((await list(`?phone_number_id=${numberId}&type=outbound`)).body)).toEqual(['outboundFailed']);
  });

  it('filters by outcome, and by the other filters together', async () => {
    expect(names((await list('?outcome=booked')).body)).toEqual(['webBooked']);
    expect(names((await list('?outcome=refund_requested')).body)).toEqual(['inboundRefund']);
    expect(names((await list(`?agent_id=${agentA}&status=completed`)).body)).toEqual(['inboundRefund', 'webBooked']);
    expect(names((await list(`?agent_id=${agentB}&type=web`)).body)).toHaveLength(3);
    const window = await list(`?created_after=${encodeURIComponent(ago(35))}&created_before=${encodeURIComponent(ago(15))}`);
    expect(names(window.body)).toEqual(['outboundFailed', 'webBooked']);
    expect((await list('?outcome=never_seen')).body).toMatchObject({ items: [], total: 0 });
  });

  it('finds text in the transcript: whole words, any case, phrases and exclusions', async () => {
    const refund = await list('?q=refund');
    expect(refund.status).toBe(200);
    expect(names(refund.body)).toEqual(['inboundRefund']);
    expect(refund.body.total).toBe(1);
    expect(names((await list('?q=Refund%20ORDER')).body)).toEqual(['inboundRefund']);
    expect(names((await list(`?q=${encodeURIComponent('"table for two"')}`)).body)).toEqual(['webBooked']);
    expect(names((await list(`?q=${encodeURIComponent('"two for table"')}`)).body)).toEqual([]);
    expect(names((await list('?q=refund%20or%20table')).body)).toEqual(['inboundRefund', 'webBooked']);
    expect(names((await list('?q=hello%20-refund')).body)).toEqual([]);
    // Roles are not words of the transcript; neither is a part of a word.
    expect(names((await list('?q=agent')).body)).toEqual([]);
    expect(names((await list('?q=refun')).body)).toEqual([]);
    // Punctuation only: no words, nothing matches (not a 500).
    const punct = await list('?q=%21%21');
    expect(punct.status).toBe(200);
    expect(punct.body.items).toEqual([]);
  });

  it("keeps the neighbour's calls out: its words, its calls on the same number string, its number", async () => {
    expect(names((await list('?q=please')).body)).toEqual(['webBooked']);
    // The neighbour's phone number id in our list is a filter that matches nothing.
    expect((await list(`?phone_number_id=${otherNumberId}`)).body).toMatchObject({ items: [], total: 0 });
    // Ours, in the neighbour's list, as well; and the neighbour sees only its own call.
    expect((await list(`?phone_number_id=${numberId}`, other.key)).body).toMatchObject({ items: [], total: 0 });
    expect(names((await list('?q=refund', other.key)).body)).toEqual(['neighbour']);
    expect((await list('', other.key)).body.total).toBe(1);
  });

  it('answers 422 on the parameter for bad filters', async () => {
    const cases: [string, string, string][] = [
      ['?phone_number_id=abc', 'phone_number_id', 'uuid_parsing'],
      ['?outcome=Not%20A%20Label', 'outcome', 'string_pattern_mismatch'],
      ['?q=', 'q', 'string_too_short'],
      [`?q=${'a'.repeat(201)}`, 'q', 'string_too_long'],
      ['?status=ringing', 'status', 'enum'],
      ['?limit=101', 'limit', 'less_than_equal'],
      ['?phone=%2B1415', 'phone', 'extra_forbidden'],
    ];
    for (const [query, field, type] of cases) {
      const res = await list(query);
      expect(res.status, query).toBe(422);
      expect(res.body.detail[0], query).toMatchObject({ loc: ['query', field], type });
    }
  });
});

describe('GET /v1/calls total past the count cap', () => {
  let big: { orgId: string; key: string };
  // Past twice the cap: the estimate answers without a count.
  const N = 2 * CALL_COUNT_CAP + 500;

  beforeAll(async () => {
    big = await tp.createOrg('console big');
    const agent = await agentOf(big);
    await tp.sql`
      insert into calls (org_id, agent_id, type, status, created_at)
      select ${big.orgId}, ${agent}, 'web', 'completed', now() - i * interval '1 second' from generate_series(1, ${N}) i`;
    await tp.sql`analyze calls`;
  });

  it('counts the unfiltered list exactly, from the counter', async () => {
    const res = await list('?limit=1', big.key);
    expect(res.body.total).toBe(N);
    expect(res.headers.get('total-exact')).toBe('true');
  });

  it('estimates a filtered total past the cap, never below what it counted, and says so', async () => {
    const res = await list('?status=completed&limit=10', big.key);
    expect(res.status).toBe(200);
    expect(res.headers.get('total-exact')).toBe('false');
    expect(res.body.total).toBeGreaterThan(CALL_COUNT_CAP);
    expect(res.body.items).toHaveLength(10);
  });

  it('counts exactly again when the page reaches past the cap', async () => {
    const res = await list(`?status=completed&limit=100&offset=${N - 50}`, big.key);
    expect(res.headers.get('total-exact')).toBe('true');
    expect(res.body.total).toBe(N);
    expect(res.body.items).toHaveLength(50);
  });
});
