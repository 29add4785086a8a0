// Idempotent ingestion under a real crash: the `knowledge.ingest` worker runs in a child process that is
// SIGKILLed inside its write transaction (chunk rows inserted, nothing committed). pg-boss expires the
// orphaned job and a fresh worker process retries it; the source must end exactly as a clean ingestion
// of the same text, with the token totals and the org's budget usage exact.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgBoss } from 'pg-boss';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { INGEST_QUEUE } from './jobs.ts';
import { tokensUsed } from './queries.ts';

const WORKER_SCRIPT = fileURLToPath(new URL('../../../../test/support/kb-ingest-worker.ts', import.meta.url));
// Long enough for the doomed worker to reach its write transaction first: the text is parsed in a child
// process (parse-sandbox.ts), whose start takes seconds on a loaded machine, and the job must still be active
// when it is killed.
const EXPIRE_SECONDS = 40;

let tp: TestPlatform;
let key: string;
let orgId: string;
const children = new Set<ChildProcess>();
let supervisor: PgBoss | null = null;

// The test's own HTTP endpoint the crashing worker calls mid-write; it never answers.
let hold: { url: string; reached: Promise<void>; close(): Promise<void> };
function startHold(): Promise<typeof hold> {
  let reach!: () => void;
  const reached = new Promise<void>((r) => (reach = r));
  const server = http.createServer((req) => {
    if (req.url === '/hold') reach();
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hold`,
        reached,
        close: () => {
          server.closeAllConnections();
          return new Promise((r) => server.close(() => r()));
        },
      }),
    ),
  );
}

/** Starts a worker process on the test's database and resolves once its pg-boss workers are up. */
function startWorker(extra: Record<string, string> = {}): Promise<ChildProcess> {
  const c = tp.config;
  const child = spawn(process.execPath, [WORKER_SCRIPT], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: c.DATABASE_URL!,
      MASTER_KEY: c.MASTER_KEY!,
      WORKER_TOKEN: c.WORKER_TOKEN!,
      PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_SECOND: '0',
      DATABASE_POOL_MAX: '5',
      JOBS_ENABLED: 'true',
      KB_JOB_RETRY_DELAY_SECONDS: '1',
      ...extra,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready\n')) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`worker exited (${code}) before it was ready`)));
  });
}

const exited = (child: ChildProcess) => new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())));

async function until<T>(probe: () => Promise<T | undefined | null | false>): Promise<T> {
  for (;;) {
    const v = await probe();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  // This process only serves the API and enqueues: the jobs run in the child processes.
  tp = await usePlatform({ JOBS_ENABLED: false, KB_JOB_RETRY_DELAY_SECONDS: 1 });
  ({ key, orgId } = await tp.createOrg('kb-kill'));
  hold = await startHold();
});
afterAll(async () => {
  for (const c of children) {
    c.kill('SIGKILL');
    await exited(c);
  }
  await supervisor?.stop({ graceful: false });
  await hold?.close();
});

async function addText(kb: string, text: string) {
  const form = new FormData();
  form.append('type', 'text');
  form.append('text', text);
  const res = await fetch(`${tp.url}/v1/knowledge-bases/${kb}/sources`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  expect(res.status).toBe(201);
  return (await res.json()) as { source: { source_id: string }; job: { job_id: string } };
}

const jobOf = (kb: string, jobId: string) =>
  until(async () => {
    const res = await tp.request('get', `/v1/knowledge-bases/${kb}/jobs/${jobId}`, { key });
    return res.body.status === 'succeeded' || res.body.status === 'failed' ? res.body : null;
  });

const chunksOf = (sourceId: string) =>
  tp.sql<{ ordinal: number; heading: string; content: string; token_count: number }[]>`
    select ordinal, heading, content, token_count from knowledge_chunks where source_id = ${sourceId} order by ordinal`;

describe('a worker killed mid-job', () => {
  it('is retried by a fresh worker process and leaves exactly what a clean ingestion leaves', async () => {
    // Jobs sent from now on inherit a short expiry, so the orphaned job is retried within seconds.
    await tp.platform.services.boss.updateQueue(INGEST_QUEUE, { expireInSeconds: EXPIRE_SECONDS });
    const text = Array.from({ length: 700 }, (_, i) => `Fact ${i}: the answer to question ${i} is ${i * 7}.`).join('\n\n');
    const kb = (await tp.request('post', '/v1/knowledge-bases', { key, body: { name: 'kill', chunk_size: 64 } })).body.kb_id;

    const doomed = await startWorker({ KB_TEST_HOLD_URL: hold.url });
    const res = await addText(kb, text);
    const sourceId = res.source.source_id;

    // The worker is inside its write transaction, after the first batch of chunk rows.
    await hold.reached;
    const [open] = await tp.sql<{ pid: number }[]>`
      select pid from pg_stat_activity
      where datname = current_database() and state = 'idle in transaction' and query ilike '%insert into knowledge_chunks%'`;
    expect(open).toBeDefined();
    doomed.kill('SIGKILL');
    await exited(doomed);
    expect(doomed.signalCode).toBe('SIGKILL');
    // Postgres sees the dead connection and rolls its transaction back: nothing partial is visible.
    await until(async () => !(await tp.sql`select 1 from pg_stat_activity where pid = ${open!.pid}`).length);
    expect(await chunksOf(sourceId)).toEqual([]);
    const [mid] = await tp.sql<{ status: string }[]>`select status from knowledge_sources where id = ${sourceId}`;
    expect(mid!.status).toBe('processing');
    const [active] = await tp.sql<{ state: string }[]>`select state from pgboss.job where name = ${INGEST_QUEUE} and data->>'job_id' = ${res.job.job_id}`;
    expect(active!.state).toBe('active');

    // A supervisor that checks expiry every second, and a fresh worker process to pick up the retry.
    supervisor = new PgBoss({ connectionString: tp.config.DATABASE_URL!, schema: 'pgboss', superviseIntervalSeconds: 1, monitorIntervalSeconds: 1, max: 2 });
    supervisor.on('error', () => {});
    await supervisor.start();
    await startWorker();

    const job = await jobOf(kb, res.job.job_id);
    expect(job.status).toBe('succeeded');
    expect(job.attempts).toBeGreaterThanOrEqual(2);
    const src = (await tp.request('get', `/v1/knowledge-bases/${kb}/sources/${sourceId}`, { key })).body;
    expect(src.status).toBe('ready');

    // The same text ingested cleanly, by the same fresh worker.
    const clean = await addText(kb, text);
    expect((await jobOf(kb, clean.job.job_id)).attempts).toBe(1);
    const cleanSrc = (await tp.request('get', `/v1/knowledge-bases/${kb}/sources/${clean.source.source_id}`, { key })).body;

    const retried = await chunksOf(sourceId);
    const fresh = await chunksOf(clean.source.source_id);
    expect(fresh.length).toBeGreaterThan(100); // more than the batch written before the kill
    expect(retried.map(({ ordinal, heading, content, token_count }) => ({ ordinal, heading, content, token_count }))).toEqual(fresh);
    expect(src.chunk_count).toBe(fresh.length);
    expect(src.token_count).toBe(cleanSrc.token_count);
    expect(src.token_count).toBe(retried.reduce((n, c) => n + c.token_count, 0));
    expect(await tp.sql`select source_id, ordinal from knowledge_chunks where kb_id = ${kb} group by source_id, ordinal having count(*) > 1`).toEqual([]);
    expect(await tp.sql`select content from knowledge_chunks where source_id = ${sourceId} group by content having count(*) > 1`).toEqual([]);

    const base = (await tp.request('get', `/v1/knowledge-bases/${kb}`, { key })).body;
    expect(base.total_tokens).toBe(src.token_count + cleanSrc.token_count);
    expect(await tokensUsed(tp.sql, orgId)).toBe(src.token_count + cleanSrc.token_count);
  }, 300_000);
});
