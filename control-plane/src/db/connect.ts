// Resolves the database: DATABASE_URL when set, else the embedded server under DATA_DIR.
import path from 'node:path';
import postgres, { type Sql } from 'postgres';
import type { Config } from '../config.ts';
import type { Logger } from '../../../shared/logger.ts';
import { startEmbeddedPostgres, type EmbeddedServer } from './embedded.ts';

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

export async function openDatabase(config: Config, log: Logger): Promise<Database> {
  let embedded: EmbeddedServer | null = null;
  let url = config.DATABASE_URL;
  if (!url) {
    embedded = await startEmbeddedPostgres({ dataDir: path.join(config.DATA_DIR, 'postgres'), port: config.EMBEDDED_PG_PORT, log });
    const admin = createSql(embedded.url('postgres'), { max: 1 });
    const [exists] = await admin`select 1 from pg_database where datname = 'vap'`;
    if (!exists) await admin`create database vap`;
    await admin.end();
    url = embedded.url('vap');
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
