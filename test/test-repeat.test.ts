// scripts/test-repeat.ts: its arguments, and the failed tests it reads from vitest's JSON report.
import { describe, expect, it } from 'vitest';
import { failedTests, parseArgs } from '../scripts/test-repeat.ts';

describe('test:repeat', () => {
  it('takes a file, a count (10 by default), --load and -t', () => {
    expect(parseArgs(['a.test.ts'])).toEqual({ file: 'a.test.ts', runs: 10, load: false, testName: undefined });
    expect(parseArgs(['a.test.ts', '3', '--load', '-t', 'voicemail'])).toEqual({ file: 'a.test.ts', runs: 3, load: true, testName: 'voicemail' });
    expect(() => parseArgs([])).toThrow(/usage/);
    expect(() => parseArgs(['a.test.ts', '0'])).toThrow(/positive/);
    expect(() => parseArgs(['a.test.ts', '--retry'])).toThrow(/unknown option/);
  });

  it("names each failed test, and a file that failed without one (it did not load, or a hook failed)", () => {
    const report = {
      testResults: [
        {
          name: '/repo/a.test.ts',
          status: 'failed',
          assertionResults: [
            { fullName: 'a passes', status: 'passed' },
            { fullName: 'a fails', status: 'failed', failureMessages: ['AssertionError: expected 1 to be 2\n    at a.test.ts:3'] },
          ],
        },
        { name: '/repo/b.test.ts', status: 'failed', message: 'Hook timed out in 120000ms\nmore', assertionResults: [] },
        { name: '/repo/c.test.ts', status: 'passed', assertionResults: [{ fullName: 'c passes', status: 'passed' }] },
      ],
    };
    expect(failedTests(report)).toEqual([
      { name: 'a fails', message: 'AssertionError: expected 1 to be 2' },
      { name: expect.stringContaining('b.test.ts (the file itself)'), message: 'Hook timed out in 120000ms' },
    ]);
  });
});
