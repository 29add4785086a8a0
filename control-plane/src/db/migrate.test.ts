// Migrations: idempotent, safe when several processes start at once, and loud when one fails.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTestSql } from '../../../test/support/db.ts';
import type { Sql } from './connect.ts';
import { loadMigrations, migrate, MigrationError } from './migrate.ts';

let sql: Sql;
useTestSql(10, async (s) => {
  sql = s;
  // The test database is a clone of the migrated template; start from scratch.
  await sql.unsafe('drop schema public cascade; create schema public;').simple();
});

describe('migrations', () => {
  it('apply once when five processes start together, then are a no-op', async () => {
    const results = await Promise.all(Array.from({ length: 5 }, () => migrate(sql)));
    const all = loadMigrations().map((m) => m.file);
    expect(results.flat().sort()).toEqual(all.sort());
    expect(results.filter((r) => r.length > 0)).toHaveLength(1);
    const rows = await sql`select version from schema_migrations order by version`;
    expect(rows.map((r) => r.version)).toEqual(loadMigrations().map((m) => m.version));
    expect(await migrate(sql)).toEqual([]);
  });

  it('stop with a message naming the file when one fails, and apply nothing of the batch', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'vap-mig-'));
    writeFileSync(path.join(dir, '900_ok.sql'), 'create table mig_ok (id int);');
    writeFileSync(path.join(dir, '901_broken.sql'), 'create table mig_broken (id int;');
    const extra = [...loadMigrations(), ...loadMigrations(dir)];
    await expect(migrate(sql, extra)).rejects.toThrow(MigrationError);
    await expect(migrate(sql, extra)).rejects.toThrow(/migration 901_broken\.sql failed: syntax error/);
    const [t] = await sql`select to_regclass('mig_ok') as t`;
    expect(t!.t).toBeNull();
  });

  it('refuse a migration changed after it was applied', async () => {
    const changed = loadMigrations().map((m, i) => (i === 0 ? { ...m, checksum: 'different' } : m));
    await expect(migrate(sql, changed)).rejects.toThrow(/was changed after it was applied/);
  });
});
