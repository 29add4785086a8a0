// Webhooks: the endpoints, and an endpoint's page: pause and resume, send a test, rotate the secret (shown once),
// and its deliveries with request and response, paginated on the server, each with a retry.
import { api, ApiError } from '../../playground/api.ts';
import {
  clearFieldErrors,
  confirmDialog,
  errorSummary,
  field,
  focusHeading,
  header,
  href,
  navigate,
  notice,
  pager,
  problem,
  showFieldErrors,
  showNotFound,
  type PageContext,
} from '../app.ts';
import { facts, fmtDate, h, table } from '../dom.ts';
import type { List } from './calls.ts';
import { deliveryTable } from './deliveries.ts';

interface Webhook {
  id: string;
  name: string;
  url: string;
  events: string[];
  status: 'active' | 'inactive';
  disabled_reason: string | null;
  failing_since: string | null;
  created_at: string;
  secret?: string;
}

export async function webhooksPage({ view, signal }: PageContext): Promise<void> {
  view.append(header('Webhooks'));
  focusHeading();
  const list = await api<List<Webhook>>('/v1/webhooks', { signal });
  view.append(
    table(
      `${list.total} endpoints`,
      ['Name', 'URL', 'Events', 'Status'],
      list.items.map((w) => [
        h('a', { href: href(`/webhooks/${w.id}`) }, w.name),
        w.url,
        w.events.join(', '),
        `${w.status === 'active' ? 'active' : 'paused'}${w.disabled_reason ? ` (${w.disabled_reason})` : ''}${w.failing_since ? `, failing since ${fmtDate(w.failing_since)}` : ''}`,
      ]),
      { rowHeader: true },
    ),
  );
  const name = h('input', { type: 'text', autocomplete: 'off', 'data-path': 'name' });
  const url = h('input', { type: 'url', autocomplete: 'off', 'data-path': 'url' });
  const events = h('input', { type: 'text', value: '*', autocomplete: 'off', 'data-path': 'events' });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h(
    'form',
    { novalidate: true, 'aria-label': 'New endpoint' },
    errorSummary(),
    field('w-name', 'Name', name),
    field('w-url', 'URL', url, 'Must reach a public address'),
    field('w-events', 'Events', events, 'Comma-separated, such as call.ended, call.analyzed; * for every event'),
    h('div', { class: 'buttons' }, h('button', { type: 'submit' }, 'Add endpoint')),
    status,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body = {
      name: name.value.trim(),
      url: url.value.trim(),
      events: events.value
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean),
    };
    void api<Webhook>('/v1/webhooks', { method: 'POST', body }).then(
      (w) => {
        clearFieldErrors(form);
        view.replaceChildren(header('Endpoint added'), secretOnce(w.secret!, `/webhooks/${w.id}`));
        view.querySelector('h1')?.focus();
      },
      (err: unknown) => {
        if (!showFieldErrors(form, err)) status.replaceChildren(problem(err));
      },
    );
  });
  view.append(h('section', { 'aria-labelledby': 'w-new' }, h('h2', { id: 'w-new' }, 'Add an endpoint'), form));
}

/** A secret shown once, with where to go next. */
export function secretOnce(secret: string, next: string, what = 'signing secret'): HTMLElement {
  const out = h('output', { class: 'secret', tabindex: 0, 'aria-label': `The new ${what}` }, secret);
  return h(
    'div',
    { class: 'once', role: 'status' },
    h('p', null, `This is the only time the ${what} is shown. Copy it now.`),
    out,
    h('p', null, h('button', { type: 'button', onclick: () => navigate(next) }, 'Done, I copied it')),
  );
}

const DPAGE = 20;

