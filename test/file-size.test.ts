// Every hand-written source file stays under a ceiling, so that a file's growth past it is a decision, made here
// in one line, not a drift (docs/decisions/rooms-file-ceiling.md). No exemptions: a file near the ceiling is split
// by concern. Generated files would be the only exception, and none is near it today.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const CEILING = 500;

const ROOT = path.resolve(import.meta.dirname, '..');
const TREES = ['control-plane', 'media-worker', 'shared', 'schemas', 'web/src', 'bench', 'scripts', 'test'];
const SOURCE = /\.(ts|tsx|css|sql)$/;
const SKIP = new Set(['node_modules', 'dist', 'results', '.data', '.tools']);

function sourceFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIP.has(e.name)) out.push(...sourceFiles(root, rel));
    } else if (SOURCE.test(e.name)) out.push(rel);
  }
  return out;
}

/** Lines as `wc -l` counts them: a last line without its line feed still counts. */
function lineCount(text: string): number {
  if (text === '') return 0;
  const feeds = text.split('\n').length - 1;
  return text.endsWith('\n') ? feeds : feeds + 1;
}

describe('source files', () => {
  it(`stay at or under ${CEILING} lines`, () => {
    const files = TREES.flatMap((t) => sourceFiles(ROOT, t));
    // The walk must find the tree; an empty list would pass whatever the sizes.
    expect(files.length).toBeGreaterThan(500);
    expect(files).toContain(path.join('control-plane', 'src', 'main.ts'));
    const over = files
      .map((f) => ({ file: f, lines: lineCount(readFileSync(path.join(ROOT, f), 'utf8')) }))
      .filter((f) => f.lines > CEILING)
      .sort((a, b) => b.lines - a.lines)
      .map((f) => `${f.file}: ${f.lines}`);
    expect(over).toEqual([]);
  });

  it('are counted as wc -l counts them', () => {
    expect(lineCount('')).toBe(0);
    expect(lineCount('a')).toBe(1);
    expect(lineCount('a\n')).toBe(1);
    expect(lineCount('a\nb')).toBe(2);
    expect(lineCount('a\n\nb\n')).toBe(3);
  });
});
