// The agent page's versions: the history (who changed what, when), a diff between any two, publish and rollback
// (a refused publish names the failed test expectations), the traffic split, and the versions compared side by
// side (GET /v1/activity/summary?agent_id=), with sample sizes and whether each difference is within noise.
import { api, ApiError } from '../../playground/api.ts';
import { notice, problem } from '../app.ts';
import { dash, fmtDate, h, table } from '../dom.ts';
import type { List } from './calls.ts';

interface Version {
  version: number;
  kind: string;
  base_version: number | null;
  status: 'published' | 'draft' | 'archived';
  published_at: string | null;
  actor: { type: string; id: string | null };
  changes: string[];
  cause: { resource_type: string; action: string } | null;
  created_at: string;
  diff: { against: number | null; changes: { path: string; op: string; from?: unknown; to?: unknown }[] } | null;
}
interface Rollout {
  published_version: number | null;
  draft_version: number | null;
  split: { version: number; percent: number } | null;
  test_suite_id: string | null;
}
interface RateView {
  count: number;
  samples: number;
  rate: number | null;
  ci95: [number, number] | null;
}
interface Dist {
  samples: number;
  p50: number | null;
  p95: number | null;
}
interface Compared {
  version: number;
  calls: number;
  ended_calls: number;
  completed: RateView;
  transferred: RateView;
  duration_seconds: Dist;
  latency_e2e_ms: Dist;
  tests: { runs: number; scenarios: RateView };
  against_baseline: { metric: string; p_value: number | null; verdict: string }[];
}
interface Comparison {
  baseline_version: number | null;
  methods: { rates: string; distributions: string; alpha: number };
  versions: Compared[];
}

const KIND: Record<string, string> = {
  create: 'created',
  update: 'changed and published',
  draft: 'draft',
  dependency: 'its model or a tool changed',
  migration: 'as it was before versions',
};
const ACTOR: Record<string, string> = { api_key: 'API key', user: 'user', system: 'the platform', publishable_key: 'publishable key', worker: 'worker' };
const who = (v: Version) => `${ACTOR[v.actor.type] ?? v.actor.type}${v.actor.id ? ` ${v.actor.id.slice(0, 8)}` : ''}`;
const show = (v: unknown) => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v, null, 1));
const pct = (r: RateView) => (r.rate === null ? '—' : `${Math.round(r.rate * 100)} % (${r.count}/${r.samples}; 95 % CI ${Math.round(r.ci95![0] * 100)}–${Math.round(r.ci95![1] * 100)} %)`);
const ms = (d: Dist) => (d.p50 === null ? '—' : `${Math.round(d.p50)} / ${Math.round(d.p95!)} ms (n=${d.samples})`);

/** A refused publish in words: the failed expectations, or the test run that must pass first. */
function publishProblem(err: unknown): HTMLElement {
  const body = err instanceof ApiError ? (err.body as { gate?: string; failed_expectations?: { scenario_name: string; expectation: string; reason: string | null }[]; test_run_id?: string }) : null;
  if (body?.gate === 'failed' && body.failed_expectations?.length) {
    return h(
      'div',
      { class: 'problem', role: 'alert' },
      h('p', null, 'Not published: the test suite failed.'),
      h(
        'ul',
        null,
        body.failed_expectations.map((f) => h('li', null, `${f.scenario_name}: ${f.expectation}${f.reason ? ` (${f.reason})` : ''}`)),
      ),
    );
  }
  if (body?.gate === 'pending') return notice(`Not published yet: the test suite is running (test run ${body.test_run_id?.slice(0, 8)}). Publish again once it has passed.`);
  return problem(err);
}

