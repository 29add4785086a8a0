// deploy/prometheus: `promtool check rules` and `promtool test rules`, and every alert has a unit test in which
// it fires (and the file as a whole has quiet cases too).
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { toolPath } from '../support/tools.ts';

const run = promisify(execFile);
const dir = path.resolve(import.meta.dirname, '../../deploy/prometheus');
const promtool = toolPath('promtool');

type Rules = { groups: { name: string; rules: { alert?: string; record?: string; expr: string; labels?: Record<string, string>; annotations?: Record<string, string> }[] }[] };
type Tests = { rule_files: string[]; tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[] };

describe('Prometheus alert rules', () => {
  const rules = parse(readFileSync(path.join(dir, 'vap-rules.yaml'), 'utf8')) as Rules;
  const tests = parse(readFileSync(path.join(dir, 'vap-rules.test.yaml'), 'utf8')) as Tests;
  const alerts = rules.groups.flatMap((g) => g.rules).filter((r) => r.alert);

  it('pass promtool check rules', async () => {
    const { stdout } = await run(promtool, ['check', 'rules', 'vap-rules.yaml'], { cwd: dir });
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('pass their unit tests (promtool test rules)', { timeout: 60_000 }, async () => {
    const { stdout } = await run(promtool, ['test', 'rules', 'vap-rules.test.yaml'], { cwd: dir });
    expect(stdout).toMatch(/SUCCESS/);
  });

  it('each alert has a case where it fires and one where it stays quiet, a severity and a runbook entry', () => {
    expect(tests.rule_files).toEqual(['vap-rules.yaml']);
    const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
    const runbook = readFileSync(path.resolve(dir, '../../docs/operations.md'), 'utf8');
    for (const a of alerts) {
      expect(cases.some((c) => c.alertname === a.alert && c.exp_alerts.length > 0), `${a.alert} fires in a test`).toBe(true);
      expect(cases.some((c) => c.alertname === a.alert && c.exp_alerts.length === 0), `${a.alert} stays quiet in a test`).toBe(true);
      expect(['page', 'ticket']).toContain(a.labels?.severity);
      const anchor = a.annotations?.runbook?.split('#')[1];
      expect(anchor, `${a.alert} runbook`).toBeTruthy();
      // The runbook has a heading for it (GitHub-style anchor: lower case).
      expect(runbook.toLowerCase(), `docs/operations.md explains ${a.alert}`).toContain(`### ${anchor}`);
    }
    for (const need of ['VapVoiceLatencyBudgetBurnFast', 'VapVoiceLatencyBudgetBurnSlow', 'VapWorkersSaturated', 'VapJobQueueStale', 'VapWebhookFailureRate', 'VapCallsStuck', 'VapSipFailureRate']) {
      expect(alerts.map((a) => a.alert)).toContain(need);
    }
  });
});
