// Resolves the database: DATABASE_URL when set, else the embedded server under DATA_DIR.
import path from 'node:path';
import postgres, { type Sql } from 'postgres';
import type { Config } from '../config.ts';
import type { Logger } from '../../../shared/logger.ts';
import { embeddedUrl, startEmbeddedPostgres, type EmbeddedServer } from './embedded.ts';

export type { Sql };

export interface Database {
  sql: Sql;
  url: string;
  embedded: EmbeddedServer | null;
  close(): Promise<void>;
}

export function createSql(url: string, opts: { max?: number; applicationName?: string } = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 10,
    idle_timeout: 30,
    connect_timeout: 10,
    onnotice: () => {},
    // postgres.js throws on `undefined` parameters by default; treat them as NULL like a JSON body would.
    transform: { undefined: null },
    connection: { application_name: opts.applicationName ?? 'vap-control-plane' },
  });
}

async function reachable(url: string): Promise<boolean> {
  const probe = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await probe`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await probe.end({ timeout: 1 });
  }
}

export async function openDatabase(config: Config, log: Logger): Promise<Database> {
  let embedded: EmbeddedServer | null = null;
  let url = config.DATABASE_URL;
  if (!url) {
    const dataDir = path.join(config.DATA_DIR, 'postgres');
    // Another process of the platform (npm start, while `npm run admin` runs) may own the server already.
    const running = await reachable(embeddedUrl(config.EMBEDDED_PG_PORT, 'postgres'));
    if (!running) embedded = await startEmbeddedPostgres({ dataDir, port: config.EMBEDDED_PG_PORT, log });
    const admin = createSql(embeddedUrl(config.EMBEDDED_PG_PORT, 'postgres'), { max: 1 });
    const [exists] = await admin`select 1 from pg_database where datname = 'vap'`;
    if (!exists) await admin`create database vap`;
    await admin.end();
    url = embeddedUrl(config.EMBEDDED_PG_PORT, 'vap');
  }
  const sql = createSql(url, { max: config.DATABASE_POOL_MAX });
  return {
    sql,
    url,
    embedded,
    async close() {
      await sql.end({ timeout: 5 });
      await embedded?.stop();
    },
  };
}
