// A separate control-plane process that runs the pg-boss workers (among them `knowledge.ingest`) on the
// database in DATABASE_URL, so a test can SIGKILL it in the middle of a job. With KB_TEST_HOLD_URL set, the
// ingestion stops inside its write transaction after the first batch of chunk rows (some rows inserted, more to come,
// nothing committed) and requests that URL, which the test holds open: the request reaching the test's
// server is the signal that the process is mid-write and can be killed.
import { loadConfig } from '../../control-plane/src/config.ts';
import { startPlatform } from '../../control-plane/src/platform.ts';
import { setTestHooks } from '../../control-plane/src/modules/knowledge-bases/jobs.ts';
import { createLogger } from '../../shared/logger.ts';

const hold = process.env.KB_TEST_HOLD_URL;
if (hold) {
  setTestHooks({
    afterBatch: async (batch) => {
      if (batch === 0) await fetch(hold);
    },
  });
}
const platform = await startPlatform(loadConfig(), { log: createLogger('kb-worker', process.env.TEST_LOG_LEVEL ?? 'silent') });
process.stdout.write('ready\n');
process.on('SIGTERM', () => void platform.close().then(() => process.exit(0)));
