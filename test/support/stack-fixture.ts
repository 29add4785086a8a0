// What most end-to-end files start with: a stack with a control plane on its own database (startStack makes it,
// and drops it once the services have stopped), a small pool on that database, and an organisation with its API
// key and `api`, its client. Made at module load (the file's helpers use `api`), started in beforeAll. stop() goes
// first in the file's afterAll: the services stop while the stand-ins they call are still up.
import { apiClient } from './e2e.ts';
import { startStack, type TestStack, type TestStackOptions } from './stack.ts';
import { createSql, type Sql } from '../../control-plane/src/db/connect.ts';
import { createOrgWithKey } from '../../control-plane/src/modules/workspace/orgs.ts';

export interface StackFixtureOptions {
  /** The organisation's name. */
  org: string;
  worker?: boolean;
  sip?: TestStackOptions['sip'];
  /** Extra environment for the control plane and the worker; DATABASE_URL is the stack's own database. */
  env?: Record<string, string>;
}

export interface StartedStack {
  stack: TestStack;
  /** Two connections to the file's database, for the rows a test reads or seeds. */
  sql: Sql;
  key: string;
  orgId: string;
}

export function stackFixture() {
  // What start() has acquired so far: stop() releases exactly that, so a start that failed half-way is undone too.
  let held: { stack?: TestStack; sql?: Sql; key?: string } = {};

  return {
    /** The org's client (the shared apiClient); usable once start() has resolved. */
    api: apiClient(
      () => held.stack?.controlPlaneUrl,
      () => held.key ?? '',
    ),

    async start(opts: StackFixtureOptions): Promise<StartedStack> {
      const stack = (held.stack = await startStack({ controlPlane: true, worker: opts.worker ?? false, sip: opts.sip ?? false, env: opts.env ?? {} }));
      const sql = (held.sql = createSql(stack.databaseUrl!, { max: 2 }));
      const org = await createOrgWithKey(sql, opts.org);
      held.key = org.api_key;
      return { stack, sql, key: org.api_key, orgId: org.org_id };
    },

    /**
     * The pool, then the stack (its services, then its database). Each step runs even when the one before it
     * failed; the failures are thrown together at the end.
     */
    async stop(): Promise<void> {
      const { stack, sql } = held;
      held = {};
      const failures: unknown[] = [];
      for (const step of [() => sql?.end(), () => stack?.stop()]) {
        try {
          await step();
        } catch (err) {
          failures.push(err);
        }
      }
      if (failures.length > 0) throw new AggregateError(failures, `stopping the stack fixture: ${failures.map(String).join('; ')}`);
    },
  };
}
