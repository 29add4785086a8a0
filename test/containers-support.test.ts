// The image test's helpers (test/support/containers.ts) that decide without podman: whether the test runs, and
// when an image built before can stand for a new build.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildKey, imageTestDecision } from './support/containers.ts';

describe('imageTestDecision', () => {
  const probe = (podman: boolean, conf: boolean, root = true) => ({ podman: () => podman, conf: () => conf, root: () => root });

  it('runs as root where podman and setup.sh\'s containers.conf are, unless VAP_TEST_IMAGES=0', () => {
    expect(imageTestDecision({}, probe(true, true)).run).toBe(true);
    expect(imageTestDecision({ VAP_TEST_IMAGES: '0' }, probe(true, true)).run).toBe(false);
    expect(imageTestDecision({}, probe(false, true))).toMatchObject({ run: false, why: expect.stringContaining('podman is not installed') });
    expect(imageTestDecision({}, probe(true, false))).toMatchObject({ run: false, why: expect.stringContaining('containers.conf') });
    expect(imageTestDecision({}, probe(true, true, false))).toMatchObject({ run: false, why: expect.stringContaining('not root') });
  });

  it('VAP_TEST_IMAGES=1 runs it even without podman, so a missing engine fails instead of skipping', () => {
    expect(imageTestDecision({ VAP_TEST_IMAGES: '1' }, probe(false, false, false)).run).toBe(true);
  });
});

describe('buildKey', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'vap-buildkey-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  };
  write('app.Dockerfile', 'ARG NODE_IMAGE=node:24\nFROM ${NODE_IMAGE} AS deps\nCOPY package.json ./\nFROM ${NODE_IMAGE}\nCOPY --from=deps /app/node_modules ./node_modules\nCOPY --chown=root:root src ./src\n');
  write('.dockerignore', '**/*.test.ts\n');
  write('package.json', '{}');
  write('src/main.ts', 'one');
  write('src/lib/util.ts', 'two');
  write('src/main.test.ts', 'test');
  write('other/ignored.ts', 'not copied');
  const key = () => buildKey('app.Dockerfile', 'base1', root);

  it('changes with the base image, the Dockerfile and any file a COPY takes', () => {
    const first = key();
    expect(key()).toBe(first);
    expect(buildKey('app.Dockerfile', 'base2', root)).not.toBe(first);
    write('src/lib/util.ts', 'changed');
    const second = key();
    expect(second).not.toBe(first);
    write('package.json', '{"x":1}');
    expect(key()).not.toBe(second);
  });

  it('stays the same when only a test file or a file no COPY takes changes', () => {
    const before = key();
    write('src/main.test.ts', 'changed');
    write('other/ignored.ts', 'changed');
    expect(key()).toBe(before);
  });
});
