// Overview: the activity summary over a chosen window, with calls per day by status, outcomes and end reasons,
// per-turn latency p50/p95 per day, and the error signals, each linked to where it can be looked at.
import { api, ApiError } from '../../playground/api.ts';
import { field, focusHeading, header, href, navigate, problem, type PageContext } from '../app.ts';
import { countBars, lines, stackedBars } from '../charts.ts';
import { h } from '../dom.ts';

interface ValueCount {
  value: string;
  count: number;
}
interface Summary {
  org_name: string;
  window: { since: string; until: string };
  resource_counts: Record<string, number>;
  call_summary: { total: number; by_status: ValueCount[]; by_outcome: ValueCount[]; by_end_reason: ValueCount[] };
  error_signals: {
    calls_ended_in_error: number;
    kb_sources_errored: { knowledge_base_id: string; source_id: string; error_message: string | null }[];
    webhook_deliveries_failed: number;
    webhooks_disabled: number;
    analyses_failed: number;
  };
}
type Pct = { p50: number | null; p95: number | null };
interface Timeseries {
  buckets: { start: string; calls_by_status: Record<string, number>; latency: Record<'eou_delay' | 'llm_ttft' | 'tts_ttfb' | 'e2e', Pct> }[];
}

const STATUSES = ['completed', 'failed', 'in_progress', 'initiated', 'queued'];
const METRICS = [
  { key: 'eou_delay', name: 'End of utterance', cls: 'eou' },
  { key: 'llm_ttft', name: 'LLM first token', cls: 'llm' },
  { key: 'tts_ttfb', name: 'TTS first byte', cls: 'tts' },
  { key: 'e2e', name: 'End to end', cls: 'e2e' },
] as const;

export async function overviewPage({ view, query, signal }: PageContext): Promise<void> {
  const days = ['7', '30', '90'].includes(query.get('days') ?? '') ? Number(query.get('days')) : 30;
  const until = new Date();
  const since = new Date(until.getTime() - days * 86_400_000);
  const select = h(
    'select',
    { onchange: () => navigate('/overview', { days: select.value }) },
    [7, 30, 90].map((d) => h('option', { value: String(d), selected: d === days }, `Last ${d} days`)),
  );
  view.append(header('Overview'), h('div', { class: 'toolbar' }, field('window', 'Window', select)));
  focusHeading();
  const q = `since=${encodeURIComponent(since.toISOString())}&until=${encodeURIComponent(until.toISOString())}`;
  const [summary, series] = await Promise.all([
    api<Summary>(`/v1/activity/summary?${q}`, { signal }),
    api<Timeseries>(`/v1/activity/timeseries?${q}&bucket=day`, { signal }).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err)))),
  ]);
  const c = summary.call_summary;
  const e = summary.error_signals;
  view.append(
    h(
      'section',
      { 'aria-labelledby': 'ov-totals' },
      h('h2', { id: 'ov-totals' }, `${summary.org_name}: ${c.total} calls in the window`),
      h(
        'ul',
        { class: 'tiles' },
        Object.entries(summary.resource_counts).map(([k, v]) => h('li', null, h('span', { class: 'tile-n' }, String(v)), ` ${k.replace(/_/g, ' ')}`)),
      ),
    ),
  );
  const charts = h('section', { 'aria-labelledby': 'ov-charts' }, h('h2', { id: 'ov-charts' }, 'Calls and latency'));
  if (series instanceof Error) {
    // The per-day series is a newer endpoint: an older server answers 404, and the rest of the page still works.
    if (series instanceof ApiError && series.status === 404)
      charts.append(h('p', { class: 'note' }, 'This server has no per-day activity (GET /v1/activity/timeseries); the totals below cover the window.'));
    else charts.append(problem(series, () => navigate('/overview', { days })));
    charts.append(countBars('Calls by status', c.by_status));
  } else {
    const labels = series.buckets.map((b) => b.start.slice(5, 10));
    charts.append(
      stackedBars(
        'Calls per day by status',
        labels,
        STATUSES.map((st) => ({ name: st, values: series.buckets.map((b) => b.calls_by_status[st] ?? 0) })),
      ),
    );
    charts.append(
      lines(
        'Per-turn latency per day, p50 (solid) and p95 (dashed)',
        labels,
        METRICS.flatMap((m) => [
          { name: `${m.name} p50`, cls: m.cls, values: series.buckets.map((b) => b.latency[m.key]?.p50 ?? null) },
          { name: `${m.name} p95`, cls: m.cls, dashed: true, values: series.buckets.map((b) => b.latency[m.key]?.p95 ?? null) },
        ]),
        'ms',
      ),
    );
  }
  charts.append(h('div', { class: 'two' }, countBars('Outcomes', c.by_outcome), countBars('End reasons', c.by_end_reason)));
  view.append(charts);
  const signal_ = (n: number, text: string, link: string) => h('li', { class: n ? 'bad' : '' }, h('a', { href: link }, `${n} ${text}`));
  view.append(
    h(
      'section',
      { 'aria-labelledby': 'ov-errors' },
      h('h2', { id: 'ov-errors' }, 'Error signals'),
      h(
        'ul',
        { class: 'signals' },
        signal_(e.calls_ended_in_error, 'calls ended in error', href('/calls', { status: 'failed' })),
        signal_(e.analyses_failed, 'post-call analyses failed', href('/calls')),
        signal_(e.webhook_deliveries_failed, 'webhook deliveries failed', href('/webhooks')),
        signal_(e.webhooks_disabled, 'webhooks disabled by the platform', href('/webhooks')),
        e.kb_sources_errored.map((k) =>
          h(
            'li',
            { class: 'bad' },
            h('a', { href: href(`/knowledge-bases/${k.knowledge_base_id}`) }, `Knowledge source in error: ${k.error_message ?? 'no message'}`),
          ),
        ),
      ),
    ),
  );
}
