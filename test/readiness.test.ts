// GET /health/ready reports each dependency (database, job queue, LiveKit API, registered media workers) with
// its own status, and answers 503 only for the checks the deployment requires (READY_REQUIRED_CHECKS).
// /health stays liveness. The LiveKit and worker checks run against a real LiveKit server and worker.
import { describe, expect, it } from 'vitest';
import { startTestPlatform } from './support/platform.ts';
import { useStack } from './support/stack.ts';
import { freePort } from './support/global-setup.ts';

const WORKER_TOKEN = 'test-worker-token-0123456789abcdef0123';

describe('readiness without LiveKit or workers', () => {
  it('reports LiveKit and workers as failing but stays ready when only database and jobs are required', async () => {
    const tp = await startTestPlatform({ LIVEKIT_URL: `http://127.0.0.1:${await freePort()}`, READY_CHECK_TIMEOUT_MS: 1000 });
    try {
      const res = await tp.request('get', '/health/ready');
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('ok');
      expect(res.body.checks.database).toMatchObject({ status: 'ok', required: true });
      expect(res.body.checks.jobs).toMatchObject({ status: 'ok', required: true });
      expect(res.body.checks.livekit).toMatchObject({ status: 'error', required: false });
      expect(res.body.checks.workers).toMatchObject({ status: 'error', required: false, workers: 0 });
      expect((await tp.request('get', '/health')).body).toEqual({ status: 'ok' });
    } finally {
      await tp.close();
    }
  });

  it('answers 503 when a required check fails, and counts fresh, non-draining worker heartbeats', async () => {
    const tp = await startTestPlatform({ LIVEKIT_URL: `http://127.0.0.1:${await freePort()}`, READY_REQUIRED_CHECKS: 'database,jobs,workers', READY_CHECK_TIMEOUT_MS: 1000, READY_CACHE_MS: 0 });
    try {
      const ready = () => tp.request('get', '/health/ready');
      expect((await ready()).status).toBe(503);
      const beat = (id: string, draining = false) =>
        fetch(`${tp.url}/internal/v1/workers/${id}/heartbeat`, {
          method: 'POST',
          headers: { authorization: `Bearer ${WORKER_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ agent_name: tp.config.AGENT_NAME, active_calls: 0, load: 0.1, draining }),
        });
      expect((await beat('AW_one')).status).toBe(200);
      let res = await ready();
      expect(res.status).toBe(200);
      expect(res.body.checks.workers).toMatchObject({ status: 'ok', required: true, workers: 1 });
      // A draining worker takes no new calls; a silent one is gone.
      await beat('AW_one', true);
      expect((await ready()).status).toBe(503);
      await beat('AW_two');
      await tp.sql`update media_workers set last_seen_at = now() - interval '1 minute' where id = 'AW_two'`;
      res = await ready();
      expect(res.status).toBe(503);
      expect(res.body.checks.workers.error).toContain('no media worker');
      // Heartbeats need the worker credential.
      const anon = await fetch(`${tp.url}/internal/v1/workers/x/heartbeat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(anon.status).toBe(401);
    } finally {
      await tp.close();
    }
  });
});

describe('readiness with a real LiveKit server and media worker', () => {
  it('reports LiveKit ok, then the worker once it has registered', { timeout: 120_000 }, async () => {
    const stack = await useStack({ controlPlane: true, worker: true, env: { READY_REQUIRED_CHECKS: 'database,jobs,livekit' } });
    const url = `${stack.controlPlaneUrl}/health/ready`;
    // The worker registers with LiveKit, then reports within one heartbeat interval: wait for that, not a time.
    let body: any;
    for (;;) {
      const res = await fetch(url);
      body = await res.json();
      expect(res.status).toBe(200);
      expect(body.checks.livekit).toMatchObject({ status: 'ok', required: true });
      if (body.checks.workers.status === 'ok') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(body.checks.workers.workers).toBeGreaterThanOrEqual(1);
  });
});
