// GET /v1/activity/timeseries: buckets of the window (empty ones too), calls by status, latency percentiles
// computed from the calls' stored latency, the bound on buckets, and another organisation's calls left out.
import { beforeAll, describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { ActivityTimeseries, MAX_BUCKETS } from '../../../../schemas/activity.ts';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (a: Ajv2020) => Ajv2020;
const valid = addFormats(new Ajv2020({ strict: false })).compile(ActivityTimeseries);

let tp: TestPlatform;
let org: { orgId: string; key: string };
let other: { orgId: string; key: string };

const stat = (p50: number, samples = 4) => ({ avg_ms: p50, p50_ms: p50, min_ms: p50, max_ms: p50, samples });
const latency = (eou: number, llm: number, tts: number, e2e: number, llmSamples = 4) => ({
  eou_delay: stat(eou),
  llm_ttft: stat(llm, llmSamples),
  tts_ttfb: stat(tts),
  e2e: stat(e2e),
});

const get = (query: string, key = org.key) => tp.request('get', `/v1/activity/timeseries${query}`, { key });

beforeAll(async () => {
  tp = await usePlatform();
  org = await tp.createOrg('timeseries');
  other = await tp.createOrg('timeseries neighbour');
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'gpt-4o-mini' } });
  const agent = (await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'a', llm_id: model.body.id } })).body.id;
  const add = (at: string, status: string, l: unknown = null, orgId = org.orgId, agentId = agent) =>
    tp.sql`insert into calls (org_id, agent_id, type, status, latency, created_at) values (${orgId}, ${agentId}, 'web', ${status}, ${l ? tp.sql.json(l as never) : null}, ${at})`;
  // 1 March: three ended calls with latency, one failed without.
  await add('2026-03-01T10:45:00Z', 'completed', latency(400, 100, 10, 1000));
  await add('2026-03-01T11:10:00Z', 'completed', latency(500, 200, 20, 1100));
  await add('2026-03-01T12:20:00Z', 'completed', latency(600, 300, 30, 1200));
  await add('2026-03-01T12:30:00Z', 'failed');
  // 2 March: nothing. 3 March: a call whose LLM figure has no sample, and a live one.
  await add('2026-03-03T08:00:00Z', 'completed', latency(700, 0, 40, 1500, 0));
  await add('2026-03-03T09:00:00Z', 'in_progress');
  // Outside the window: just before it and at its (exclusive) end.
  await add('2026-02-28T23:59:59Z', 'completed', latency(9000, 9000, 9000, 9000));
  await add('2026-03-04T00:00:00Z', 'completed', latency(9000, 9000, 9000, 9000));
  // The neighbour's call inside the window.
  const omodel = await tp.request('post', '/v1/models', { key: other.key, body: { name: 'm', model: 'gpt-4o-mini' } });
  const oagent = (await tp.request('post', '/v1/agents', { key: other.key, body: { name: 'a', llm_id: omodel.body.id } })).body.id;
  await add('2026-03-01T12:00:00Z', 'completed', latency(9000, 9000, 9000, 9000), other.orgId, oagent);
});

const zero = { queued: 0, initiated: 0, in_progress: 0, completed: 0, failed: 0 };
const none = { p50: null, p95: null };

