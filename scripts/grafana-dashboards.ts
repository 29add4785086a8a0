// Writes the Grafana dashboards of deploy/grafana/ (provisioned by the Helm chart). Panels are data here so
// that every query is reviewed in one place; test/deploy/dashboards.test.ts checks that each metric a query
// names is exported by a running control plane or media worker.
//   node scripts/grafana-dashboards.ts
import { writeFileSync } from 'node:fs';
import path from 'node:path';

interface Panel { title: string; exprs: [expr: string, legend: string][]; unit?: string; description?: string; width?: number; kind?: 'timeseries' | 'stat' }
interface Row { title: string; panels: Panel[] }

const ds = { type: 'prometheus', uid: '${datasource}' };
// Control-plane gauges read from the database are the same on every replica: max() folds them.
const R = '$__rate_interval';

function dashboard(uid: string, title: string, description: string, rows: Row[]) {
  const panels: unknown[] = [];
  let id = 1;
  let y = 0;
  for (const row of rows) {
    panels.push({ id: id++, type: 'row', title: row.title, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y }, panels: [] });
    y += 1;
    let x = 0;
    for (const p of row.panels) {
      const w = p.width ?? 12;
      if (x + w > 24) {
        x = 0;
        y += 8;
      }
      panels.push({
        id: id++,
        type: p.kind ?? 'timeseries',
        title: p.title,
        ...(p.description ? { description: p.description } : {}),
        datasource: ds,
        gridPos: { h: 8, w, x, y },
        fieldConfig: { defaults: { unit: p.unit ?? 'short' }, overrides: [] },
        options: { legend: { displayMode: 'table', placement: 'right', calcs: ['lastNotNull', 'max'] }, tooltip: { mode: 'multi' } },
        targets: p.exprs.map(([expr, legend], i) => ({ refId: String.fromCharCode(65 + i), datasource: ds, expr, legendFormat: legend })),
      });
      x += w;
    }
    y += 8;
  }
  return {
    uid,
    title,
    description,
    tags: ['vap'],
    schemaVersion: 39,
    version: 1,
    editable: true,
    time: { from: 'now-6h', to: 'now' },
    refresh: '30s',
    templating: {
      list: [{ name: 'datasource', type: 'datasource', query: 'prometheus', label: 'Prometheus', current: {}, hide: 0 }],
    },
    annotations: { list: [] },
    panels,
  };
}

const latency = (metric: string, what: string): Panel => ({
  title: `${what} p50 / p95 by provider and model`,
  unit: 's',
  exprs: [
    [`histogram_quantile(0.5, sum by (le, provider, model) (rate(${metric}_bucket[${R}])))`, 'p50 {{provider}} {{model}}'],
    [`histogram_quantile(0.95, sum by (le, provider, model) (rate(${metric}_bucket[${R}])))`, 'p95 {{provider}} {{model}}'],
  ],
});

const voice = dashboard('vap-voice', 'vap / Voice and workers', 'Voice latency, media worker load and call outcomes.', [
  {
    title: 'Voice latency',
    panels: [
      { ...latency('voice_e2e_latency_seconds', 'Voice to voice (end of speech to first agent audio)'), description: 'The SLO: 95% of turns within 1.5 s (alerts VapVoiceLatencyBudgetBurn*).' },
      latency('voice_llm_ttft_seconds', 'LLM time to first token'),
      latency('voice_tts_ttfb_seconds', 'TTS time to first byte'),
      latency('voice_eou_delay_seconds', 'End-of-utterance delay'),
    ],
  },
  {
    title: 'Media workers',
    panels: [
      { title: 'Load per worker (LiveKit stops dispatching at 0.7)', unit: 'percentunit', exprs: [['max by (pod, instance) (voice_worker_load)', '{{pod}}{{instance}}']] },
      { title: 'Active calls per worker', exprs: [['sum by (pod, instance) (voice_active_calls)', '{{pod}}{{instance}}']] },
      { title: 'Workers and fleet load', unit: 'short', width: 24, exprs: [['count(voice_worker_load)', 'workers'], ['avg(voice_worker_load)', 'average load'], ['sum(voice_active_calls)', 'active calls']] },
    ],
  },
  {
    title: 'Calls',
    panels: [
      { title: 'Calls ended by end reason (worker)', unit: 'cpm', exprs: [[`sum by (end_reason, call_type) (rate(voice_calls_total[${R}])) * 60`, '{{call_type}} {{end_reason}}']] },
      { title: 'Call outcomes (control plane)', unit: 'cpm', exprs: [[`sum by (type, status, end_reason) (rate(vap_calls_ended_total[${R}])) * 60`, '{{type}} {{status}} {{end_reason}}']] },
      { title: 'Calls in flight by status', exprs: [['max by (type, status) (vap_calls_current)', '{{type}} {{status}}']] },
      { title: 'Stuck calls (in progress past max duration)', exprs: [['max by (type) (vap_calls_stuck)', '{{type}}']] },
    ],
  },
]);

