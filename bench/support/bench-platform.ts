// A control plane in the bench's own process, on its throwaway database (bench-database.ts), as the dialling
// benches (campaigns.ts, outbound.ts) run it: test mode, free ports, silent logs, no rate limits (a bench drives one
// organisation far past them).
import { loadConfig, type Config } from '../../control-plane/src/config.ts';
import type { BenchDatabase } from './bench-database.ts';

/** The config on `db`, with `extra` on top. */
export function benchPlatformConfig(db: BenchDatabase, extra: Record<string, unknown>): Config {
  return loadConfig({}, {
    NODE_ENV: 'test',
    DATABASE_URL: db.url,
    PORT: 0,
    METRICS_PORT: 0,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_SECOND: 0,
    RATE_LIMIT_ORG_PER_SECOND: 0,
    ...extra,
  } as never);
}
