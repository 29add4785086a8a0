// The OpenAPI document: valid 3.1 (checked by an independent validator), exactly the spec's tags, every route.
import { describe, expect, it, beforeAll } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { allRoutes } from '../app.ts';
import { TAGS } from './tags.ts';
import { usePlatform, type TestPlatform } from '../../../test/support/platform.ts';

let tp: TestPlatform;
let doc: any;

beforeAll(async () => {
  tp = await usePlatform();
  const res = await tp.request('get', '/openapi.json');
  expect(res.status).toBe(200);
  doc = res.body;
});

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('has version 1.0.0, the bearer scheme and exactly the spec tags', () => {
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.tags.map((t: { name: string }) => t.name)).toEqual([...TAGS]);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('describes every public route, each with its error responses', () => {
    for (const r of allRoutes().filter((r) => !r.internal)) {
      const path = (r.root ? r.path : `/v1${r.path}`).replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      const op = doc.paths[path]?.[r.method];
      expect(op, `${r.method} ${path}`).toBeDefined();
      expect(TAGS).toContain(op.tags[0]);
      if ((r.auth ?? 'secret') !== 'none') expect(op.responses['401']).toBeDefined();
      if (r.params || r.query || r.body) expect(op.responses['422']).toEqual({ $ref: '#/components/responses/ValidationError' });
      expect(op.responses['500']).toBeDefined();
    }
    for (const name of ['ValidationError', 'Unauthorized', 'Forbidden', 'NotFound', 'Conflict', 'PayloadTooLarge', 'RateLimited', 'InternalError']) {
      expect(doc.components.responses[name], name).toBeDefined();
    }
  });

  it('serves a docs page and its renderer locally', async () => {
    const page = await tp.request('get', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.body).toContain('/docs/redoc.standalone.js');
    expect(page.body).not.toMatch(/https?:\/\/(cdn|unpkg|jsdelivr)/);
    const js = await fetch(tp.url + '/docs/redoc.standalone.js');
    expect(js.status).toBe(200);
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  });
});
