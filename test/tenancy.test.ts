// Walks every route of the API with organisation B's credential against organisation A's resources:
// each must answer 404 (never 403 or 200), and no list of B may contain an id of A.
import { beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../control-plane/src/app.ts';
import type { RouteDef } from '../control-plane/src/http/route.ts';
import { usePlatform, type TestPlatform } from './support/platform.ts';
import { fixtures, sampleBodies, type FixtureContext } from './support/tenancy-fixtures.ts';

let tp: TestPlatform;
let a: { orgId: string; key: string };
let b: { orgId: string; key: string };
let ctx: FixtureContext;
const ids = new Map<string, Promise<string>>();

const routes = allRoutes().filter((r) => !r.internal && (r.auth ?? 'secret') === 'secret');
const paramsOf = (r: RouteDef) => [...r.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
const needsBody = (r: RouteDef) => !!r.body && r.bodyType !== 'multipart' && ((r.body as { required?: string[] }).required ?? []).length > 0;

beforeAll(async () => {
  tp = await usePlatform();
  a = await tp.createOrg('A');
  b = await tp.createOrg('B');
  ctx = {
    tp,
    key: a.key,
    orgId: a.orgId,
    get(param) {
      const fx = fixtures[param];
      if (!fx) throw new Error(`no tenancy fixture for path parameter :${param}; add one to test/support/tenancy-fixtures.ts`);
      if (!ids.has(param)) ids.set(param, fx(ctx));
      return ids.get(param)!;
    },
  };
});

describe('tenant isolation', () => {
  it('covers every path parameter and required body', () => {
    const missing: string[] = [];
    for (const r of routes) {
      for (const p of paramsOf(r)) if (!fixtures[p]) missing.push(`fixture :${p} (${r.operationId})`);
      if (needsBody(r) && paramsOf(r).length && !(r.operationId in sampleBodies)) missing.push(`sample body for ${r.operationId}`);
    }
    expect(missing).toEqual([]);
  });

  for (const r of routes.filter((r) => paramsOf(r).length)) {
    it(`${r.method.toUpperCase()} /v1${r.path} answers 404 for another organisation's resource`, async () => {
      let path = r.root ? r.path : `/v1${r.path}`;
      for (const p of paramsOf(r)) path = path.replace(`:${p}`, await ctx.get(p));
      const body = r.body && r.bodyType !== 'multipart' ? (sampleBodies[r.operationId] ?? {}) : undefined;
      const res = await tp.request(r.method, path, { key: b.key, ...(body !== undefined ? { body } : {}) });
      expect({ status: res.status, type: res.body?.type }).toEqual({ status: 404, type: 'not_found' });
    });
  }

  it('no list of organisation B shows an id of organisation A', async () => {
    // Make sure A has one of everything first.
    for (const p of Object.keys(fixtures)) await ctx.get(p);
    const aIds = await Promise.all([...ids.values()]);
    for (const r of routes.filter((r) => r.method === 'get' && !paramsOf(r).length)) {
      const res = await tp.request('get', r.root ? r.path : `/v1${r.path}`, { key: b.key });
      expect(res.status, r.operationId).toBeLessThan(300);
      const text = JSON.stringify(res.body);
      // Ids only: a version number (":version") is a small integer that any list may contain.
      for (const id of aIds.filter((v) => v.length >= 8)) expect(text.includes(id), `${r.operationId} leaks ${id}`).toBe(false);
      expect(text.includes(a.orgId), `${r.operationId} leaks org A`).toBe(false);
    }
  });
});
