import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closedToOthers, startEmbeddedPostgres } from './embedded.ts';

const made: string[] = [];
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** `<tmp>/outer(mode)/inner/data`: the data folder's path, and the outer folder. */
function tree(outerMode: number): { data: string; outer: string } {
  const outer = mkdtempSync(path.join(os.tmpdir(), 'vap-embedded-'));
  made.push(outer);
  mkdirSync(path.join(outer, 'inner'), { mode: 0o755 });
  chmodSync(outer, outerMode);
  return { data: path.join(outer, 'inner', 'data'), outer };
}

describe('the embedded PostgreSQL started as root', () => {
  it('names the folders on the way that other users cannot enter', () => {
    const closed = tree(0o700);
    expect(closedToOthers(closed.data)).toContain(closed.outer);
    const open = tree(0o755);
    expect(closedToOthers(open.data)).not.toContain(open.outer);
    expect(closedToOthers(open.data)).not.toContain(path.join(open.outer, 'inner'));
  });

  it.skipIf(process.getuid?.() !== 0)('refuses a data folder its unprivileged user cannot reach, with a clear error', async () => {
    const { data, outer } = tree(0o700);
    await expect(startEmbeddedPostgres({ dataDir: data, port: 1 })).rejects.toThrow(`cannot enter ${outer}`);
  });
});
