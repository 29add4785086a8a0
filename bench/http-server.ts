// A server under test for bench/http.ts, run in its own process so the load generator has the other core.
//   mode=platform: the real control plane in its production configuration: auth from cache, validation,
//                  routing, the audit list query, a JSON request log line per request at LOG_LEVEL info
//                  (stdout goes to a file, as under a process supervisor), metrics, and the shared rate
//                  limiter running (its per-second rate raised so that the load is never refused: the
//                  limiter's cost is measured, not its 429s)
//   mode=bare:     bare Koa + @koa/router running the same single SQL query, no auth, validation or logging;
//                  also the do-not-call list's page and total (bench/list-page.ts), as two statements on the
//                  pool (/two-reads/do-not-call), in one transaction (/snapshot-tx/do-not-call) and as the
//                  platform reads them, in one statement (/one-read/do-not-call)
// The port is announced on fd 3, since stdout carries the request log.
import { writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import Koa from 'koa';
import Router from '@koa/router';
import { loadConfig } from '../control-plane/src/config.ts';
import { startPlatform } from '../control-plane/src/platform.ts';
import { createSql } from '../control-plane/src/db/connect.ts';
import { createLogger } from '../shared/logger.ts';
import { listNumbers } from '../control-plane/src/modules/do-not-call/queries.ts';

const [mode, databaseUrl, orgId] = process.argv.slice(2) as [string, string, string];

if (mode === 'platform') {
  const config = loadConfig({}, { DATABASE_URL: databaseUrl, PORT: 0, METRICS_PORT: 0, LOG_LEVEL: 'info', RATE_LIMIT_PER_SECOND: 1_000_000, RATE_LIMIT_BURST: 1_000_000, RATE_LIMIT_ORG_PER_SECOND: 1_000_000, RATE_LIMIT_ORG_BURST: 1_000_000, JOBS_ENABLED: false, NODE_ENV: 'production', MASTER_KEY: randomBytes(32).toString('base64'), PUBLIC_BASE_URL: 'http://127.0.0.1', DATA_DIR: '.data/bench', LIVEKIT_API_KEY: 'APIbench', LIVEKIT_API_SECRET: randomBytes(24).toString('hex') });
  const platform = await startPlatform(config, { log: createLogger('control-plane', 'info') });
  writeSync(3, `ready ${new URL(platform.url).port}\n`);
} else {
  const sql = createSql(databaseUrl, { max: 10 });
  const app = new Koa();
  const router = new Router();
  router.get('/v1/audit-events', async (ctx) => {
    const limit = 50;
    const rows = await sql`
      select id, actor_type, actor_id, action, resource_type, resource_id, request_id, host(ip) as ip, details, created_at,
             count(*) over () as total_count
      from audit_events where org_id = ${orgId}
      order by created_at desc, id desc
      limit ${limit} offset 0`;
    ctx.body = { items: rows, total: rows.length ? Number(rows[0]!.total_count) : 0, limit, offset: 0 };
  });
  const page = { limit: 50, offset: 0 };
  router.get('/two-reads/do-not-call', async (ctx) => {
    // The lists' reads before list-page.ts: the page and the count at once on two pooled connections.
    const where = sql`org_id = ${orgId}`;
    const [rows, [c]] = await Promise.all([
      sql`select * from do_not_call where ${where} order by created_at desc, id desc limit ${page.limit} offset ${page.offset}`,
      sql<{ n: number }[]>`select count(*)::int as n from do_not_call where ${where}`,
    ]);
    ctx.body = { items: rows, total: c!.n, ...page };
  });
  router.get('/snapshot-tx/do-not-call', async (ctx) => {
    // The other way to one snapshot, weighed against list-page.ts: the same two statements in a read-only
    // REPEATABLE READ transaction (BEGIN and COMMIT are two more round trips, on one connection).
    const where = sql`org_id = ${orgId}`;
    const [rows, [c]] = await sql.begin('isolation level repeatable read read only', (tx) =>
      Promise.all([
        tx`select * from do_not_call where ${where} order by created_at desc, id desc limit ${page.limit} offset ${page.offset}`,
        tx<{ n: number }[]>`select count(*)::int as n from do_not_call where ${where}`,
      ]),
    );
    ctx.body = { items: rows, total: c!.n, ...page };
  });
  router.get('/one-read/do-not-call', async (ctx) => {
    const { rows, total } = await listNumbers(sql, orgId, page);
    ctx.body = { items: rows, total, ...page };
  });
  app.use(router.routes());
  const server = app.listen(0, '127.0.0.1', () => writeSync(3, `ready ${(server.address() as { port: number }).port}\n`));
}
