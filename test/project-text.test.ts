// What the project's own text says: no package registry or module proxy is named by host (they are "the npm
// registry", "the Go module proxy"), and the README's opening claims only what the API serves.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { allRoutes } from '../control-plane/src/app.ts';

const root = path.resolve(import.meta.dirname, '..');
// Written as patterns so this file does not name the hosts either.
const HOSTS = [/registry\.npmjs\.(org|com)/i, /\bnpmjs\.(org|com)/i, /registry\.yarnpkg\.com/i, /proxy\.golang\.org/i, /sum\.golang\.org/i, /goproxy\.(io|cn)/i, /pypi\.org/i, /deb\.debian\.org/i];

describe('project text', () => {
  it('names no package registry or module proxy host in tracked files', () => {
    const files = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f && f !== 'package-lock.json' && /\.(md|ts|js|json|sh|ya?ml|sql|txt|example)$|Dockerfile|\.env/.test(f));
    const hits: string[] = [];
    for (const f of files) {
      let text: string;
      try {
        text = readFileSync(path.join(root, f), 'utf8');
      } catch {
        continue;
      }
      for (const re of HOSTS) if (re.test(text)) hits.push(`${f}: ${re}`);
    }
    expect(hits).toEqual([]);
  });

  it("README's opening claims only capabilities the API serves", () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const opening = readme.split('\n```')[0]!.toLowerCase();
    const ops = new Set(allRoutes().filter((r) => !r.internal).map((r) => `${r.method} ${r.path}`));
    const has = (prefix: string) => [...ops].some((o) => o.startsWith(prefix));
    const claims: [RegExp, () => boolean][] = [
      [/phone numbers?/, () => has('post /phone-numbers') && has('patch /phone-numbers/:phone_number_id/inbound-routing')],
      [/web pages?|browsers?/, () => has('post /calls/web')],
      [/knowledge/, () => has('get /knowledge-bases')],
      [/outbound/, () => has('post /calls') ],
    ];
    for (const [re, served] of claims) if (re.test(opening)) expect(served(), `README opening claims ${re}`).toBe(true);
  });
});
