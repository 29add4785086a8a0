import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { serviceLogReport } from './support/failure-logs.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'vap-failure-logs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the logs a failing test prints', () => {
  it("keeps each service's warnings and errors from anywhere in its log, then its last lines", () => {
    const worker = [
      JSON.stringify({ level: 50, msg: 'runner initialization timed out' }),
      ...Array.from({ length: 200 }, (_, i) => JSON.stringify({ level: 30, msg: `info ${i}` })),
    ];
    writeFileSync(path.join(dir, 'worker.log'), worker.join('\n'));
    writeFileSync(path.join(dir, 'livekit.log'), '2026-11-27T07:00:00Z\tWARN\tlivekit\tparticipant left\nplain line\n');
    const report = serviceLogReport(dir);
    expect(report).toContain('runner initialization timed out');
    expect(report).toContain('participant left');
    expect(report).toContain('info 199');
    expect(report).not.toContain('"info 100"');
    expect(report.indexOf('livekit.log')).toBeLessThan(report.indexOf('worker.log'));
  });

  it('says nothing for a folder that is gone', () => {
    expect(serviceLogReport(path.join(dir, 'missing'))).toBe('');
  });
});
