// pg-boss on the platform's database: a job enqueued inside our transaction runs once it commits, and
// vanishes with a rollback.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../test/support/platform.ts';
import { registerQueue, sendInTx, type Job } from './boss.ts';

let tp: TestPlatform;
const received: { data: { n: number }; done: () => void }[] = [];
let waiters: ((j: Job<{ n: number }>) => void)[] = [];

beforeAll(async () => {
  tp = await usePlatform();
  await registerQueue<{ n: number }>(tp.platform.services.boss, {
    name: 'test.roundtrip',
    handler: async (jobs) => {
      for (const j of jobs) {
        received.push({ data: j.data, done: () => {} });
        waiters.forEach((w) => w(j));
      }
    },
  });
});

const nextJob = () => new Promise<Job<{ n: number }>>((resolve) => (waiters = [resolve]));

describe('pg-boss', () => {
  it('runs a job sent in a committed transaction', async () => {
    const boss = tp.platform.services.boss;
    const got = nextJob();
    const id = await tp.sql.begin((tx) => sendInTx(boss, tx, 'test.roundtrip', { n: 1 }));
    expect(id).toEqual(expect.any(String));
    const job = await got;
    expect(job.id).toBe(id);
    expect(job.data).toEqual({ n: 1 });
  });

  it('drops a job whose transaction rolls back', async () => {
    const boss = tp.platform.services.boss;
    let sentId: string | null = null;
    await tp.sql
      .begin(async (tx) => {
        sentId = await sendInTx(boss, tx, 'test.roundtrip', { n: 2 });
        throw new Error('roll back');
      })
      .catch(() => {});
    expect(sentId).toEqual(expect.any(String));
    expect(await boss.getJobById('test.roundtrip', sentId!)).toBeNull();
    // A later job still flows, and the rolled-back one never ran.
    const got = nextJob();
    await boss.send('test.roundtrip', { n: 3 });
    expect((await got).data).toEqual({ n: 3 });
    expect(received.map((r) => r.data.n)).not.toContain(2);
  });

  it('readiness checks the database and the queue', async () => {
    const res = await tp.request('get', '/health/ready');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', checks: { database: { status: 'ok' }, jobs: { status: 'ok' } } });
  });
});
