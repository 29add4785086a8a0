// Attacks on campaigns (docs/security.md, "Campaigns"): uploads built to exhaust the API (oversized bodies,
// declared or streamed; a quote that never closes; one endless record; hundreds of columns), a contact list
// that aims at premium-rate or foreign numbers, a destination policy tightened mid-campaign, an export that
// plants spreadsheet formulas, and a worker listing numbers that are not its call's.
import { beforeAll, describe, expect, it } from 'vitest';
import { request as httpRequest } from 'node:http';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { tickCampaign } from '../../control-plane/src/modules/campaigns/scheduler.ts';
import { InternalApiClient } from '../../shared/internal-api.ts';
import { commands } from '../../control-plane/src/admin.ts';
import { insertBareAgent } from '../support/bare-agent.ts';

const LIMIT = 64 * 1024;
let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;
const FROM = '+14155550170';
const ALWAYS = [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' }];

async function upload(csv: string | Buffer, fields: Record<string, string> = {}) {
  const form = new FormData();
  form.append('name', 'attack');
  form.append('agent_id', agentId);
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([csv]), 'contacts.csv');
  const res = await fetch(`${tp.url}/v1/campaigns`, { method: 'POST', headers: { authorization: `Bearer ${org.key}` }, body: form });
  const text = await res.text();
  return { status: res.status, body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text };
}

/** A multipart upload streamed in chunks with no Content-Length: the limit must hold while reading. */
function streamUpload(totalBytes: number): Promise<number> {
  const boundary = 'vapattackboundary';
  const url = new URL(`${tp.url}/v1/campaigns`);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { authorization: `Bearer ${org.key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', (err) => ((err as { code?: string }).code === 'EPIPE' || (err as { code?: string }).code === 'ECONNRESET' ? resolve(413) : reject(err)));
    req.write(`--${boundary}\r\ncontent-disposition: form-data; name="name"\r\n\r\nx\r\n`);
    req.write(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="c.csv"\r\ncontent-type: text/csv\r\n\r\nto_number\r\n`);
    const chunk = Buffer.from('+15550400000\r\n'.repeat(1000));
    let sent = 0;
    const pump = () => {
      while (sent < totalBytes) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end(`\r\n--${boundary}--\r\n`);
    };
    pump();
  });
}

beforeAll(async () => {
  tp = await usePlatform({ JOBS_ENABLED: false, CAMPAIGN_UPLOAD_MAX_BYTES: LIMIT, CAMPAIGN_MAX_CONTACTS: 1000 } as never);
  org = await tp.createOrg('campaign attacks');
  await tp.sql`update orgs set max_concurrent_calls = 100 where id = ${org.orgId}`;
  agentId = await insertBareAgent(tp.sql, org.orgId);
  await tp.sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id) values (${org.orgId}, ${FROM}, 'simulated', ${agentId}, 'ST_sec')`;
});

describe('campaign uploads built to exhaust the API', () => {
  it('an upload over CAMPAIGN_UPLOAD_MAX_BYTES is a 413, declared or streamed, and the API still answers', async () => {
    const declared = await upload(Buffer.alloc(LIMIT * 4, 'a'));
    expect(declared.status).toBe(413);
    expect(await streamUpload(LIMIT * 16)).toBe(413);
    const json = await tp.request('post', '/v1/campaigns', { key: org.key, body: { name: 'x', agent_id: agentId, contacts: Array.from({ length: 5000 }, () => ({ to_number: '+15550400000' })) } });
    expect(json.status).toBe(413);
    expect((await tp.request('get', '/v1/campaigns', { key: org.key })).status).toBe(200);
    expect(await tp.sql`select id from campaigns where org_id = ${org.orgId}`).toHaveLength(0);
  });

  it('a quote that never closes, one endless record, or too many columns: a 422 naming the problem, nothing stored', async () => {
    const open = await upload(`to_number,notes\n+15550400001,"${'x'.repeat(LIMIT / 2)}`);
    expect(open.status).toBe(422);
    expect(open.body.detail[0]).toMatchObject({ loc: ['body', 'file'], type: 'csv_invalid' });
    const wide = await upload(['to_number', ...Array.from({ length: 60 }, (_, i) => `v${i}`)].join(',') + '\n');
    expect(wide.status).toBe(422);
    expect(wide.body.detail[0]).toMatchObject({ type: 'csv_header_invalid', ctx: { columns: 61, max_columns: 50 } });
    // A long cell skips its row; the others are imported.
    const long = await upload(`to_number,notes\n+15550400002,${'y'.repeat(5000)}\n+15550400003,ok\n`);
    expect(long.status).toBe(201);
    expect(long.body.import).toMatchObject({ accepted: 1, problems: [{ row: 2, type: 'value_too_long' }] });
    expect(await tp.sql`select id from campaigns where org_id = ${org.orgId}`).toHaveLength(1);
  });
});

