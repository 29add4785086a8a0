// Operability: Prometheus metrics on their own port, and a shutdown that lets requests in flight finish.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startTestPlatform } from '../../test/support/platform.ts';

describe('metrics', () => {
  it('serves HTTP, database and queue figures on the metrics port only', async () => {
    const tp = await startTestPlatform();
    try {
      const org = await tp.createOrg();
      await tp.request('get', '/v1/api-keys', { key: org.key });
      await tp.request('get', '/v1/api-keys/not-a-uuid', { key: org.key });
      const port = (tp.platform.metricsServer!.address() as AddressInfo).port;
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(text).toMatch(/vap_http_request_duration_seconds_count\{route="\/v1\/api-keys",method="GET",status="200"\} 1/);
      expect(text).toContain('vap_db_pool_max 5');
      expect(text).toMatch(/vap_db_connections\{state="\w+"\} \d+/);
      expect(text).toContain('vap_jobs_queue_depth');
      expect(text).toContain('vap_cp_process_cpu_user_seconds_total');
      expect((await tp.request('get', '/metrics')).status).toBe(404);
    } finally {
      await tp.close();
    }
  });
});

describe('graceful shutdown', () => {
  it('finishes a request in flight, then refuses new connections', async () => {
    const tp = await startTestPlatform();
    const org = await tp.createOrg();
    const { port } = new URL(tp.url);
    const body = JSON.stringify({ name: 'in flight' });
    // Send the headers and half the body, start the shutdown once the server is handling the request, then
    // send the rest.
    const server = tp.platform.server!;
    const arrived = new Promise((r) => server.once('request', r));
    let req!: http.ClientRequest;
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      req = http.request(
        { host: '127.0.0.1', port, method: 'POST', path: '/v1/api-keys', headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 5));
    });
    await arrived;
    const closing = tp.close();
    expect(server.listening).toBe(false); // the shutdown has begun: no new connections are taken
    req.end(body.slice(5));
    const res = await response;
    await closing;
    expect(res.status).toBe(201);
    expect(JSON.parse(res.text).name).toBe('in flight');
    await expect(fetch(tp.url + '/health')).rejects.toThrow();
  });
});

describe('rate limiting', () => {
  it('answers 429 with Retry-After once a credential exhausts its bucket, per credential', async () => {
    const tp = await startTestPlatform({ RATE_LIMIT_PER_SECOND: 0.5, RATE_LIMIT_BURST: 3 });
    try {
      const a = await tp.createOrg();
      const b = await tp.createOrg();
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await tp.request('get', '/v1/api-keys', { key: a.key })).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      const limited = await tp.request('get', '/v1/api-keys', { key: a.key });
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(limited.body).toEqual({
        detail: 'Too many requests for this credential; slow down',
        type: 'rate_limited',
        request_id: limited.headers.get('x-request-id'),
        retry_after_seconds: Number(limited.headers.get('retry-after')),
      });
      // Another organisation's credential has its own bucket.
      expect((await tp.request('get', '/v1/api-keys', { key: b.key })).status).toBe(200);
    } finally {
      await tp.close();
    }
  });
});
