// `npm run migrate`: applies pending migrations to DATABASE_URL (or the embedded database) and exits.
import { loadConfig } from '../config.ts';
import { createLogger } from '../../../shared/logger.ts';
import { openDatabase } from './connect.ts';
import { migrate } from './migrate.ts';

const log = createLogger('migrate', process.env.LOG_LEVEL ?? 'info');
const db = await openDatabase(loadConfig(), log);
try {
  const applied = await migrate(db.sql);
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'up to date\n');
} catch (err) {
  process.stderr.write(`migrate: ${(err as Error).message}\n`);
  process.exitCode = 1;
} finally {
  await db.close();
}
