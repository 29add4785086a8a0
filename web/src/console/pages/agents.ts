// Agents: the list, and create/edit with a form generated from the API's CreateAgent/UpdateAgent schemas (the one
// definition in schemas/agents.ts, via /openapi.json). Each agent links to "Talk to it" and runs its test suites.
import { api, ApiError } from '../../playground/api.ts';
import { clearFieldErrors, errorSummary, focusHeading, header, href, navigate, notice, problem, showFieldErrors, showNotFound, type PageContext } from '../app.ts';
import { fmtDate, h, table } from '../dom.ts';
import { componentSchema, schemaForm } from '../schema-form.ts';
import type { List } from './calls.ts';
import { comparisonSection, versionsSection } from './agent-versions.ts';

interface Warning {
  code: string;
  message: string;
  field: string | null;
}
interface Agent {
  id: string;
  name: string;
  llm_id: string;
  created_at: string;
  updated_at: string;
  /** Why its calls would fail now (GET /v1/agents/{id}); saved anyway. */
  warnings?: Warning[];
  [k: string]: unknown;
}

/** The agent's warnings, each with the fix in its message, above its settings. */
function warningsBox(warnings: Warning[]): HTMLElement | null {
  if (!warnings.length) return null;
  return h(
    'section',
    { class: 'warning', 'aria-labelledby': 'agent-warnings' },
    h('h2', { id: 'agent-warnings' }, 'Calls to this agent will fail'),
    h(
      'ul',
      null,
      warnings.map((w) => h('li', { 'data-code': w.code }, w.message, w.field ? h('span', { class: 'note' }, ` (${w.field})`) : null)),
    ),
  );
}
interface Run {
  id: string;
  suite_id: string | null;
  status: string;
  total: number;
  passed: number;
  failed: number;
  errored: number;
  created_at: string;
}

export async function agentsPage({ view, signal }: PageContext): Promise<void> {
  view.append(header('Agents', h('a', { class: 'button', href: '#/agents/new' }, 'New agent')));
  focusHeading();
  const list = await api<List<Agent>>('/v1/agents?limit=100', { signal });
  view.append(
    table(
      `${list.total} agents`,
      ['Name', 'Created', 'Updated', 'Actions'],
      list.items.map((a) => [
        h('a', { href: href(`/agents/${a.id}`) }, a.name),
        fmtDate(a.created_at),
        fmtDate(a.updated_at),
        h('a', { href: href(`/agents/${a.id}/talk`) }, `Talk to ${a.name}`),
      ]),
      { rowHeader: true },
    ),
  );
}

