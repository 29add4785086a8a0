// Builds the playground (web/src/playground) into web/dist: playground.js (the page's code with the SDK
// bundled in), playground.css and playground.html, the three files the control plane serves at /playground.
// Run from web/build.ts (npm run build:web); `node web/build-playground.ts` builds it alone.
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { build, type BuildOptions } from 'esbuild';

const SRC = path.resolve(import.meta.dirname, 'src/playground');
export const DEFAULT_OUT = path.resolve(import.meta.dirname, 'dist');

export async function buildPlayground(outdir = DEFAULT_OUT): Promise<void> {
  await mkdir(outdir, { recursive: true });
  const common: BuildOptions = { bundle: true, minify: true, legalComments: 'none', logLevel: 'warning', target: ['chrome111', 'firefox115', 'safari16'] };
  await build({ ...common, entryPoints: [path.join(SRC, 'main.ts')], outfile: path.join(outdir, 'playground.js'), format: 'esm', platform: 'browser' });
  await build({ ...common, entryPoints: [path.join(SRC, 'playground.css')], outfile: path.join(outdir, 'playground.css') });
  await copyFile(path.join(SRC, 'playground.html'), path.join(outdir, 'playground.html'));
}

if (import.meta.main) await buildPlayground(process.argv[2] ? path.resolve(process.argv[2]) : DEFAULT_OUT);