const platform = dashboard('vap-platform', 'vap / API, jobs, webhooks, SIP', 'Control plane: API traffic, job queues, webhook delivery and phone calls.', [
  {
    title: 'API',
    panels: [
      { title: 'Requests by route', unit: 'reqps', exprs: [[`sum by (route, method) (rate(vap_http_request_duration_seconds_count[${R}]))`, '{{method}} {{route}}']] },
      { title: 'Errors by route (4xx, 5xx)', unit: 'reqps', exprs: [[`sum by (route, status) (rate(vap_http_request_duration_seconds_count{status=~"[45].."}[${R}]))`, '{{status}} {{route}}']] },
      { title: 'Latency p95 by route', unit: 's', exprs: [[`histogram_quantile(0.95, sum by (le, route) (rate(vap_http_request_duration_seconds_bucket[${R}])))`, '{{route}}']] },
      { title: 'Database connections', exprs: [['max by (state) (vap_db_connections)', '{{state}}'], ['sum(vap_db_pool_max)', 'pool max (all replicas)']] },
    ],
  },
  {
    title: 'Job queues',
    panels: [
      { title: 'Queue depth by queue and state', exprs: [['max by (queue, state) (vap_jobs_queue_depth)', '{{queue}} {{state}}']] },
      { title: 'Oldest ready job age', unit: 's', exprs: [['max by (queue) (vap_jobs_oldest_age_seconds)', '{{queue}}']] },
    ],
  },
  {
    title: 'Webhooks',
    panels: [
      {
        title: 'Delivery success ratio',
        unit: 'percentunit',
        exprs: [[`sum(rate(vap_webhook_attempts_total{result="succeeded"}[${R}])) / sum(rate(vap_webhook_attempts_total[${R}]))`, 'succeeded / attempts']],
      },
      { title: 'Attempts by result', unit: 'ops', exprs: [[`sum by (result) (rate(vap_webhook_attempts_total[${R}]))`, '{{result}}']] },
      { title: 'Delivery lag (oldest due message)', unit: 's', exprs: [['max(vap_webhook_oldest_due_age_seconds)', 'lag'], ['max(vap_webhook_messages_due)', 'due messages']] },
      { title: 'Disabled endpoints', kind: 'stat', exprs: [['max(vap_webhooks_disabled)', 'disabled']] },
    ],
  },
  {
    title: 'SIP (phone calls)',
    panels: [
      { title: 'Phone calls in and out', unit: 'cpm', exprs: [[`sum by (direction, result) (rate(vap_sip_calls_total[${R}])) * 60`, '{{direction}} {{result}}']] },
      { title: 'Phone call failures by reason', unit: 'cpm', exprs: [[`sum by (direction, reason) (rate(vap_sip_call_failures_total[${R}])) * 60`, '{{direction}} {{reason}}']] },
    ],
  },
]);

const dir = path.join(import.meta.dirname, '..', 'deploy', 'grafana');
for (const d of [voice, platform]) writeFileSync(path.join(dir, `${d.uid}.json`), `${JSON.stringify(d, null, 2)}\n`);
process.stdout.write(`wrote ${dir}/{vap-voice,vap-platform}.json\n`);
