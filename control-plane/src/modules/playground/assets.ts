// The playground's and the console's built files (web/dist, written by `npm run build:web`, which npm start and npm test run first).
// Read from disk on each request: they are small, and a rebuild shows without a restart.
import { readFile } from 'node:fs/promises';
import path from 'node:path';

export const DIST_DIR = path.resolve(import.meta.dirname, '../../../../web/dist');

/** The files the page loads, by the name in its URL; nothing else under web/dist is served. */
export const ASSETS: Record<string, { file: string; contentType: string }> = {
  'playground.js': { file: 'playground.js', contentType: 'text/javascript; charset=utf-8' },
  'playground.css': { file: 'playground.css', contentType: 'text/css; charset=utf-8' },
};

export const PAGE_FILE = 'playground.html';

/** The console's files (web/src/console), served at /console/<name>, the same way. */
export const CONSOLE_ASSETS: Record<string, { file: string; contentType: string }> = {
  'console.js': { file: 'console.js', contentType: 'text/javascript; charset=utf-8' },
  'console.css': { file: 'console.css', contentType: 'text/css; charset=utf-8' },
};

export const CONSOLE_PAGE_FILE = 'console.html';

/** A built file's bytes, or null when the build has not run. */
export async function readBuilt(file: string, dir: string | undefined): Promise<Buffer | null> {
  try {
    return await readFile(path.join(dir ?? DIST_DIR, file));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Shown instead of the page when web/dist has no build: a plain page, no script, the same headers. */
export const notBuiltPage = (what: string): string => NOT_BUILT_PAGE.replaceAll('playground', what);

export const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>vap playground: not built</title>
</head>
<body>
  <main>
    <h1>The playground is not built</h1>
    <p>This control plane has no built playground files in <code>web/dist</code>.
    Run <code>npm run build:web</code> in the repository (<code>npm start</code> and <code>npm test</code> run it first),
    then reload this page.</p>
  </main>
</body>
</html>
`;