describe('a contact list aimed at toll fraud', () => {
  it('premium-rate, satellite and foreign numbers are skipped at upload and never dialled', async () => {
    const res = await upload(['to_number', '+19005551234', '+881612345678', '+449098790000', '+442079460123', '+15550400010'].join('\n'), { schedule: JSON.stringify({ windows: ALWAYS }) });
    expect(res.status).toBe(201);
    expect(res.body.import.problems.map((p: { row: number; ctx: { reason: string } }) => [p.row, p.ctx.reason])).toEqual([
      [2, 'number_type'],
      [3, 'number_type'],
      [4, 'number_type'],
      [5, 'country'],
    ]);
    await tickCampaign(tp.platform.services, res.body.id, new Date());
    const called = await tp.sql<{ to_number: string }[]>`select to_number from calls where campaign_id = ${res.body.id}`;
    expect(called.map((c) => c.to_number)).toEqual(['+15550400010']);
  });

  it('a policy tightened mid-campaign applies before the next attempt: the contact is skipped, never dialled', async () => {
    await commands['set-destination-limits']!.run(tp.sql, ['--org', org.orgId, '--extra-countries', 'GB']);
    await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings: { destination_policy: { allowed_countries: ['US', 'GB'] } } } });
    const res = await upload(['to_number', '+442079460124', '+442079460125'].join('\n'), { schedule: JSON.stringify({ windows: ALWAYS }), pacing: JSON.stringify({ calls_per_minute: 1, max_concurrent: 5 }) });
    expect(res.body.import.accepted).toBe(2);
    const t = new Date();
    expect((await tickCampaign(tp.platform.services, res.body.id, t)).dialed).toBe(1);
    await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings: { destination_policy: { allowed_countries: ['US'] } } } });
    expect((await tickCampaign(tp.platform.services, res.body.id, new Date(t.getTime() + 120_000))).dialed).toBe(0);
    const [skipped] = await tp.sql`select state, skip_reason from campaign_contacts where campaign_id = ${res.body.id} and to_number = '+442079460125'`;
    expect(skipped).toMatchObject({ state: 'skipped', skip_reason: 'destination_not_allowed' });
    expect(await tp.sql`select id from calls where to_number = '+442079460125'`).toHaveLength(0);
    await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings: { destination_policy: { allowed_countries: null } } } });
  });
});

describe('the export and the do-not-call route', () => {
  it('cells that a spreadsheet would run as formulas come out inert', async () => {
    const payloads = ['=cmd|\' /C calc\'!A0', '@SUM(1+1)*cmd|\' /C calc\'!A0', '+1+cmd|\' /C calc\'!A0', '-2+3', '\t=1+1', '\r=1+1'];
    const csv = ['to_number,payload', ...payloads.map((p, i) => `+1555040002${i},"${p.replaceAll('"', '""')}"`)].join('\n');
    const res = await upload(csv);
    const text = await (await fetch(`${tp.url}/v1/campaigns/${res.body.id}/export.csv`, { headers: { authorization: `Bearer ${org.key}` } })).text();
    const cells = text.trimEnd().split('\r\n').slice(1).map((l) => l.slice(l.lastIndexOf(',') + 1));
    // Each payload starts with an apostrophe (quoted where it holds a comma, quote or line break).
    for (const c of cells) expect(c.replace(/^"/, '').startsWith("'")).toBe(true);
    // A phone number or a plain signed number is left as it is.
    expect(text).toContain(',+15550400020,');
  });

  it("a worker can list only its own call's other party, never a number it names", async () => {
    const call = await tp.request('post', '/v1/calls', { key: org.key, body: { agent_id: agentId, to_number: '+15550400030' } });
    const client = new InternalApiClient({ baseUrl: tp.url, token: tp.config.WORKER_TOKEN!, retry: { maxAttempts: 1 } });
    client.setCapability(call.body.id, tp.capability(call.body.id));
    // An extra field (a number of the attacker's choosing) is refused, not used.
    await expect(client.request('POST', `/calls/${call.body.id}/do-not-call`, { phone_number: '+15550409999' })).rejects.toMatchObject({ status: 422 });
    expect(await client.addToDoNotCall(call.body.id, {})).toMatchObject({ phone_number: '+15550400030' });
    expect(await tp.sql`select id from do_not_call where phone_number = '+15550409999'`).toHaveLength(0);
    // Without the call's capability: 403.
    const bare = new InternalApiClient({ baseUrl: tp.url, token: tp.config.WORKER_TOKEN!, retry: { maxAttempts: 1 } });
    await expect(bare.addToDoNotCall(call.body.id, {})).rejects.toMatchObject({ status: 403 });
  });
});
