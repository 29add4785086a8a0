// Builds the console (web/src/console) into web/dist: console.js (the pages' code, the SDK bundled in for
// "Talk to it"), console.css and console.html, the three files the control plane serves at /console.
// Run from web/build.ts (npm run build:web); `node web/build-console.ts` builds it alone.
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { build, type BuildOptions } from 'esbuild';

const SRC = path.resolve(import.meta.dirname, 'src/console');
export const DEFAULT_OUT = path.resolve(import.meta.dirname, 'dist');

export async function buildConsole(outdir = DEFAULT_OUT): Promise<void> {
  await mkdir(outdir, { recursive: true });
  const common: BuildOptions = { bundle: true, minify: true, legalComments: 'none', logLevel: 'warning', target: ['chrome111', 'firefox115', 'safari16'] };
  await build({ ...common, entryPoints: [path.join(SRC, 'main.ts')], outfile: path.join(outdir, 'console.js'), format: 'esm', platform: 'browser' });
  await build({ ...common, entryPoints: [path.join(SRC, 'console.css')], outfile: path.join(outdir, 'console.css') });
  await copyFile(path.join(SRC, 'console.html'), path.join(outdir, 'console.html'));
}

if (import.meta.main) await buildConsole(process.argv[2] ? path.resolve(process.argv[2]) : DEFAULT_OUT);
