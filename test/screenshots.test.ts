// A test run leaves the tree as it was: the console's screenshots go to a temporary folder, and only
// `npm run docs:screenshots` copies them into docs/console.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyScreenshots } from '../scripts/docs-screenshots.ts';
import { SCREENSHOTS_DIR } from './support/screenshots.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

function testFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

describe('screenshots', () => {
  it('are written outside the tree by test runs', () => {
    expect(path.relative(ROOT, SCREENSHOTS_DIR).startsWith('..')).toBe(true);
    // No test or test support names docs/console as a folder to write to.
    const naming = testFiles('test').filter((f) => /docs\/console['"]|['"]docs['"],\s*['"]console['"]/.test(readFileSync(path.join(ROOT, f), 'utf8')));
    expect(naming).toEqual([]);
  });

  it('are copied into the docs by the docs script, pictures only', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'vap-shots-test-'));
    try {
      const from = path.join(dir, 'from');
      mkdirSync(from);
      writeFileSync(path.join(from, 'calls.png'), 'png');
      writeFileSync(path.join(from, 'agent.png'), 'png');
      writeFileSync(path.join(from, 'notes.txt'), 'text');
      expect(copyScreenshots(from, path.join(dir, 'to'))).toEqual(['agent.png', 'calls.png']);
      expect(readdirSync(path.join(dir, 'to')).sort()).toEqual(['agent.png', 'calls.png']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
