// Versioned SQL migrations: files `NNN_name.sql`, applied in order, recorded in `schema_migrations`.
// One transaction under an advisory lock, so two processes starting at once apply each file exactly once.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sql } from 'postgres';

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations');
// Arbitrary constant shared by every process of the platform: "vap" + "mig".
const LOCK_KEY = 0x7661_706d;

export interface Migration {
  version: string;
  name: string;
  file: string;
  sql: string;
  checksum: string;
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{3,}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => {
      const sql = readFileSync(path.join(dir, file), 'utf8');
      const [version, ...rest] = file.replace(/\.sql$/, '').split('_');
      return { version: version!, name: rest.join('_'), file, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

/** Applies pending migrations; returns the files applied. Throws MigrationError naming the failing file. */
export async function migrate(sql: Sql, migrations = loadMigrations()): Promise<string[]> {
  const applied: string[] = [];
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCK_KEY})`;
    await tx`
      create table if not exists schema_migrations (
        version text primary key,
        name text not null,
        checksum text not null,
        applied_at timestamptz not null default now()
      )`;
    const done = new Map((await tx<{ version: string; checksum: string }[]>`select version, checksum from schema_migrations`).map((r) => [r.version, r.checksum]));
    for (const m of migrations) {
      const prior = done.get(m.version);
      if (prior !== undefined) {
        if (prior !== m.checksum) throw new MigrationError(`migration ${m.file} was changed after it was applied (checksum mismatch)`);
        continue;
      }
      try {
        await tx.unsafe(m.sql).simple();
      } catch (err) {
        throw new MigrationError(`migration ${m.file} failed: ${(err as Error).message}`);
      }
      await tx`insert into schema_migrations (version, name, checksum) values (${m.version}, ${m.name}, ${m.checksum})`;
      applied.push(m.file);
    }
  });
  return applied;
}
