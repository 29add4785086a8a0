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
import type { Db } from './db/types.ts';

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
  /** Standby agents: rooms with an agent already in them, taken by web calls (modules/standby). */
  standby: StandbyAgents;
  /** Where clients reach this API (PUBLIC_BASE_URL, else the listener's own URL). */
  publicBaseUrl(): string;
  /** Authenticates the media workers' own credential on the internal API. */
  workerAuth(header: string): Promise<Auth>;
}

/** What routes and jobs use of the standby agents' pool (modules/standby/pool.ts). */
export interface StandbyAgents {
  /** In a web call's transaction: a ready standby room taken for the call, or null (dispatch as before). */
  take(tx: Db, callId: string): Promise<string | null>;
  /** After the take committed: the fallback dispatch if the room's job does not claim the call, and a top-up. */
  afterTake(room: string): void;
  /** A standby job claimed its call. */
  claimed(): void;
  /** A standby job's held request: its call or release, or null (timeout, abort, shutdown). */
  waitFor(room: string, timeoutMs: number, signal: AbortSignal): Promise<{ room: string; call_id: string } | { room: string; release: true } | null>;
  /** A ready room whose job's request closed unanswered: removed from the pool and replaced. */
  dropRoom(room: string): Promise<void>;
  /** A draining worker's standby jobs are released. */
  releaseWorker(workerId: string): Promise<void>;
  topUp(): Promise<void>;
  start(services: Services, maintain: boolean): Promise<void>;
  stop(): Promise<void>;
}
