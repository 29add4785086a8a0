// Wires the control plane together: database (embedded or DATABASE_URL), migrations, pg-boss, auth, HTTP
// and metrics. Used by `npm start`, the admin command and the tests.
import type { Server } from 'node:http';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createLogger, type Logger } from '../../shared/logger.ts';
import type { Config } from './config.ts';
import { openDatabase, type Database } from './db/connect.ts';
import { migrate } from './db/migrate.ts';
import { startBoss, registerQueue, type PgBoss } from './jobs/boss.ts';
import { AuthService } from './auth/service.ts';
import { RateLimiter } from './http/rate-limit.ts';
import { Metrics } from './metrics.ts';
import { createApp } from './app.ts';
import { queueDefinitions } from './modules/jobs.ts';
import { startSimulatedCarrierEdge } from './modules/phone-numbers/carriers/simulated-edge.ts';
import { unauthorized } from './http/errors.ts';
import type { Services } from './services.ts';
import { secretsFromEnv } from './crypto/secrets.ts';
import { startWebhookDispatcher } from './modules/webhooks/dispatcher.ts';
import { createLiveKit } from './livekit/client.ts';
import { StandbyPool } from './modules/standby/pool.ts';
import { startPhoneNumbers } from './modules/phone-numbers/jobs.ts';
import { rateTableFor } from './modules/phone-numbers/rates.ts';
import { attachListenStreams, type ListenStreams } from './modules/calls/listen-stream.ts';

export interface Platform {
  services: Services;
  db: Database;
  server: Server | null;
  metricsServer: Server | null;
  /** The listen streams served on the listener (modules/calls/listen-stream.ts), once it listens. */
  listenStreams: ListenStreams | null;
  /** Base URL of the HTTP listener, e.g. http://127.0.0.1:8080 */
  url: string;
  close(): Promise<void>;
}

export interface PlatformOptions {
  /** Start the HTTP listener (and the metrics listener). */
  listen?: boolean;
  log?: Logger;
}

function workerAuthenticator(token: string | undefined) {
  const expected = token ? createHash('sha256').update(token).digest() : null;
  return async (header: string) => {
    const m = /^Bearer\s+(\S+)$/i.exec(header ?? '');
    if (!expected || !m) throw unauthorized('Missing or invalid worker credential');
    const given = createHash('sha256').update(m[1]!).digest();
    if (!timingSafeEqual(given, expected)) throw unauthorized('Missing or invalid worker credential');
    return { orgId: '', actorType: 'worker' as const, actorId: 'worker' };
  };
}

/** The per-organisation, failed-authentication and publishable web call buckets (http/rate-limit.ts). */
function abuseLimits(config: Config, sql: Database['sql'], onError: (err: unknown) => void): Services['limits'] {
  const sync = config.RATE_LIMIT_SYNC_MS;
  const perMinute = (n: number) => n / 60;
  return {
    org: new RateLimiter(config.RATE_LIMIT_ORG_PER_SECOND, config.RATE_LIMIT_ORG_BURST, sql, sync, onError, {
      detail: 'Too many requests for this organisation; slow down',
      extra: { reason: 'org_rate_limit' },
    }),
    authFailures: new RateLimiter(perMinute(config.AUTH_FAILURES_PER_MINUTE_PER_IP), Math.max(1, config.AUTH_FAILURES_PER_MINUTE_PER_IP), sql, sync, onError, {
      detail: 'Too many failed authentications from this address; retry later',
      extra: { reason: 'auth_failures' },
    }),
    publishableWebCalls: new RateLimiter(
      perMinute(config.PUBLISHABLE_WEB_CALLS_PER_MINUTE_PER_IP),
      Math.max(1, config.PUBLISHABLE_WEB_CALLS_PER_MINUTE_PER_IP),
      sql,
      sync,
      onError,
      {
        detail: 'Too many web calls from this address; retry later',
        extra: {
          reason: 'web_calls_per_ip',
          limit: 'publishable_web_calls_per_minute_per_ip',
          limit_value: config.PUBLISHABLE_WEB_CALLS_PER_MINUTE_PER_IP,
        },
      },
    ),
  };
}