export async function webhookPage({ view, params: [id], query, signal }: PageContext): Promise<void> {
  let w: Webhook;
  try {
    w = await api<Webhook>(`/v1/webhooks/${encodeURIComponent(id!)}`, { signal });
  } catch (err) {
    if (err instanceof ApiError && (err.status === 404 || err.status === 422)) {
      showNotFound(view, 'Endpoint not found', new ApiError(404, ''), 'This endpoint', { href: '#/webhooks', label: 'Back to the webhooks' });
      return;
    }
    throw err;
  }
  view.append(header(w.name, h('a', { class: 'button secondary', href: '#/webhooks' }, 'All endpoints')));
  focusHeading();
  view.append(
    facts([
      ['URL', w.url],
      ['Events', w.events.join(', ')],
      ['Status', `${w.status === 'active' ? 'active' : 'paused'}${w.disabled_reason ? ` (disabled by the platform: ${w.disabled_reason})` : ''}`],
      ['Failing since', fmtDate(w.failing_since)],
    ]),
  );
  const msg = h('div', { 'aria-live': 'polite' });
  const act = (label: string, cls: string, run: () => Promise<void>) =>
    h(
      'button',
      {
        type: 'button',
        class: cls,
        onclick: (ev: Event) => {
          const b = ev.currentTarget as HTMLButtonElement;
          b.disabled = true;
          void run()
            .catch((err: unknown) => msg.replaceChildren(problem(err)))
            .finally(() => (b.disabled = false));
        },
      },
      label,
    );
  view.append(
    h(
      'section',
      { 'aria-labelledby': 'w-actions' },
      h('h2', { id: 'w-actions' }, 'Actions'),
      h(
        'div',
        { class: 'buttons' },
        act(w.status === 'active' ? 'Pause deliveries' : 'Resume deliveries', 'secondary', async () => {
          await api(`/v1/webhooks/${w.id}`, { method: 'PATCH', body: { status: w.status === 'active' ? 'inactive' : 'active' } });
          navigate(`/webhooks/${w.id}`);
        }),
        act('Send a test', 'secondary', async () => {
          const d = await api<{ status: string; response_status: number | null; error: string | null }>(`/v1/webhooks/${w.id}/test`, { method: 'POST' });
          msg.replaceChildren(
            notice(`Test sent: ${d.status}${d.response_status ? `, the endpoint answered ${d.response_status}` : ''}${d.error ? ` (${d.error})` : ''}.`),
          );
          await loadDeliveries(0);
        }),
        act('Rotate the secret', 'secondary', async () => {
          if (
            !(await confirmDialog(
              'Rotate the signing secret?',
              `A new secret signs deliveries to ${w.url}; for 24 hours the old one signs too, so the receiver can switch over.`,
              'Rotate secret',
            ))
          )
            return;
          const r = await api<Webhook>(`/v1/webhooks/${w.id}/rotate-secret`, { method: 'POST' });
          msg.replaceChildren(secretOnce(r.secret!, `/webhooks/${w.id}`));
          msg.querySelector<HTMLElement>('output')?.focus();
        }),
        act('Delete', 'danger', async () => {
          if (!(await confirmDialog(`Delete ${w.name}?`, `Deliveries to ${w.url} stop and the endpoint is removed.`, `Delete ${w.name}`))) return;
          await api(`/v1/webhooks/${w.id}`, { method: 'DELETE' });
          navigate('/webhooks');
        }),
      ),
      msg,
    ),
  );
  const deliveries = h('div');
  view.append(h('section', { 'aria-labelledby': 'w-deliveries' }, h('h2', { id: 'w-deliveries' }, 'Deliveries'), deliveries));
  const loadDeliveries = async (offset: number): Promise<void> => {
    try {
      const list = await api<List<Parameters<typeof deliveryTable>[0][number]>>(`/v1/webhooks/${w.id}/deliveries?limit=${DPAGE}&offset=${offset}`, { signal });
      deliveries.replaceChildren(
        deliveryTable(list.items, () => void loadDeliveries(offset)),
        pager(list.total, DPAGE, offset, (o) => void loadDeliveries(o), 'Deliveries'),
      );
    } catch (err) {
      if (!signal.aborted) deliveries.replaceChildren(problem(err, () => void loadDeliveries(offset)));
    }
  };
  await loadDeliveries(Math.max(0, Number(query.get('offset')) || 0));
}
