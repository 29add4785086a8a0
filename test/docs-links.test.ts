// Every relative link in the README and docs/ (guides, decision records) reaches a tracked file, and a link to a
// heading (`file.md#anchor`) reaches a heading of that file, by GitHub's anchor rule. Moving text between files
// (issue 55) is where links break; this finds each broken one by file and line.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`, repeats numbered. */
export function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = h[1]!
      .toLowerCase()
      .replace(/<[^>]+>/g, '')
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const docs = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'README.md', 'docs'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f.endsWith('.md') && existsSync(path.join(root, f)));

describe('links in the docs', () => {
  it.each(docs)('every relative link of %s reaches a file and, with an anchor, a heading', (doc) => {
    const text = readFileSync(path.join(root, doc), 'utf8');
    const problems: string[] = [];
    let fenced = false;
    for (const [i, line] of text.split('\n').entries()) {
      if (/^\s*```/.test(line)) fenced = !fenced;
      if (fenced) continue;
      for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/i.test(target)) continue; // http:, https:, mailto:
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const resolved = file === '' ? path.join(root, doc) : path.resolve(path.dirname(path.join(root, doc)), file);
        if (!existsSync(resolved)) {
          problems.push(`${doc}:${i + 1}: ${target}: no such file`);
          continue;
        }
        if (anchor && resolved.endsWith('.md') && !anchors(readFileSync(resolved, 'utf8')).has(anchor))
          problems.push(`${doc}:${i + 1}: ${target}: no such heading in ${path.relative(root, resolved)}`);
      }
    }
    expect(problems).toEqual([]);
  });
});