export async function startPlatform(config: Config, opts: PlatformOptions = {}): Promise<Platform> {
  const log = opts.log ?? createLogger('control-plane', config.LOG_LEVEL);
  rateTableFor(config); // a missing or malformed RATE_TABLE_PATH stops the start (ConfigError), not the first call
  const db = await openDatabase(config, log);
  const applied = await migrate(db.sql);
  if (applied.length) log.info({ applied }, 'migrations applied');

  // Every process can enqueue jobs; only JOBS_ENABLED ones run workers (see the queue loop below).
  const boss: PgBoss = await startBoss(db.url, log, { superviseIntervalSeconds: config.JOBS_SUPERVISE_INTERVAL_SECONDS });

  // Filled in once the listener is up; used for signed URLs when PUBLIC_BASE_URL is not set.
  let publicUrl = `http://${config.HOST}:${config.PORT}`;
  const metrics = new Metrics();
  metrics.watchDatabase(db.sql, config.DATABASE_POOL_MAX);
  metrics.watchOperations(db.sql);
  const auth = new AuthService(db.sql, config, log);
  await auth.start();

  const onLimitError = (err: unknown) => log.warn({ err }, 'rate limit sync failed');
  const services: Services = {
    config,
    log,
    sql: db.sql,
    boss,
    auth,
    rateLimiter: new RateLimiter(config.RATE_LIMIT_PER_SECOND, config.RATE_LIMIT_BURST, db.sql, config.RATE_LIMIT_SYNC_MS, onLimitError),
    // Keys `worker:<id>` never meet customers' key ids in the shared table.
    workerRateLimiter: new RateLimiter(config.WORKER_RATE_LIMIT_PER_SECOND, config.WORKER_RATE_LIMIT_BURST, db.sql, config.RATE_LIMIT_SYNC_MS, onLimitError),
    limits: abuseLimits(config, db.sql, onLimitError),
    metrics,
    secrets: secretsFromEnv({
      masterKey: config.MASTER_KEY,
      version: config.MASTER_KEY_VERSION,
      previous: config.MASTER_KEYS_PREVIOUS,
      dataDir: config.DATA_DIR,
      production: config.NODE_ENV === 'production',
    }),
    livekit: createLiveKit(config),
    standby: new StandbyPool(),
    publicBaseUrl: () => config.PUBLIC_BASE_URL ?? publicUrl,
    workerAuth: workerAuthenticator(config.WORKER_TOKEN),
  };

  {
    const b = boss;
    for (const def of queueDefinitions(services)) await registerQueue(b, def, { work: config.JOBS_ENABLED });
    const depth = new (await import('prom-client')).default.Gauge({
      name: 'vap_jobs_queue_depth',
      help: 'pg-boss jobs by queue and state',
      labelNames: ['queue', 'state'],
      registers: [metrics.registry],
    });
    metrics.addCollector(async () => {
      for (const q of await b.getQueues()) {
        depth.set({ queue: q.name, state: 'ready' }, q.readyCount);
        depth.set({ queue: q.name, state: 'deferred' }, q.deferredCount);
        depth.set({ queue: q.name, state: 'active' }, q.activeCount);
        depth.set({ queue: q.name, state: 'failed' }, q.failedCount);
      }
    });
  }

  // The catch-all SIP dispatch rule and a first repair of interrupted purchases (phone numbers).
  if (config.JOBS_ENABLED) void startPhoneNumbers(services);

  // Webhook delivery runs where jobs do.
  const webhooks = config.JOBS_ENABLED ? await startWebhookDispatcher(services) : null;
  // The simulated carrier's termination edge (outbound calls from simulated numbers), where dial jobs run.
  const simulatedEdge = config.JOBS_ENABLED ? await startSimulatedCarrierEdge(services) : null;

  services.rateLimiter.start();
  for (const l of Object.values(services.limits)) l.start();
  services.workerRateLimiter.start();
  // Every process hears takes (it may hold a standby job's request); the pool is kept where jobs run.
  await services.standby.start(services, config.JOBS_ENABLED);

  let server: Server | null = null;
  let metricsServer: Server | null = null;
  let listenStreams: ListenStreams | null = null;
  let url = '';
  if (opts.listen ?? true) {
    const app = createApp(services);
    server = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(config.PORT, config.HOST, () => resolve(s));
      s.once('error', reject);
    });
    // The listen streams' WebSockets (GET /v1/calls/{id}/listen/stream) are upgrades of this listener.
    listenStreams = attachListenStreams(server, services);
    const addr = server.address() as AddressInfo;
    url = `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`;
    publicUrl = url;
    metricsServer = await metrics.listen(config.METRICS_HOST, config.METRICS_PORT, log);
    log.info({ url, metrics_port: (metricsServer.address() as AddressInfo).port }, 'control plane listening');
  }

  let closed = false;
  return {
    services,
    db,
    server,
    metricsServer,
    listenStreams,
    url,
    async close() {
      if (closed) return;
      closed = true;
      // Stop taking requests at once, let the ones in flight finish (bounded), then stop jobs and the database.
      // Listen streams end meanwhile (their upgraded sockets are not the HTTP server's to close), leaving their rooms.
      const s = server;
      const requestsDone = s
        ? new Promise<void>((resolve) => {
            const timer = setTimeout(() => {
              s.closeAllConnections();
              resolve();
            }, config.SHUTDOWN_TIMEOUT_MS);
            s.close(() => {
              clearTimeout(timer);
              resolve();
            });
            s.closeIdleConnections();
          })
        : Promise.resolve();
      await Promise.all([listenStreams?.close().catch((err: unknown) => log.warn({ err }, 'listen streams close failed')), requestsDone]);
      metricsServer?.close();
      await services.standby.stop().catch((err: unknown) => log.warn({ err }, 'standby pool stop failed'));
      await services.rateLimiter.stop();
      for (const l of Object.values(services.limits)) await l.stop();
      await services.workerRateLimiter.stop();
      await webhooks?.stop().catch((err: unknown) => log.warn({ err }, 'webhook dispatcher stop failed'));
      await simulatedEdge?.close().catch((err: unknown) => log.warn({ err }, 'simulated carrier edge close failed'));
      await boss?.stop({ graceful: true, timeout: config.SHUTDOWN_TIMEOUT_MS }).catch((err: unknown) => log.warn({ err }, 'pg-boss stop failed'));
      await auth.stop();
      await db.close();
    },
  };
}
