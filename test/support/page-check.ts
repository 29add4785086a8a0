// What the browser tests ask of each page they show: axe-core finds nothing serious on it, and its screenshot goes
// to the folder `npm run docs:screenshots` copies from (screenshots.ts).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { Page } from 'playwright-core';
import { SCREENSHOTS_DIR } from './screenshots.ts';

const AXE = path.resolve(import.meta.dirname, '../../node_modules/axe-core/axe.min.js');

/** Violations axe rates serious or critical on the page as it is now (axe runs in the page, injected by DevTools). */
export async function axeViolations(page: Page): Promise<{ id: string; impact: string; nodes: string[] }[]> {
  await page.evaluate(`${readFileSync(AXE, 'utf8')}\n;0`);
  // A string, not a function: the tests are type-checked without the DOM library.
  return page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
    r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => JSON.stringify(n.target)) })))`);
}

/** axe finds nothing serious, and the page's screenshot goes to SCREENSHOTS_DIR/<name>.png. */
export async function checkPage(page: Page, name: string): Promise<void> {
  expect(await axeViolations(page), name).toEqual([]);
  await page.screenshot({ path: path.join(SCREENSHOTS_DIR, `${name}.png`), fullPage: true });
}
