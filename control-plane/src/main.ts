// `npm start`: the control plane on embedded defaults (or DATABASE_URL), with a dev org on first start.
import { loadConfig, ConfigError } from './config.ts';
import { MigrationError } from './db/migrate.ts';
import { createLogger } from '../../shared/logger.ts';
import { startPlatform } from './platform.ts';
import { announceDevOrg } from './modules/workspace/dev-start.ts';
import { initTracing } from '../../shared/tracing.ts';

const log = createLogger('control-plane', process.env.LOG_LEVEL ?? 'info');

async function main() {
  // Off unless OTEL_EXPORTER_OTLP_ENDPOINT (or another standard OTEL_* switch) asks for it.
  const tracing = initTracing('vap-control-plane');
  const config = loadConfig();
  const platform = await startPlatform(config, { log });
  if (config.NODE_ENV !== 'production') {
    // The key is printed once, on the first start: it is not stored anywhere in clear.
    process.stdout.write(await announceDevOrg(platform.services.sql, config, platform.url));
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    await platform.close();
    await tracing.shutdown().catch(() => {});
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof MigrationError) {
    process.stderr.write(`vap: ${err.message}\n`);
  } else {
    log.fatal({ err }, 'start-up failed');
  }
  process.exit(1);
});
