// Starts a real control plane for a test file: its own database, an ephemeral port, silent logs.
import { afterAll } from 'vitest';
import { randomBytes } from 'node:crypto';
import { loadConfig, type Config } from '../../control-plane/src/config.ts';
import { startPlatform, type Platform } from '../../control-plane/src/platform.ts';
import { createOrgWithKey } from '../../control-plane/src/modules/workspace/orgs.ts';
import { createLogger, type Logger } from '../../shared/logger.ts';
import { createTestDatabase } from './db.ts';
import { mintCapability } from '../../control-plane/src/modules/calls/capability.ts';

export interface TestResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  key?: string | null;
  body?: unknown;
  /** Sent as-is (for malformed JSON and content-type tests). */
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface TestPlatform {
  platform: Platform;
  url: string;
  config: Config;
  sql: Platform['services']['sql'];
  /** A fresh organisation and its API key. */
  createOrg(name?: string): Promise<{ orgId: string; key: string }>;
  request<T = any>(method: string, path: string, opts?: RequestOptions): Promise<TestResponse<T>>;
  /** The call's worker capability, as the control plane puts it in the call's dispatch metadata. */
  capability(callId: string): string;
  close(): Promise<void>;
}

export async function startTestPlatform(overrides: Partial<Config> = {}, opts: { log?: Logger } = {}): Promise<TestPlatform> {
  const database = await createTestDatabase();
  const config = loadConfig(
    {},
    {
      NODE_ENV: 'test',
      DATABASE_URL: database.url,
      PORT: 0,
      METRICS_PORT: 0,
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_SECOND: 0,
      // The abuse limits are off unless a test turns them on (every test's requests come from 127.0.0.1).
      RATE_LIMIT_ORG_PER_SECOND: 0,
      AUTH_FAILURES_PER_MINUTE_PER_IP: 0,
      PUBLISHABLE_WEB_CALLS_PER_MINUTE_PER_IP: 0,
      WORKER_RATE_LIMIT_PER_SECOND: 0,
      // No standby agents unless a test asks (modules/standby): most tests have no worker to keep them.
      STANDBY_AGENTS: 0,
      DATABASE_POOL_MAX: 5,
      MASTER_KEY: randomBytes(32).toString('base64'),
      WORKER_TOKEN: 'test-worker-token-0123456789abcdef0123',
      ...overrides,
    },
  );
  const platform = await startPlatform(config, { log: opts.log ?? createLogger('test', process.env.TEST_LOG_LEVEL ?? 'silent') });
  let n = 0;
  const tp: TestPlatform = {
    platform,
    url: platform.url,
    config,
    sql: platform.services.sql,
    async createOrg(name) {
      const org = await createOrgWithKey(platform.services.sql, name ?? `org ${++n}`);
      return { orgId: org.org_id, key: org.api_key };
    },
    capability: (callId) => mintCapability(platform.services, callId),
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (opts.key) headers.authorization = `Bearer ${opts.key}`;
      let body: string | undefined;
      if (opts.rawBody !== undefined) body = opts.rawBody;
      else if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(platform.url + path, { method: method.toUpperCase(), headers, ...(body !== undefined ? { body } : {}) });
      const text = await res.text();
      let parsed: unknown = text;
      if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
      return { status: res.status, body: parsed as never, headers: res.headers };
    },
    async close() {
      await platform.close();
      await database.drop();
    },
  };
  return tp;
}

// Platforms started with usePlatform() in this file. The afterAll below is registered when this module is
// imported (during the test file's collection), so it runs even when usePlatform() itself is called inside a
// beforeAll, where vitest would silently drop an afterAll registered there.
const live = new Set<TestPlatform>();
afterAll(async () => {
  for (const tp of [...live].reverse()) await tp.close();
  live.clear();
});

/** Starts a platform for the current file and closes it after the file's tests. */
export async function usePlatform(overrides: Partial<Config> = {}, opts: { log?: Logger } = {}): Promise<TestPlatform> {
  const tp = await startTestPlatform(overrides, opts);
  live.add(tp);
  return tp;
}
