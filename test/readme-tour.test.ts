// The README is the project's front door (issue 55): short, the two commands first, and a tour whose every command
// a test runs. Each code block of the tour carries a marker naming the end-to-end tests that run it; this file
// holds the README to that (a block with no marker, or a marker naming a test that does not ask for the block by
// its id, fails), so a command added to the tour cannot go unrun. The e2e files run the blocks themselves.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { README, tourBlocks } from './support/readme-tour.ts';

const root = path.resolve(import.meta.dirname, '..');
const readme = readFileSync(README, 'utf8');

describe('README', () => {
  it('is a front door: at most about 200 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
  });

  it('opens with the two commands, start and test', () => {
    const first = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    const commands = first
      .split('\n')
      .filter(Boolean)
      .map((l) => l.replace(/\s+#.*$/, ''));
    expect(commands).toEqual(['npm ci && npm start', 'npm ci && npm test']);
    // Nothing but the title and the opening paragraph before them.
    expect(readme.indexOf('```sh')).toBeLessThan(readme.indexOf('\n## '));
  });

  it('every code block of the tour names the end-to-end tests that run it, and each of them asks for it by id', () => {
    const blocks = tourBlocks(readme);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    const ids = blocks.map((b) => b.id);
    expect(new Set(ids).size, 'tour ids are unique').toBe(ids.length);
    for (const block of blocks) {
      expect(block.id, `a tour block has no <!-- tour: id (run by ...) --> marker:\n${block.code}`).not.toBeNull();
      expect(block.runBy.length, `tour block ${block.id} names no test`).toBeGreaterThan(0);
      for (const file of block.runBy) {
        expect(file, `tour block ${block.id}: ${file} is an end-to-end test`).toMatch(/^test\/e2e\/[\w-]+\.test\.ts$/);
        expect(existsSync(path.join(root, file)), `${file} exists`).toBe(true);
        const source = readFileSync(path.join(root, file), 'utf8');
        expect(source, `${file} runs tour block ${block.id}`).toContain(`tourBlock('${block.id}')`);
      }
    }
  });

  it('the tour makes an agent, buys a simulated number and calls it with SIPp, and points at the playground and console', () => {
    const blocks = tourBlocks(readme);
    expect(blocks.some((b) => /\/v1\/agents/.test(b.code) && /\/v1\/models/.test(b.code))).toBe(true);
    expect(blocks.some((b) => /\/v1\/phone-numbers/.test(b.code) && /^sipp /m.test(b.code))).toBe(true);
    expect(readme).toContain('http://127.0.0.1:8080/playground');
    expect(readme).toContain('http://127.0.0.1:8080/console');
  });

  it('links to every guide', () => {
    const guides = readdirSync(path.join(root, 'docs/guides')).filter((f) => f.endsWith('.md'));
    expect(guides.length).toBeGreaterThan(0);
    for (const g of guides) expect(readme, `README links docs/guides/${g}`).toContain(`](docs/guides/${g}`);
    expect(readme).toContain('](docs/security.md)');
  });
});
