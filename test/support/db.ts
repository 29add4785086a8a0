// A database of its own for each test file, cloned from the migrated template (fast: a file copy).
import { afterAll, beforeAll, inject } from 'vitest';
import { randomBytes } from 'node:crypto';
import { createSql, type Sql } from '../../control-plane/src/db/connect.ts';

const TEMPLATE_DB = 'vap_test_template';

export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = inject('adminDatabaseUrl');
  const name = `vap_t_${randomBytes(6).toString('hex')}`;
  const admin = createSql(adminUrl, { max: 1 });
  // Cloning needs the template to have no other sessions; files start at once, so retry briefly.
  for (let attempt = 0; ; attempt++) {
    try {
      await admin.unsafe(`create database ${name} template ${TEMPLATE_DB}`);
      break;
    } catch (err) {
      // 55006 object_in_use: the template still has a session ("being accessed by other users").
      if (attempt > 50 || (err as { code?: string }).code !== '55006') throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const a = createSql(adminUrl, { max: 1 });
      await a.unsafe(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}

/**
 * For a test file: a database of its own and a pool of `max` connections to it, made before the file's tests and
 * handed to `ready` (which may shape or seed it), closed and dropped after them.
 */
export function useTestSql(max: number, ready: (sql: Sql) => void | Promise<void>): void {
  let sql: Sql | undefined;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    sql = createSql(db.url, { max });
    await ready(sql);
  });
  afterAll(async () => {
    await sql?.end();
    await drop?.();
  });
}
