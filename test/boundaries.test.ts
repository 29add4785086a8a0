// The import graph keeps its arrows one way, and SQL stays in each module's queries.ts (docs/decisions/023-code-health.md). Read from the source, so a new import or statement that breaks a rule fails here.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const TREES = ['control-plane/src', 'shared', 'schemas', 'media-worker/src', 'web/src'];

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(rel));
    else if (e.name.endsWith('.ts') && !e.name.includes('.test.') && !e.name.includes('.test-support.')) out.push(rel);
  }
  return out;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/g;

/** Relative imports of each shipped file, resolved to repository paths (type-only imports included). */
function importGraph(): Map<string, string[]> {
  const files = TREES.flatMap(sourceFiles);
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const src = readFileSync(path.join(ROOT, f), 'utf8');
    const deps = [...src.matchAll(IMPORT)].map((m) => path.normalize(path.join(path.dirname(f), m[1]!))).filter((d) => known.has(d));
    graph.set(f, deps);
  }
  return graph;
}

/** Strongly connected components of more than one file (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let n = 0;
  const visit = (v: string) => {
    index.set(v, n);
    low.set(v, n++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** Source without its comment lines (a comment may quote `db` in backticks). */
const withoutComments = (src: string) =>
  src
    .split('\n')
    .filter((l) => !/^\s*(\/\/|\/?\*)/.test(l))
    .join('\n');

// A module's SQL: queries.ts, or queries-<part>.ts once queries.ts would pass the size ceiling (test/file-size.test.ts).
const QUERIES_FILE = /^queries(-[a-z0-9-]+)?\.ts$/;

// A postgres.js tagged template: sql`...`, tx<Row[]>`...`, db`...`.
const SQL_TEMPLATE = /\b(?:sql|tx|db)(?:<[^`]*?>)?`/;

/**
 * Files of control-plane/src/modules that still hold statements outside queries.ts. This list may only
 * shrink: each entry must still contain SQL (so a cleaned file leaves the list), and no other file may.
 */
const SQL_OUTSIDE_QUERIES: Record<string, string> = {
  'control-plane/src/modules/phone-numbers/carriers/simulated.ts': 'phone numbers, new and in active work: to move with its module',
  'control-plane/src/modules/phone-numbers/inbound.ts': 'phone numbers, new and in active work: to move with its module',
  'control-plane/src/modules/phone-numbers/routes.ts': 'phone numbers, new and in active work: to move with its module',
  'control-plane/src/modules/phone-numbers/wiring.ts': 'phone numbers, new and in active work: to move with its module',
};

describe('boundaries', () => {
  const graph = importGraph();

  it('the import graph has no cycles', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('the worker and the control plane never import each other', () => {
    const crossing = [...graph].flatMap(([f, deps]) =>
      deps
        .filter((d) => (f.startsWith('media-worker/') && d.startsWith('control-plane/')) || (f.startsWith('control-plane/') && d.startsWith('media-worker/')))
        .map((d) => `${f} -> ${d}`),
    );
    expect(crossing).toEqual([]);
  });

  it('browser code (web/) imports neither the control plane nor the worker, nor shared/ (Node code)', () => {
    const crossing = [...graph].flatMap(([f, deps]) =>
      f.startsWith('web/') ? deps.filter((d) => /^(control-plane|media-worker|shared)\//.test(d)).map((d) => `${f} -> ${d}`) : [],
    );
    expect(crossing).toEqual([]);
    // And the worker never reaches into the browser code.
    expect([...graph].flatMap(([f, deps]) => (f.startsWith('media-worker/') ? deps.filter((d) => d.startsWith('web/')) : []))).toEqual([]);
  });

  it('shared/ does not import schemas/ (the internal API client, the contract’s own client, excepted)', () => {
    const back = [...graph].flatMap(([f, deps]) =>
      f.startsWith('shared/') && f !== 'shared/internal-api.ts' ? deps.filter((d) => d.startsWith('schemas/')).map((d) => `${f} -> ${d}`) : [],
    );
    expect(back).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    expect(cycles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]))).toEqual([['a', 'b', 'c']]);
  });

  it("SQL stays in each module's queries.ts", () => {
    const withSql = sourceFiles('control-plane/src/modules').filter(
      (f) => !QUERIES_FILE.test(path.basename(f)) && SQL_TEMPLATE.test(withoutComments(readFileSync(path.join(ROOT, f), 'utf8'))),
    );
    expect(
      withSql.filter((f) => !(f in SQL_OUTSIDE_QUERIES)),
      "these files hold SQL: move it into the module's queries.ts (docs/decisions/023-code-health.md)",
    ).toEqual([]);
    // A file that no longer has SQL leaves the exceptions.
    expect(Object.keys(SQL_OUTSIDE_QUERIES).filter((f) => !withSql.includes(f))).toEqual([]);
    expect(['queries.ts', 'queries-outbound.ts', 'service.ts', 'queries.test.ts'].map((f) => QUERIES_FILE.test(f))).toEqual([true, true, false, false]);
    expect(SQL_TEMPLATE.test('const [row] = await tx<{ id: string }[]>`select 1`')).toBe(true);
    expect(SQL_TEMPLATE.test('const s = `${sql} text`')).toBe(false);
    expect(SQL_TEMPLATE.test(withoutComments('/** Runs inside `db`, the transaction. */\n// or `tx`'))).toBe(false);
  });
});
