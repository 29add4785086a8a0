// Campaign CSVs were parsed and checked on the API's own event loop in one go (issue 50, low): a 10k-row
// upload held the loop for seconds, and every organisation's requests waited. Now the parser is fed in slices
// and both the parse and the number checks give the loop back every YIELD_EVERY rows. And an organisation may
// have at most CAMPAIGN_MAX_ACTIVE_PER_ORG campaigns scheduled, running or paused (there was no cap).
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { checkContacts, readCsv, YIELD_EVERY } from '../../control-plane/src/modules/campaigns/contacts.ts';
import { DEFAULT_BLOCKED_NUMBER_TYPES } from '../../shared/destination-policy.ts';

const ROWS = 10_000;
const csv = Buffer.from(['to_number,name', ...Array.from({ length: ROWS }, (_, i) => `+1555040${String(i).padStart(4, '0')},Name ${i}`)].join('\n'));

/** Counts the turns the event loop took (setImmediate callbacks) while `work` ran. */
async function loopTurnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  const result = await work();
  running = false;
  return { result, turns };
}

describe('a 10k-row CSV gives the loop back while it is read and checked', () => {
  it('readCsv: the loop turns at least once per YIELD_EVERY rows', async () => {
    const { result, turns } = await loopTurnsDuring(() => readCsv(csv, ROWS));
    expect(result.rows).toHaveLength(ROWS);
    expect(turns).toBeGreaterThanOrEqual(ROWS / YIELD_EVERY);
  });

  it('checkContacts: likewise', { timeout: 180_000 }, async () => {
    // Fewer rows: each is a full number classification, slow on a shared machine.
    const rows = (await readCsv(csv, ROWS)).rows.slice(0, 2_000);
    const policy = { allowed_countries: ['US'], blocked_number_types: [...DEFAULT_BLOCKED_NUMBER_TYPES], allowed_sip_hosts: [], fictional_numbers: true };
    const { result, turns } = await loopTurnsDuring(() => checkContacts(rows, { defaultCountry: null, policy, doNotCall: new Set() }));
    expect(result.contacts.filter((c) => c.state === 'pending')).toHaveLength(rows.length);
    expect(turns).toBeGreaterThanOrEqual(rows.length / YIELD_EVERY - 1);
  });

  it('a malformed file still ends in a clear 422 error, not a hang', async () => {
    await expect(readCsv(Buffer.from('to_number\n"+15550400000\n'.repeat(3)), 10)).rejects.toMatchObject({ detail: [expect.objectContaining({ type: 'csv_invalid' })] });
  });
});

describe('campaigns per organisation', () => {
  let tp: TestPlatform;
  beforeAll(async () => {
    tp = await usePlatform({ JOBS_ENABLED: false, CAMPAIGN_MAX_ACTIVE_PER_ORG: 2 } as never);
  });

  it('one more than CAMPAIGN_MAX_ACTIVE_PER_ORG not yet over is a 409 (campaign_limit); a canceled one frees its place; other orgs are not counted', async () => {
    const make = async (name: string) => {
      const org = await tp.createOrg(name);
      const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'gpt-4o-mini' } });
      const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'a', llm_id: model.body.id } });
      await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
                   values (${org.orgId}, ${`+1415555${String(Math.floor(Math.random() * 9000) + 1000)}`}, 'simulated', ${agent.body.id}, 'ST_cap')`;
      const create = () =>
        tp.request('post', '/v1/campaigns', { key: org.key, body: { name: 'c', agent_id: agent.body.id, contacts: [{ to_number: '+15550400001' }] } });
      return { org, create };
    };
    const a = await make('campaign cap');
    const first = await a.create();
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect((await a.create()).status).toBe(201);
    const third = await a.create();
    expect(third.status).toBe(409);
    expect(third.body).toMatchObject({ reason: 'campaign_limit', limit_value: 2 });
    expect(await tp.sql`select id from campaigns where org_id = ${a.org.orgId}`).toHaveLength(2);
    // Another org has its own count.
    const b = await make('campaign cap other');
    expect((await b.create()).status).toBe(201);
    // Canceling one frees a place.
    expect((await tp.request('post', `/v1/campaigns/${first.body.id}/cancel`, { key: a.org.key })).status).toBe(200);
    expect((await a.create()).status).toBe(201);
  });
});
