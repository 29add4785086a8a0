// A real LiveKit stack for a test file: free ports, its own Redis (so parallel runs never share a cluster),
// random API keys, logs in a temporary folder (kept when VAP_STACK_KEEP_LOGS=1 or when start-up fails).
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll } from 'vitest';
import { startStack as startSupervisedStack, sipBridgeVersion, type RunningStack, type StackOptions } from '../../scripts/stack/supervisor.ts';
import { createTestDatabase } from './db.ts';

export { sipBridgeVersion };

export interface TestStackOptions {
  controlPlane?: boolean;
  worker?: boolean;
  /** Off by default (a process less per test file); `if-built` starts it only when setup built one. */
  sip?: boolean | 'if-built';
  /** Extra environment for the control plane and the worker. */
  env?: Record<string, string>;
  webhookUrl?: string | null;
}

export type TestStack = RunningStack & {
  /** The control plane's database: the one passed in env, or the stack's own (dropped by stop()). */
  databaseUrl?: string;
};

export async function startStack(opts: TestStackOptions = {}): Promise<TestStack> {
  // Standby agents only where a test asks for them (test/e2e/standby-agents.test.ts): the other files count
  // their worker's jobs and rooms, and a waiting agent would be one more of each.
  const env: Record<string, string> = { LOG_LEVEL: 'info', NODE_ENV: 'test', STANDBY_AGENTS: '0', ...opts.env };
  let database: Awaited<ReturnType<typeof createTestDatabase>> | null = null;
  if (opts.controlPlane && !env.DATABASE_URL) {
    database = await createTestDatabase();
    env.DATABASE_URL = database.url;
  }
  const options: StackOptions = {
    freePorts: true,
    redis: 'own',
    sip: opts.sip ?? false,
    controlPlane: opts.controlPlane ?? false,
    worker: opts.worker ?? false,
    env,
    logLevel: 'info',
    ...(opts.webhookUrl !== undefined ? { webhookUrl: opts.webhookUrl } : {}),
  };
  let stack: RunningStack;
  try {
    stack = await startSupervisedStack(options);
  } catch (err) {
    await database?.drop();
    throw err;
  }
  if (process.env.VAP_STACK_KEEP_LOGS === '1') writeFileSync(path.join(stack.runDir, 'keep'), '');
  const stop = stack.stop;
  // If the test process ends without stop() (an afterAll registered inside a hook never runs), the
  // supervisor's exit handler kills the services and this removes their folder.
  const removeRunDir = () => {
    if (process.env.VAP_STACK_KEEP_LOGS !== '1') rmSync(stack.runDir, { recursive: true, force: true });
  };
  process.once('exit', removeRunDir);
  return {
    ...stack,
    ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {}),
    async stop() {
      await stop();
      await database?.drop();
      removeRunDir();
      process.off('exit', removeRunDir);
    },
  };
}

// Stacks started with useStack() in this file, stopped by an afterAll registered when this module is imported
// (an afterAll registered from inside a beforeAll would never run).
const live = new Set<TestStack>();
afterAll(async () => {
  for (const s of [...live].reverse()) await s.stop();
  live.clear();
});

/** Starts a stack for the current file and stops it after the file's tests (call it anywhere, beforeAll too). */
export async function useStack(opts: TestStackOptions = {}): Promise<TestStack> {
  const stack = await startStack(opts);
  live.add(stack);
  return stack;
}
