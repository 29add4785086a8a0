// A delivery process for bench/webhooks.ts, in its own process so the emitter and the receiver have the other core.
//   mode=platform: the real control plane's dispatcher (no HTTP listener)
//   mode=floor:    the floor: a minimal job table claimed with SKIP LOCKED by 20 workers woken by LISTEN/NOTIFY
//                  (as many as the notification says jobs arrived), keeping each call's jobs in order, each
//                  doing the same signed POST (keep-alive) and one insert per attempt
import { Agent, request } from 'undici';
import { loadConfig } from '../control-plane/src/config.ts';
import { startPlatform } from '../control-plane/src/platform.ts';
import { createSql } from '../control-plane/src/db/connect.ts';
import { createLogger } from '../shared/logger.ts';
import { signatureHeaders } from '../shared/signing.ts';

const [mode, databaseUrl, masterKey, secret] = process.argv.slice(2) as [string, string, string, string];

if (mode === 'platform') {
  const config = loadConfig(
    {},
    {
      DATABASE_URL: databaseUrl,
      MASTER_KEY: masterKey,
      PORT: 0,
      METRICS_PORT: 0,
      LOG_LEVEL: 'silent',
      NODE_ENV: 'test',
      DATA_DIR: '.data/bench',
      SSRF_ALLOWLIST: '127.0.0.1',
    },
  );
  const platform = await startPlatform(config, { log: createLogger('bench', 'silent'), listen: false });
  process.on('SIGTERM', () => void platform.close().then(() => process.exit(0)));
  process.stdout.write('ready\n');
} else {
  const WORKERS = 20;
  const sql = createSql(databaseUrl, { max: WORKERS + 1 });
  const agent = new Agent({ keepAliveTimeout: 4000 });
  const waiting: (() => void)[] = [];
  // Wake as many idle workers as jobs arrived (the payload), not every worker on every notification.
  await sql.listen('floor_jobs', (payload) => {
    for (const w of waiting.splice(0, Math.max(1, Number(payload) || 1))) w();
  });
  const worker = async () => {
    for (;;) {
      // The oldest job whose call has no earlier job left (claimed or not): a call's events go out in order.
      const [job] = await sql<{ id: string; url: string; event_id: string; body: string }[]>`
        update floor_jobs set claimed = true where id = (
          select j.id from floor_jobs j
          where not j.claimed and not exists (select 1 from floor_jobs k where k.call_id = j.call_id and k.id < j.id)
          order by j.id for update skip locked limit 1)
        returning id, url, event_id, body`;
      if (!job) {
        await new Promise<void>((r) => {
          waiting.push(r);
          setTimeout(r, 1000); // a lost wake-up costs at most a second
        });
        continue;
      }
      const started = Date.now();
      let status = 0;
      try {
        const res = await request(job.url, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', ...signatureHeaders(secret, job.event_id, job.body) },
          body: job.body,
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        status = res.statusCode;
        await res.body.text();
      } catch {
        status = 0;
      }
      await sql`insert into floor_attempts (job_id, status, duration_ms) values (${job.id}, ${status}, ${Date.now() - started})`;
      await sql`delete from floor_jobs where id = ${job.id}`;
      // The call's next job became claimable: let an idle worker take it.
      waiting.shift()?.();
    }
  };
  for (let i = 0; i < WORKERS; i++) void worker();
  process.stdout.write('ready\n');
}
