// The inbound fallback (the overflow line) answers past the org's limits; it used to have no ceiling, so a
// flood of calls to a number with a fallback ran without bound (issue 50, low). Now the calls it takes past
// the limits are bounded at INBOUND_FALLBACK_OVERFLOW_PERCENT of each limit (at least one): live ones against
// max_concurrent_calls, the day's against max_calls_per_day. The flood's excess is refused like any call over
// the limits (409, a failed call record). Through the worker's real inbound-open route.
import { beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { inboundLeg } from '../support/inbound-leg.ts';

const WORKER = { authorization: 'Bearer test-worker-token-0123456789abcdef0123' };
let tp: TestPlatform;

async function numberWithFallback(name: string, phone: string): Promise<{ orgId: string; number: { id: string; phone_number: string }; fallback: string }> {
  const org = await tp.createOrg(name);
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'gpt-4o-mini' } });
  const primary = (await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'primary', llm_id: model.body.id } })).body.id as string;
  const fallback = (await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'overflow', llm_id: model.body.id } })).body.id as string;
  const id = randomUUID();
  await tp.sql`
    insert into phone_numbers (id, org_id, phone_number, provider, agent_id, inbound_trunk_id, dispatch_rule_id, outbound_trunk_id, wiring_state, inbound_routing)
    values (${id}, ${org.orgId}, ${phone}, 'simulated', ${primary}, ${`ST_in_${id}`}, ${`SDR_${id}`}, ${`ST_out_${id}`}, 'wired',
            ${tp.sql.json({ agent_id: null, squad_id: null, fallback: { agent_id: fallback }, voicemail_message: null })})`;
  return { orgId: org.orgId, number: { id, phone_number: phone }, fallback };
}

const open = (n: { id: string; phone_number: string }, room: string) =>
  tp.request('post', '/internal/v1/calls/inbound', {
    key: null,
    headers: WORKER,
    // The trunk and rule ids numberWithFallback gave the number.
    body: inboundLeg({ ...n, inbound_trunk_id: `ST_in_${n.id}`, dispatch_rule_id: `SDR_${n.id}` }, room),
  });

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: false, INBOUND_FALLBACK_OVERFLOW_PERCENT: 50 } as never);
});

describe('the overflow line has a ceiling', () => {
  it('past max_concurrent_calls: at most 50% more live calls on the fallback, then refused', async () => {
    const { orgId, number, fallback } = await numberWithFallback('overflow concurrent', '+14155550161');
    await tp.sql`update orgs set max_concurrent_calls = 4 where id = ${orgId}`;
    const results: { status: number; reason?: string; agent?: string }[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await open(number, `c${i}`);
      const [call] = res.body.call_id ? await tp.sql`select agent_id from calls where id = ${res.body.call_id}` : [];
      results.push({ status: res.status, reason: res.body.reason, agent: call?.agent_id });
    }
    // 4 under the limit (the primary), 2 overflow (the fallback), the other 6 refused.
    expect(results.filter((r) => r.status === 200 && r.agent !== fallback)).toHaveLength(4);
    expect(results.filter((r) => r.status === 200 && r.agent === fallback)).toHaveLength(2);
    expect(results.filter((r) => r.status === 409 && r.reason === 'concurrency_limit_reached')).toHaveLength(6);
    // The refused ones are on the record as failed.
    const [failed] = await tp.sql<{ n: number }[]>`select count(*)::int as n from calls where org_id = ${orgId} and status = 'failed' and end_reason = 'concurrency_limit_reached'`;
    expect(failed!.n).toBe(6);
    // Another org's calls are not affected.
    const other = await numberWithFallback('overflow bystander', '+14155550162');
    expect((await open(other.number, 'b1')).status).toBe(200);
  });

  it('past max_calls_per_day: at most 50% more calls in the day on the fallback (at least one), then refused', async () => {
    const { orgId, number, fallback } = await numberWithFallback('overflow daily', '+14155550163');
    await tp.sql`update orgs set max_calls_per_day = 0 where id = ${orgId}`;
    const first = await open(number, 'd0');
    expect(first.status).toBe(200);
    expect((await tp.sql`select agent_id from calls where id = ${first.body.call_id}`)[0]!.agent_id).toBe(fallback);
    // The first overflow call ended; the day's ceiling still holds.
    await tp.sql`update calls set status = 'completed', ended_at = now() where id = ${first.body.call_id}`;
    const second = await open(number, 'd1');
    expect(second.status).toBe(409);
    expect(second.body.reason).toBe('daily_cap_reached');
  });
});
