// Every list against the spec: the three lists the spec gives the paginated envelope use it with the Limits
// table's defaults and ranges; GET /v1/webhooks takes `limit` and `offset` like every list ("Lists use limit
// and offset"), with a default page that holds all of an account's webhooks; the lists whose shape the spec
// does not show follow the project's rule (docs/decisions/018-api-completeness.md, "Lists").
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from './support/platform.ts';

let tp: TestPlatform;
let org: { orgId: string; key: string };
let doc: any;

const op = (path: string) => doc.paths[path].get;
const queryParam = (path: string, name: string) => op(path).parameters?.find((p: { in: string; name: string }) => p.in === 'query' && p.name === name);
const responseSchema = (path: string) => {
  const s = op(path).responses['200'].content['application/json'].schema;
  return s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s;
};

beforeAll(async () => {
  tp = await usePlatform();
  org = await tp.createOrg('lists');
  doc = (await tp.request('get', '/openapi.json')).body;
});

describe('lists', () => {
  // The spec's Limits table: [path, default limit, maximum limit].
  const ENVELOPED: [string, number, number][] = [
    ['/v1/knowledge-bases', 50, 100],
    ['/v1/publishable-keys', 20, 100],
    ['/v1/webhooks/{webhook_id}/deliveries', 50, 200],
  ];
  for (const [path, def, max] of ENVELOPED) {
    it(`${path}: the paginated envelope, limit default ${def} in 1-${max}, offset default 0 min 0`, () => {
      if (!doc.paths[path]) return; // knowledge bases: not served yet
      expect(queryParam(path, 'limit').schema).toMatchObject({ type: 'integer', minimum: 1, maximum: max, default: def });
      expect(queryParam(path, 'offset').schema).toMatchObject({ type: 'integer', minimum: 0, default: 0 });
      const s = responseSchema(path);
      expect(Object.keys(s.properties).sort()).toEqual(['items', 'limit', 'offset', 'total']);
      expect([...s.required].sort()).toEqual(['items', 'limit', 'offset', 'total']);
    });
  }

  it('every other paginated list takes limit (1-100, or 1-200 for audit events) and offset (min 0) and answers the same envelope', () => {
    for (const [path, item] of Object.entries(doc.paths) as [string, any][]) {
      // Number search asks the carrier for available numbers: a query with its own cap, not a list of records.
      if (!item.get || !queryParam(path, 'limit') || ENVELOPED.some(([p]) => p === path) || path.endsWith('/search')) continue;
      expect(queryParam(path, 'limit').schema.minimum, path).toBe(1);
      expect([100, 200], path).toContain(queryParam(path, 'limit').schema.maximum);
      expect(queryParam(path, 'offset').schema).toMatchObject({ minimum: 0, default: 0 });
      expect(Object.keys(responseSchema(path).properties).sort(), path).toEqual(['items', 'limit', 'offset', 'total']);
    }
  });

  it('GET /v1/webhooks pages with limit and offset in the envelope; the default page holds every webhook of the account', async () => {
    expect(queryParam('/v1/webhooks', 'limit').schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 100 });
    expect(queryParam('/v1/webhooks', 'offset').schema).toMatchObject({ type: 'integer', minimum: 0, default: 0 });
    const names: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await tp.request('post', '/v1/webhooks', { key: org.key, body: { name: `w${i}`, url: `https://hooks.example.com/${i}`, events: ['call.ended'] } });
      expect(res.status).toBe(201);
      names.unshift(res.body.name); // newest first
    }
    const all = await tp.request('get', '/v1/webhooks', { key: org.key });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 3, limit: 100, offset: 0 });
    expect(all.body.items.map((w: { name: string }) => w.name)).toEqual(names);
    const page = await tp.request('get', '/v1/webhooks?limit=1&offset=1', { key: org.key });
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ total: 3, limit: 1, offset: 1 });
    expect(page.body.items.map((w: { name: string }) => w.name)).toEqual([names[1]]);
    const bad = await tp.request('get', '/v1/webhooks?limit=0&offset=-1', { key: org.key });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(expect.arrayContaining([['query', 'limit'], ['query', 'offset']]));
  });

  it('an account has at most 100 webhooks, so that answer stays bounded', async () => {
    const other = await tp.createOrg('many hooks');
    await tp.sql`insert into webhooks (org_id, name, url) select ${other.orgId}, 'w' || i, 'https://hooks.example.com/' || i from generate_series(1, 99) i`;
    const last = await tp.request('post', '/v1/webhooks', { key: other.key, body: { name: 'last', url: 'https://hooks.example.com/last', events: ['call.ended'] } });
    expect(last.status).toBe(201);
    const over = await tp.request('post', '/v1/webhooks', { key: other.key, body: { name: 'over', url: 'https://hooks.example.com/over', events: ['call.ended'] } });
    expect(over.status).toBe(409);
    expect(over.body.type).toBe('conflict');
    const all = await tp.request('get', '/v1/webhooks', { key: other.key });
    expect(all.body.items).toHaveLength(100);
  });
});
