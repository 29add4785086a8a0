// Every metric that a Grafana panel (deploy/grafana) or an alert rule (deploy/prometheus) reads is exported by
// the real processes: a control plane and a media worker are started and scraped, and the names compared.
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { useStack, type TestStack } from '../support/stack.ts';
import { exportedNames, metricNames } from './promql.ts';

const root = path.resolve(import.meta.dirname, '../..');

interface Target { expr: string }
interface DashPanel { type: string; title: string; targets?: Target[]; panels?: DashPanel[] }

function dashboardQueries(): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = [];
  for (const f of readdirSync(path.join(root, 'deploy/grafana')).filter((n) => n.endsWith('.json'))) {
    const d = JSON.parse(readFileSync(path.join(root, 'deploy/grafana', f), 'utf8')) as { panels: DashPanel[] };
    const walk = (ps: DashPanel[]) => {
      for (const p of ps) {
        for (const t of p.targets ?? []) out.push({ where: `${f}: ${p.title}`, expr: t.expr });
        walk(p.panels ?? []);
      }
    };
    walk(d.panels);
  }
  return out;
}

function ruleQueries(): { where: string; expr: string; record?: string }[] {
  const rules = parse(readFileSync(path.join(root, 'deploy/prometheus/vap-rules.yaml'), 'utf8')) as { groups: { rules: { alert?: string; record?: string; expr: string }[] }[] };
  return rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `rule ${r.alert ?? r.record}`, expr: r.expr, ...(r.record ? { record: r.record } : {}) })));
}

describe('dashboards and alert rules read only exported metrics', () => {
  let stack: TestStack;
  let exported: Set<string>;
  beforeAll(async () => {
    stack = await useStack({ controlPlane: true, worker: true });
    const scrape = async (port: number) => {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      return res.text();
    };
    const [cp, worker] = await Promise.all([scrape(stack.ports.controlPlaneMetrics), scrape(stack.ports.workerMetrics)]);
    exported = new Set([...exportedNames(cp), ...exportedNames(worker)]);
    // Sanity: both processes answered with their own families.
    expect(exportedNames(cp).has('vap_http_request_duration_seconds_bucket')).toBe(true);
    expect(exportedNames(worker).has('voice_worker_load')).toBe(true);
  }, 180_000);

  it('the extractor finds the metric names of a query (and only them)', () => {
    expect([...metricNames('histogram_quantile(0.95, sum by (le, provider) (rate(voice_e2e_latency_seconds_bucket{le="1.5"}[$__rate_interval])))')]).toEqual(['voice_e2e_latency_seconds_bucket']);
    expect([...metricNames('max by (queue) (vap_jobs_oldest_age_seconds) > 300 and absent(foo_total)')].sort()).toEqual(['foo_total', 'vap_jobs_oldest_age_seconds']);
  });

  it('every panel query names exported metrics', () => {
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThan(15);
    const missing = queries.flatMap(({ where, expr }) => [...metricNames(expr)].filter((n) => !exported.has(n)).map((n) => `${where}: ${n}`));
    expect(missing).toEqual([]);
  });

  it('every alert and recording rule names exported metrics (or a recorded series)', () => {
    const queries = ruleQueries();
    const recorded = new Set(queries.flatMap((q) => (q.record ? [q.record] : [])));
    const missing = queries.flatMap(({ where, expr }) => [...metricNames(expr)].filter((n) => !exported.has(n) && !recorded.has(n)).map((n) => `${where}: ${n}`));
    expect(missing).toEqual([]);
  });

  it('the dashboards cover what an SRE asked for', () => {
    const all = dashboardQueries().map((q) => q.expr).join('\n');
    for (const m of [
      'voice_llm_ttft_seconds', 'voice_tts_ttfb_seconds', 'voice_eou_delay_seconds', 'voice_e2e_latency_seconds', 'voice_worker_load',
      'voice_active_calls', 'voice_calls_total', 'vap_calls_ended_total', 'vap_http_request_duration_seconds', 'vap_jobs_queue_depth',
      'vap_jobs_oldest_age_seconds', 'vap_webhook_attempts_total', 'vap_webhook_oldest_due_age_seconds', 'vap_webhooks_disabled',
      'vap_sip_calls_total', 'vap_sip_call_failures_total', 'voice_false_interruptions_total', 'voice_preemptive_wasted_tokens_total',
    ]) expect(all).toContain(m);
    expect(all).toMatch(/by \(le, provider, model\)/);
  });
});