describe('GET /v1/activity/timeseries', () => {
  it('answers every day of the window with calls by status and latency percentiles, null where there is no sample', async () => {
    const res = await get('?since=2026-03-01T00:00:00Z&until=2026-03-04T00:00:00Z&bucket=day');
    expect(res.status).toBe(200);
    expect(valid(res.body), JSON.stringify(valid.errors)).toBe(true);
    expect(res.body.window).toEqual({ since: '2026-03-01T00:00:00.000Z', until: '2026-03-04T00:00:00.000Z' });
    expect(res.body.bucket).toBe('day');
    expect(res.body.buckets).toEqual([
      {
        start: '2026-03-01T00:00:00.000Z',
        calls_by_status: { ...zero, completed: 3, failed: 1 },
        // percentile_cont over [a, b, c]: p50 = b, p95 = b + 0.9 (c - b).
        latency: { eou_delay: { p50: 500, p95: 590 }, llm_ttft: { p50: 200, p95: 290 }, tts_ttfb: { p50: 20, p95: 29 }, e2e: { p50: 1100, p95: 1190 } },
      },
      { start: '2026-03-02T00:00:00.000Z', calls_by_status: zero, latency: { eou_delay: none, llm_ttft: none, tts_ttfb: none, e2e: none } },
      {
        start: '2026-03-03T00:00:00.000Z',
        calls_by_status: { ...zero, completed: 1, in_progress: 1 },
        latency: { eou_delay: { p50: 700, p95: 700 }, llm_ttft: none, tts_ttfb: { p50: 40, p95: 40 }, e2e: { p50: 1500, p95: 1500 } },
      },
    ]);
  });

  it('buckets by UTC hour, the first starting at since rounded down and counting calls from since on', async () => {
    const res = await get('?since=2026-03-01T10:50:00Z&until=2026-03-01T13:00:00Z&bucket=hour');
    expect(res.status).toBe(200);
    expect(res.body.buckets.map((b: { start: string; calls_by_status: { completed: number } }) => [b.start, b.calls_by_status.completed])).toEqual([
      ['2026-03-01T10:00:00.000Z', 0],
      ['2026-03-01T11:00:00.000Z', 1],
      ['2026-03-01T12:00:00.000Z', 1],
    ]);
    expect(res.body.buckets[2].latency.llm_ttft).toEqual({ p50: 300, p95: 300 });
  });

  it('defaults to days over the last 30 days', async () => {
    const res = await get('');
    expect(res.status).toBe(200);
    expect(res.body.bucket).toBe('day');
    expect(res.body.buckets).toHaveLength(31);
    expect(Date.parse(res.body.window.until) - Date.parse(res.body.window.since)).toBe(30 * 86_400_000);
  });

  it("leaves the neighbour's calls out", async () => {
    const res = await get('?since=2026-03-01T00:00:00Z&until=2026-03-02T00:00:00Z', other.key);
    expect(res.body.buckets).toEqual([
      {
        start: '2026-03-01T00:00:00.000Z',
        calls_by_status: { ...zero, completed: 1 },
        latency: { eou_delay: { p50: 9000, p95: 9000 }, llm_ttft: { p50: 9000, p95: 9000 }, tts_ttfb: { p50: 9000, p95: 9000 }, e2e: { p50: 9000, p95: 9000 } },
      },
    ]);
  });

  it(`answers 422 past ${MAX_BUCKETS} buckets, for an unknown bucket and for a bad window`, async () => {
    const wide = await get('?since=2026-01-01T00:00:00Z&until=2026-03-01T00:00:00Z&bucket=hour');
    expect(wide.status).toBe(422);
    expect(wide.body.detail[0]).toMatchObject({ loc: ['query', 'bucket'], type: 'value_error' });
    // The same window by day is fine.
    expect((await get('?since=2026-01-01T00:00:00Z&until=2026-03-01T00:00:00Z&bucket=day')).body.buckets).toHaveLength(59);
    const week = await get('?bucket=week');
    expect(week.status).toBe(422);
    expect(week.body.detail[0]).toMatchObject({ loc: ['query', 'bucket'], type: 'enum' });
    const inverted = await get('?since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z');
    expect(inverted.status).toBe(422);
    expect(inverted.body.detail[0]).toMatchObject({ loc: ['query', 'since'], type: 'value_error' });
    const bad = await get('?since=yesterday');
    expect(bad.body.detail[0]).toMatchObject({ loc: ['query', 'since'], type: 'datetime_parsing' });
  });

  it('needs a credential', async () => {
    expect((await tp.request('get', '/v1/activity/timeseries')).status).toBe(401);
  });
});
