// Malformed path ids, on every public route: a parameter typed uuid (by the spec, or by the project where the
// spec shows no type) answers 422 `uuid_parsing` at ["path", name]; one the spec types as a plain string
// answers 404. The OpenAPI document says which, and the parameters the spec types are typed as it does.
import { beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../control-plane/src/app.ts';
import type { RouteDef } from '../control-plane/src/http/route.ts';
import { usePlatform, type TestPlatform } from './support/platform.ts';
import { fixtures, sampleBodies, type FixtureContext } from './support/tenancy-fixtures.ts';

let tp: TestPlatform;
let ctx: FixtureContext;
let doc: any;
const ids = new Map<string, Promise<string>>();

const routes = allRoutes().filter((r) => !r.internal && (r.auth ?? 'secret') === 'secret');
const paramsOf = (r: RouteDef) => [...r.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
const openApiPath = (r: RouteDef) => `/v1${r.path}`.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const schemaOf = (r: RouteDef, p: string) => doc.paths[openApiPath(r)][r.method].parameters.find((x: { in: string; name: string }) => x.in === 'path' && x.name === p).schema;

// How the spec types path ids where it shows them (operation id -> parameter -> type).
const SPEC_TYPES: Record<string, Record<string, 'string' | 'uuid'>> = {
  updateCall: { call_id: 'string' },
  getAgent: { agent_id: 'uuid' },
  updateIntegration: { credential_id: 'uuid' },
  deleteCredential: { credential_id: 'string' },
  listWebhookDeliveries: { webhook_id: 'uuid' },
  updatePhoneNumberInboundRouting: { phone_number_id: 'string' },
};

beforeAll(async () => {
  tp = await usePlatform();
  const a = await tp.createOrg('ids');
  ctx = {
    tp,
    key: a.key,
    orgId: a.orgId,
    get(param) {
      if (!ids.has(param)) ids.set(param, fixtures[param]!(ctx));
      return ids.get(param)!;
    },
  };
  doc = (await tp.request('get', '/openapi.json')).body;
});

describe('malformed path ids', () => {
  it('the parameters the spec types are typed as it does', () => {
    const ops = new Map(routes.map((r) => [r.operationId, r]));
    for (const [op, params] of Object.entries(SPEC_TYPES)) {
      const r = ops.get(op);
      if (!r) continue; // a resource not served yet
      for (const [p, type] of Object.entries(params)) expect(schemaOf(r, p).format === 'uuid' ? 'uuid' : 'string', `${op} ${p}`).toBe(type);
    }
    // Every call operation follows `call_id` as the spec types it.
    for (const r of routes.filter((r) => paramsOf(r).includes('call_id'))) expect(schemaOf(r, 'call_id').format, r.operationId).toBeUndefined();
  });

  for (const r of routes.filter((r) => paramsOf(r).length)) {
    for (const bad of paramsOf(r)) {
      it(`${r.method.toUpperCase()} /v1${r.path} with a malformed :${bad}`, async () => {
        let path = `/v1${r.path}`;
        for (const p of paramsOf(r)) path = path.replace(`:${p}`, p === bad ? 'not-a-uuid' : await ctx.get(p));
        const body = r.body && r.bodyType !== 'multipart' ? (sampleBodies[r.operationId] ?? {}) : undefined;
        const res = await tp.request(r.method, path, { key: ctx.key, ...(body !== undefined ? { body } : {}) });
        if (schemaOf(r, bad).type === 'integer') {
          // A number, not an id (an agent's :version): a 422 at the parameter.
          expect(res.status).toBe(422);
          expect(res.body.detail[0]).toMatchObject({ loc: ['path', bad], input: 'not-a-uuid' });
        } else if (schemaOf(r, bad).format === 'uuid') {
          expect(res.status).toBe(422);
          expect(res.body.detail).toContainEqual({ type: 'uuid_parsing', loc: ['path', bad], msg: 'Input should be a valid UUID', input: 'not-a-uuid' });
        } else {
          expect({ status: res.status, type: res.body?.type }).toEqual({ status: 404, type: 'not_found' });
        }
      });
    }
  }
});
