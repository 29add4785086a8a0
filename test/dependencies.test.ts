// package.json and the code agree: every import declared, shipped code on `dependencies` only, nothing unused.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDependencies, importsOf, packageName } from '../scripts/check-deps.ts';

describe('dependencies', () => {
  it('match what the code imports', () => {
    const r = checkDependencies();
    expect(r.undeclared).toEqual([]);
    expect(r.devOnlyInShipped).toEqual([]);
    expect(r.unused).toEqual([]);
  });

  it('are read from every kind of import', () => {
    const src = [
      "import a from 'pkg-a';",
      "import type { B } from '@scope/b/sub/path.js';",
      "export { c } from 'pkg-c/deep';",
      "const d = await import('pkg-d');",
      "const e = require.resolve('pkg-e/bundle.js');",
      "import { f } from './relative.ts';",
      "import fs from 'node:fs'; import path from 'path';",
    ].join('\n');
    expect(importsOf(src).sort()).toEqual(['@scope/b', 'pkg-a', 'pkg-c', 'pkg-d', 'pkg-e']);
    expect(packageName('node:fs')).toBeNull();
    expect(packageName('@a/b/c')).toBe('@a/b');
  });

  it('are reported when undeclared, dev-only in shipped code, or unused', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'vap-deps-'));
    try {
      writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'x', dependencies: { used: '1', unused: '1' }, devDependencies: { devpkg: '1' } }));
      mkdirSync(path.join(root, 'shared'));
      writeFileSync(path.join(root, 'shared/a.ts'), "import 'used'; import 'devpkg'; import 'ghost';");
      const r = checkDependencies(root);
      expect(r.undeclared).toEqual([{ pkg: 'ghost', file: path.join('shared', 'a.ts') }]);
      expect(r.devOnlyInShipped).toEqual([{ pkg: 'devpkg', file: path.join('shared', 'a.ts') }]);
      expect(r.unused).toEqual(['unused']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
