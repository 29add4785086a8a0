// One PostgreSQL for the whole run: DATABASE_URL when set, else an embedded server in a temporary folder on a
// free port. A template database is migrated once; each test file clones it (see test/support/db.ts).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import net from 'node:net';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedServer } from '../../control-plane/src/db/embedded.ts';
import { createSql } from '../../control-plane/src/db/connect.ts';
import { migrate } from '../../control-plane/src/db/migrate.ts';

export const TEMPLATE_DB = 'vap_test_template';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

export default async function setup(project: TestProject) {
  let embedded: EmbeddedServer | null = null;
  let dir: string | null = null;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    dir = mkdtempSync(path.join(tmpdir(), 'vap-test-pg-'));
    // initdb runs as an unprivileged user when we are root; it must be able to enter the folder.
    chmodSync(dir, 0o755);
    embedded = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), port: await freePort() });
    adminUrl = embedded.url('postgres');
  }
  const admin = createSql(adminUrl, { max: 1 });
  await admin.unsafe(`drop database if exists ${TEMPLATE_DB} with (force)`);
  await admin.unsafe(`create database ${TEMPLATE_DB}`);
  const tpl = createSql(withDatabase(adminUrl, TEMPLATE_DB), { max: 1 });
  await migrate(tpl);
  await tpl.end();
  await admin.end();
  project.provide('adminDatabaseUrl', adminUrl);

  return async () => {
    await embedded?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
  }
}