export async function agentPage({ view, params: [id], signal }: PageContext): Promise<void> {
  const creating = id === 'new';
  let agent: Agent | null = null;
  if (!creating) {
    try {
      agent = await api<Agent>(`/v1/agents/${encodeURIComponent(id!)}`, { signal });
    } catch (err) {
      if (err instanceof ApiError && (err.status === 404 || err.status === 422)) {
        showNotFound(view, 'Agent not found', new ApiError(404, 'not found'), 'This agent', { href: '#/agents', label: 'Back to the agents' });
        return;
      }
      throw err;
    }
  }
  view.append(
    header(
      creating ? 'New agent' : agent!.name,
      creating ? null : h('a', { class: 'button', href: href(`/agents/${agent!.id}/talk`) }, 'Talk to it'),
      creating ? null : h('a', { class: 'button secondary', href: href('/calls', { agent_id: agent!.id }) }, 'Its calls'),
    ),
  );
  focusHeading();
  const warned = agent?.warnings ? warningsBox(agent.warnings) : null;
  if (warned) view.append(warned);
  const [schema, models, webhooks] = await Promise.all([
    componentSchema(creating ? 'CreateAgent' : 'UpdateAgent'),
    api<List<{ id: string; name: string; model: string }>>('/v1/models?limit=100', { signal }),
    api<List<{ id: string; name: string; url: string }>>('/v1/webhooks', { signal }),
  ]);
  const generated = schemaForm(schema, {
    idPrefix: 'agent',
    current: agent,
    choices: {
      llm_id: models.items.map((m) => ({ value: m.id, label: `${m.name} (${m.model})` })),
      webhook_id: webhooks.items.map((w) => ({ value: w.id, label: `${w.name} (${w.url})` })),
    },
  });
  const status = h('div', { 'aria-live': 'polite' });
  const save = h('button', { type: 'submit' }, creating ? 'Create agent' : 'Save and publish');
  // Drafts are opt-in: the same changes, recorded as a version that calls do not run until it is published.
  const draft = creating ? null : h('button', { type: 'button', class: 'secondary' }, 'Save as draft');
  const form = h(
    'form',
    { novalidate: true, class: 'agent-form', 'aria-label': creating ? 'New agent' : `Settings of ${agent!.name}` },
    errorSummary(),
    generated.element,
    h('div', { class: 'buttons sticky' }, save, draft),
    status,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    status.replaceChildren();
    const body = generated.value();
    if (!creating && !Object.keys(body).length) {
      status.replaceChildren(notice('Nothing changed.'));
      return;
    }
    save.disabled = true;
    void api<Agent>(creating ? '/v1/agents' : `/v1/agents/${agent!.id}`, { method: creating ? 'POST' : 'PATCH', body })
      .then(
        (a) => {
          clearFieldErrors(form);
          if (creating) navigate(`/agents/${a.id}`, { created: '1' });
          else {
            status.replaceChildren(notice('Saved.'));
            void import('../app.ts').then((m) => m.render());
          }
        },
        (err: unknown) => {
          if (!showFieldErrors(form, err)) status.replaceChildren(problem(err));
        },
      )
      .finally(() => (save.disabled = false));
  });
  draft?.addEventListener('click', () => {
    status.replaceChildren();
    const body = generated.value();
    if (!Object.keys(body).length) {
      status.replaceChildren(notice('Nothing changed.'));
      return;
    }
    draft.disabled = true;
    void api<{ version: number }>(`/v1/agents/${agent!.id}/draft`, { method: 'PATCH', body })
      .then(
        (v) => {
          clearFieldErrors(form);
          status.replaceChildren(notice(`Saved as draft version ${v.version}; calls run it once it is published.`));
          void import('../app.ts').then((m) => m.render());
        },
        (err: unknown) => {
          if (!showFieldErrors(form, err)) status.replaceChildren(problem(err));
        },
      )
      .finally(() => (draft.disabled = false));
  });
  if (!creating) {
    const rerender = () => void import('../app.ts').then((m) => m.render());
    view.append(versionsSection(agent!.id, signal, rerender), comparisonSection(agent!.id, signal), testsSection(agent!, signal));
  }
  view.append(h('section', { 'aria-labelledby': 'agent-settings' }, h('h2', { id: 'agent-settings' }, 'Settings'), form));
}

/** "Test it": the agent's test suites (POST /v1/agents/{id}/test-runs) and its recent runs. */
function testsSection(agent: Agent, signal: AbortSignal): HTMLElement {
  const sec = h('section', { 'aria-labelledby': 'agent-tests' }, h('h2', { id: 'agent-tests' }, 'Test it'));
  const body = h('div', { 'aria-live': 'polite' });
  sec.append(body);
  const load = async (): Promise<void> => {
    try {
      const [suites, runs] = await Promise.all([
        api<List<{ id: string; name: string; scenario_ids: string[] }>>(`/v1/test-suites?agent_id=${agent.id}&limit=100`, { signal }),
        api<List<Run>>(`/v1/agents/${agent.id}/test-runs?limit=10`, { signal }),
      ]);
      const suiteName = new Map(suites.items.map((s) => [s.id, s.name]));
      body.replaceChildren(
        ...[
          suites.items.length
            ? h(
                'ul',
                { class: 'plain' },
                suites.items.map((s) =>
                  h(
                    'li',
                    null,
                    `${s.name} (${s.scenario_ids.length} scenarios) `,
                    h(
                      'button',
                      {
                        type: 'button',
                        class: 'small',
                        onclick: () =>
                          void api<Run>(`/v1/agents/${agent.id}/test-runs`, { method: 'POST', body: { suite_id: s.id } }).then(
                            () => void load(),
                            (err: unknown) => body.prepend(problem(err)),
                          ),
                      },
                      `Run ${s.name}`,
                    ),
                  ),
                ),
              )
            : h('p', { class: 'note' }, 'This agent has no test suites yet (POST /v1/test-suites).'),
          runs.items.length
            ? table(
                'Recent test runs',
                ['Started', 'Suite', 'Status', 'Passed', 'Failed', 'Errored'],
                runs.items.map((r) => [
                  fmtDate(r.created_at),
                  r.suite_id ? (suiteName.get(r.suite_id) ?? r.suite_id.slice(0, 8)) : 'scenarios',
                  r.status,
                  String(r.passed),
                  String(r.failed),
                  String(r.errored),
                ]),
              )
            : null,
          runs.items.some((r) => r.status === 'queued' || r.status === 'running')
            ? h('button', { type: 'button', class: 'secondary small', onclick: () => void load() }, 'Refresh runs')
            : null,
        ].filter((x): x is HTMLElement => x !== null),
      );
    } catch (err) {
      if (!signal.aborted) body.replaceChildren(problem(err, () => void load()));
    }
  };
  void load();
  return sec;
}
