// The built SDK files are served from the API's origin, to pages on any origin, and nothing else from web/dist.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';

let dist: string;
let tp: TestPlatform;

beforeAll(async () => {
  dist = mkdtempSync(path.join(os.tmpdir(), 'vap-sdk-'));
  writeFileSync(path.join(dist, 'vap-widget.js'), '(()=>{})();\n');
  writeFileSync(path.join(dist, 'secret.txt'), 'not served\n');
  tp = await usePlatform({ WEB_DIST_DIR: dist });
});

afterAll(() => rmSync(dist, { recursive: true, force: true }));

describe('GET /sdk/:file', () => {
  it('serves the widget as JavaScript that any page may load', async () => {
    const res = await fetch(`${tp.platform.url}/sdk/vap-widget.js`, { headers: { origin: 'https://shop.example.com' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('(()=>{})();\n');
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('404 for a file that is not built, and for anything else in the folder', async () => {
    for (const f of ['vap.mjs', 'secret.txt', '..%2Fpackage.json']) {
      const res = await fetch(`${tp.platform.url}/sdk/${f}`);
      expect(res.status, f).toBe(404);
    }
  });
});
