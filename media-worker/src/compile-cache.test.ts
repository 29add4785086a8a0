// The job processes' compile cache: the worker names it for the processes it forks, and keeps the operator's.
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { shareCompileCache } from './compile-cache.ts';

describe('compile cache', () => {
  it('is named under the temp folder for the forked processes, unless the operator named one', () => {
    const env: NodeJS.ProcessEnv = {};
    expect(shareCompileCache(env)).toBe(path.join(os.tmpdir(), 'vap-node-compile-cache'));
    expect(env.NODE_COMPILE_CACHE).toBe(path.join(os.tmpdir(), 'vap-node-compile-cache'));
    const own: NodeJS.ProcessEnv = { NODE_COMPILE_CACHE: '/var/cache/vap' };
    expect(shareCompileCache(own)).toBe('/var/cache/vap');
    expect(own.NODE_COMPILE_CACHE).toBe('/var/cache/vap');
  });
});
