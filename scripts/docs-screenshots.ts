// npm run docs:screenshots — the console's pictures in docs/console, taken anew: runs the console's browser tests
// with their screenshots in a temporary folder (test/support/screenshots.ts), then copies every picture into
// docs/console. A test run never writes into the tree; this is the one step that does, on purpose.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const DOCS = path.join(ROOT, 'docs', 'console');
const TESTS = ['test/e2e/console.test.ts', 'test/e2e/console-versions.test.ts', 'test/e2e/console-live-call.test.ts'];

/** Copies the .png files of `from` into `to`; returns their names. */
export function copyScreenshots(from: string, to: string): string[] {
  mkdirSync(to, { recursive: true });
  const names = readdirSync(from)
    .filter((f) => f.endsWith('.png'))
    .sort();
  for (const n of names) copyFileSync(path.join(from, n), path.join(to, n));
  return names;
}

if (import.meta.main) {
  const dir = mkdtempSync(path.join(tmpdir(), 'vap-screenshots-'));
  try {
    const vitest = path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
    const run = spawnSync(process.execPath, [vitest, 'run', ...TESTS, '--maxWorkers=1'], {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, VAP_SCREENSHOTS_DIR: dir },
    });
    // Pictures of a failed run may show a broken page: keep the old ones.
    if (run.status !== 0) {
      console.error('docs:screenshots: the console tests failed; docs/console is unchanged.');
      process.exit(run.status ?? 1);
    }
    const names = copyScreenshots(dir, DOCS);
    console.log(`docs:screenshots: ${names.length} pictures copied into docs/console.`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
