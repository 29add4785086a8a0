// Where the console's browser tests write their screenshots: a temporary folder, never the tree, so that a test
// run leaves tracked files as they were. `npm run docs:screenshots` (scripts/docs-screenshots.ts) runs those tests
// with VAP_SCREENSHOTS_DIR set and copies the pictures into docs/console, where docs/console.md shows them.
import { tmpdir } from 'node:os';
import path from 'node:path';

export const SCREENSHOTS_DIR = process.env.VAP_SCREENSHOTS_DIR ?? path.join(tmpdir(), 'vap-screenshots');