export function versionsSection(agentId: string, signal: AbortSignal, onPublished: () => void): HTMLElement {
  const sec = h('section', { 'aria-labelledby': 'agent-versions' }, h('h2', { id: 'agent-versions' }, 'Versions'));
  const status = h('div', { 'aria-live': 'polite' });
  const body = h('div');
  sec.append(status, body);

  const act = (path: string, payload: unknown, done: string) =>
    void api(path, { method: 'POST', body: payload }).then(
      () => {
        status.replaceChildren(notice(done));
        onPublished();
      },
      (err: unknown) => status.replaceChildren(publishProblem(err)),
    );

  const load = async (): Promise<void> => {
    try {
      const [list, rollout] = await Promise.all([
        api<List<Version>>(`/v1/agents/${agentId}/versions?limit=100`, { signal }),
        api<Rollout>(`/v1/agents/${agentId}/rollout`, { signal }),
      ]);
      const rows = list.items.map((v) => [
        `Version ${v.version}`,
        v.status === 'published' ? 'Published' : v.status === 'draft' ? 'Draft' : v.published_at ? 'Published before' : 'Never published',
        `${KIND[v.kind] ?? v.kind}${v.cause ? ` (${v.cause.action})` : ''}`,
        who(v),
        fmtDate(v.created_at),
        v.changes.length ? v.changes.join(', ') : '—',
        v.status === 'published'
          ? ''
          : v.published_at
            ? h('button', { type: 'button', class: 'small secondary', onclick: () => act(`/v1/agents/${agentId}/rollback`, { version: v.version }, `Rolled back to version ${v.version}.`) }, `Roll back to ${v.version}`)
            : h('button', { type: 'button', class: 'small', onclick: () => act(`/v1/agents/${agentId}/publish`, { version: v.version }, `Version ${v.version} published.`) }, `Publish ${v.version}`),
      ]);
      body.replaceChildren(
        h(
          'p',
          null,
          `Published: version ${dash(rollout.published_version)}.`,
          rollout.draft_version ? ` Draft: version ${rollout.draft_version}.` : ' No draft.',
          rollout.test_suite_id ? ' Versions must pass the test suite before they are published.' : '',
        ),
        table(`${list.total} versions`, ['Version', 'Status', 'Made', 'By', 'When', 'What changed', 'Action'], rows, { rowHeader: true }),
        diffForm(agentId, list.items, rollout, signal),
        splitForm(agentId, list.items, rollout, () => void load()),
      );
    } catch (err) {
      if (!signal.aborted) body.replaceChildren(problem(err, () => void load()));
    }
  };
  void load();
  return sec;
}

/** Two version pickers and the changes between them. */
function diffForm(agentId: string, versions: Version[], r: Rollout, signal: AbortSignal): HTMLElement {
  const options = (selected: number | null) => versions.map((v) => h('option', { value: String(v.version), selected: v.version === selected }, `Version ${v.version}`));
  const newest = versions[0]?.version ?? null;
  const from = h('select', { id: 'diff-from' }, options(r.published_version !== newest ? r.published_version : (versions[1]?.version ?? newest)));
  const to = h('select', { id: 'diff-to' }, options(r.draft_version ?? newest));
  const out = h('div', { 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Compare two versions' },
    h('h3', null, 'Differences'),
    h('label', { for: 'diff-from' }, 'From'),
    from,
    h('label', { for: 'diff-to' }, 'To'),
    to,
    h('button', { type: 'submit', class: 'secondary' }, 'Show differences'),
    out,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void api<Version>(`/v1/agents/${agentId}/versions/${to.value}?against=${from.value}`, { signal }).then(
      (v) =>
        out.replaceChildren(
          v.diff!.changes.length
            ? table(
                `Version ${from.value} → version ${to.value}`,
                ['Field', `Version ${from.value}`, `Version ${to.value}`],
                v.diff!.changes.map((c) => [c.path, h('span', { class: 'diff-from' }, show(c.from)), h('span', { class: 'diff-to' }, show(c.to))]),
                { rowHeader: true },
              )
            : h('p', null, `Versions ${from.value} and ${to.value} are the same.`),
        ),
      (err: unknown) => out.replaceChildren(problem(err)),
    );
  });
  return form;
}

