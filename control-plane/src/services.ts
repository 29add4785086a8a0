// What route handlers and jobs may use. Built once at start-up (see platform.ts).
import type { Sql } from 'postgres';
import type { Config } from './config.ts';
import type { Logger } from '../../shared/logger.ts';
import type { AuthService, Auth } from './auth/service.ts';
import type { RateLimiter } from './http/rate-limit.ts';
import type { Metrics } from './metrics.ts';
import type { PgBoss } from './jobs/boss.ts';
import type { Secrets } from './crypto/secrets.ts';
import type { LiveKit } from './livekit/client.ts';

export interface Services {
  config: Config;
  log: Logger;
  sql: Sql;
  /** Always started, so every process can enqueue; workers run only where JOBS_ENABLED is true. */
  boss: PgBoss;
  auth: AuthService;
  /** Requests per credential (key: the credential's id): customers' API keys and users. */
  rateLimiter: RateLimiter;
  /** Media workers, one bucket per worker id (WORKER_RATE_LIMIT_*). */
  workerRateLimiter: RateLimiter;
  /** Abuse limits, keyed with a prefix each: `org:<id>` requests per organisation, `ip:<address>` failed
   * authentications per client IP, `web:<org id>:<address>` publishable web calls per client IP. */
  limits: { org: RateLimiter; authFailures: RateLimiter; publishableWebCalls: RateLimiter };
  metrics: Metrics;
  /** Encrypts and decrypts secrets at rest (credentials, tool headers, webhook secrets). */
  secrets: Secrets;
  /** LiveKit: rooms, dispatch, tokens. */
  livekit: LiveKit;
  /** Where clients reach this API (PUBLIC_BASE_URL, else the listener's own URL). */
  publicBaseUrl(): string;
  /** Authenticates the media workers' own credential on the internal API. */
  workerAuth(header: string): Promise<Auth>;
}
