// Builds the browser code with esbuild: web/dist/vap.mjs (the SDK as an ES module), web/dist/vap-widget.js
// (the drop-in widget, SDK included, as one classic script) the playground (web/build-playground.ts) and the
// console (web/build-console.ts). Run by
// `npm run build:web`, and before tests and `npm start`, so that the control plane and the browser tests always
// find a fresh build.
import { build, type BuildOptions } from 'esbuild';
import path from 'node:path';
import { buildPlayground } from './build-playground.ts';
import { buildConsole } from './build-console.ts';

const root = import.meta.dirname;
const common: BuildOptions = {
  bundle: true,
  minify: true,
  sourcemap: true,
  target: ['chrome100', 'firefox100', 'safari15'],
  legalComments: 'linked',
  logLevel: 'warning',
};

/** Entry points by output file; web/src/playground adds its own here. */
export const entries = [
  { in: 'src/sdk/index.ts', out: 'vap.mjs', format: 'esm' as const },
  { in: 'src/widget/index.ts', out: 'vap-widget.js', format: 'iife' as const },
];

export async function buildWeb(): Promise<void> {
  await Promise.all([
    ...entries.map((e) => build({ ...common, entryPoints: [path.join(root, e.in)], outfile: path.join(root, 'dist', e.out), format: e.format })),
    // The playground (web/src/playground): page, script and stylesheet, served by the control plane at /playground.
    buildPlayground(path.join(root, 'dist')),
    // The console (web/src/console), served at /console the same way.
    buildConsole(path.join(root, 'dist')),
  ]);
}

if (import.meta.main) await buildWeb();