/** The traffic split: a share of the calls to another version. */
function splitForm(agentId: string, versions: Version[], r: Rollout, reload: () => void): HTMLElement {
  const others = versions.filter((v) => v.version !== r.published_version);
  const version = h('select', { id: 'split-version' }, others.map((v) => h('option', { value: String(v.version), selected: v.version === r.split?.version }, `Version ${v.version}`)));
  const percent = h('input', { id: 'split-percent', type: 'number', min: 1, max: 99, step: 1, inputmode: 'numeric' });
  percent.value = String(r.split?.percent ?? 10);
  const status = h('div', { 'aria-live': 'polite' });
  const send = (split: unknown, done: string) =>
    void api(`/v1/agents/${agentId}/rollout`, { method: 'PATCH', body: { split } }).then(
      () => {
        status.replaceChildren(notice(done));
        reload();
      },
      (err: unknown) => status.replaceChildren(problem(err)),
    );
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Traffic split' },
    h('h3', null, 'Traffic split'),
    h(
      'p',
      { class: 'note' },
      r.split
        ? `${r.split.percent} % of the calls that follow the published version run version ${r.split.version}; the same caller always gets the same side.`
        : 'All calls that are not pinned run the published version.',
    ),
    others.length ? [h('label', { for: 'split-version' }, 'Version'), version, h('label', { for: 'split-percent' }, 'Share of calls (%)'), percent] : null,
    others.length ? h('button', { type: 'submit' }, r.split ? 'Update split' : 'Start split') : null,
    r.split ? h('button', { type: 'button', class: 'secondary', onclick: () => send(null, 'Split ended.') }, 'End split') : null,
    status,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    send({ version: Number(version.value), percent: Number(percent.value) }, 'Split saved.');
  });
  return form;
}

/** The versions side by side over the last 30 days. */
export function comparisonSection(agentId: string, signal: AbortSignal): HTMLElement {
  const sec = h('section', { 'aria-labelledby': 'agent-compare' }, h('h2', { id: 'agent-compare' }, 'Versions compared (last 30 days)'));
  const body = h('div', { 'aria-live': 'polite' });
  sec.append(body);
  void api<{ version_comparison: Comparison }>(`/v1/activity/summary?agent_id=${agentId}`, { signal }).then(
    ({ version_comparison: c }) => {
      if (!c.versions.length) {
        body.replaceChildren(h('p', { class: 'note' }, 'No calls or test runs of any version in the last 30 days.'));
        return;
      }
      const verdicts = (v: Compared) => {
        if (v.version === c.baseline_version) return 'Baseline';
        const judged = v.against_baseline.filter((m) => m.verdict !== 'insufficient_data');
        const differ = judged.filter((m) => m.verdict === 'significant');
        if (!judged.length) return 'Too few calls to tell';
        return differ.length
          ? h('span', { class: 'verdict-significant' }, `Differs: ${differ.map((m) => `${m.metric} (p=${m.p_value!.toPrecision(2)})`).join(', ')}`)
          : 'Within noise on every measure';
      };
      body.replaceChildren(
        table(
          'Each version against the baseline',
          ['Version', 'Calls', 'Completed', 'Transferred', 'Duration p50', 'Latency p50 / p95', 'Tests passed', 'Against the baseline'],
          c.versions.map((v) => [
            `Version ${v.version}`,
            String(v.calls),
            pct(v.completed),
            pct(v.transferred),
            v.duration_seconds.p50 === null ? '—' : `${Math.round(v.duration_seconds.p50)} s (n=${v.duration_seconds.samples})`,
            ms(v.latency_e2e_ms),
            v.tests.runs ? pct(v.tests.scenarios) : '—',
            verdicts(v),
          ]),
          { rowHeader: true },
        ),
        h('p', { class: 'note' }, `Rates: ${c.methods.rates}. Durations and latency: ${c.methods.distributions}. A difference counts at p < ${c.methods.alpha}.`),
      );
    },
    (err: unknown) => {
      if (!signal.aborted) body.replaceChildren(problem(err));
    },
  );
  return sec;
}
