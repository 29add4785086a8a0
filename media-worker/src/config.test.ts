import { describe, expect, it } from 'vitest';
import { jobExecArgv, loadWorkerConfig } from './config.ts';

const token = 'x'.repeat(32);

describe('worker config', () => {
  it('caps the young generation of job processes at 4 MB by default, unless told otherwise', () => {
    expect(loadWorkerConfig({ WORKER_TOKEN: token }).jobMaxSemiSpaceMb).toBe(4);
    expect(loadWorkerConfig({ WORKER_TOKEN: token, JOB_MAX_SEMI_SPACE_MB: '0' }).jobMaxSemiSpaceMb).toBe(0);
    expect(() => loadWorkerConfig({ WORKER_TOKEN: token, JOB_MAX_SEMI_SPACE_MB: 'big' })).toThrow(/JOB_MAX_SEMI_SPACE_MB/);
  });

  it('gives a new job process 10 s to start by default (JOB_INIT_TIMEOUT_MS), and refuses nonsense', () => {
    expect(loadWorkerConfig({ WORKER_TOKEN: token }).jobInitTimeoutMs).toBe(10_000);
    expect(loadWorkerConfig({ WORKER_TOKEN: token, JOB_INIT_TIMEOUT_MS: '60000' }).jobInitTimeoutMs).toBe(60_000);
    expect(() => loadWorkerConfig({ WORKER_TOKEN: token, JOB_INIT_TIMEOUT_MS: '10' })).toThrow(/JOB_INIT_TIMEOUT_MS/);
  });

  it('adds the flag to the job processes, leaving a flag already given and V8 default alone', () => {
    expect(jobExecArgv(['--enable-source-maps'], 4)).toEqual(['--enable-source-maps', '--max-semi-space-size=4']);
    expect(jobExecArgv(['--max-semi-space-size=16'], 4)).toEqual(['--max-semi-space-size=16']);
    expect(jobExecArgv([], 0)).toEqual([]);
  });
});
