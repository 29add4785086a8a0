// A function tool's URL is checked when the tool is created or changed: what the workers' SSRF guard would
// always refuse is a 422 at once, as for webhooks.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';

let tp: TestPlatform;
let key: string;

beforeAll(async () => {
  tp = await usePlatform();
  key = (await tp.createOrg()).key;
});

describe('function tool URLs', () => {
  it('refuses private, loopback, link-local and local-name URLs at creation', async () => {
    for (const url of ['http://10.1.2.3/hook', 'http://127.0.0.1:8080/x', 'http://[::1]/x', 'http://169.254.169.254/latest/meta-data/', 'http://db.internal/x', 'http://localhost/x', 'ftp://example.com/x']) {
      const res = await tp.request('post', '/v1/tools', { key, body: { type: 'function', name: 'lookup', url } });
      expect(res.status, url).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'url'], type: expect.stringMatching(/url_not_allowed|url_parsing/) });
    }
  });

  it('refuses them on update too, and accepts public URLs', async () => {
    const created = await tp.request('post', '/v1/tools', { key, body: { type: 'function', name: 'lookup', url: 'https://api.example.com/lookup' } });
    expect(created.status).toBe(201);
    const bad = await tp.request('patch', `/v1/tools/${created.body.id}`, { key, body: { url: 'http://192.168.1.10/x' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ['body', 'url'], type: 'url_not_allowed' });
    const ok = await tp.request('patch', `/v1/tools/${created.body.id}`, { key, body: { url: 'https://api.example.com/v2/lookup' } });
    expect(ok.status).toBe(200);
  });
});
