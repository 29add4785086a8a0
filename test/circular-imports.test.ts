// No circular imports from any entry point (docs/decisions/rooms-no-cycles.md): dpdm follows every import, type-only
// ones included, from the control plane's and the worker's mains, the browser code, the scripts and the benchmarks.
// A cycle leaves a module's exports undefined while the other loads, and makes its files one room to read and change.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseCircular, parseDependencyTree } from 'dpdm';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const ENTRIES = ['control-plane/src/main.ts', 'media-worker/src/main.ts', 'web/src/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts'];

/** The files reached from the entries, and the cycles among them (each as its files, in import order). */
async function importCycles(entries: string[], cwd: string): Promise<{ files: string[]; cycles: string[][] }> {
  const tree = await parseDependencyTree(entries, { cwd, context: cwd, transform: false, skipDynamicImports: false });
  return { files: Object.keys(tree), cycles: parseCircular(tree) };
}

describe('imports', () => {
  it('have no cycles from any entry point', { timeout: 600_000 }, async () => {
    const { files, cycles } = await importCycles(ENTRIES, ROOT);
    // The walk must reach the tree: a wrong entry or glob would find nothing, and so no cycles.
    expect(files).toContain('control-plane/src/modules/calls/queries.ts');
    expect(files).toContain('media-worker/src/session/call-session.ts');
    expect(files).toContain('web/src/console/main.ts');
    expect(cycles.map((c) => c.join(' -> '))).toEqual([]);
  });

  it('finds a cycle, a type-only one too', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'vap-cycles-'));
    try {
      writeFileSync(path.join(dir, 'a.ts'), "import { b } from './b.ts';\nexport const a = () => b;\n");
      writeFileSync(path.join(dir, 'b.ts'), "import type { C } from './c.ts';\nexport const b: C | 1 = 1;\n");
      writeFileSync(path.join(dir, 'c.ts'), "import { a } from './a.ts';\nexport type C = typeof a;\n");
      writeFileSync(path.join(dir, 'd.ts'), "import { a } from './a.ts';\nexport const d = a;\n");
      const { cycles } = await importCycles(['d.ts'], dir);
      expect(cycles).toEqual([['a.ts', 'b.ts', 'c.ts']]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
