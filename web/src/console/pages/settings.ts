// Settings: API keys (create, shown once, revoke) and publishable keys (create, listed whole: they are public, revoke),
// integrations (masked by the API), and the
// workspace's limits (read-only: the platform operator sets them).
import { api } from '../../playground/api.ts';
import { clearFieldErrors, confirmDialog, errorSummary, field, focusHeading, header, notice, problem, showFieldErrors, type PageContext } from '../app.ts';
import { dash, facts, fmtDate, h, table } from '../dom.ts';
import type { List } from './calls.ts';
import { secretOnce } from './webhooks.ts';

interface ApiKey {
  id: string;
  name: string;
  masked_key: string;
  expires_at: string | null;
  last_used_at: string | null;
  created_at: string;
  key?: string;
}
interface PublishableKey {
  id: string;
  name: string;
  key: string;
  is_active: boolean;
  allowed_origins: string[];
  scopes: string[];
  revoked_at: string | null;
  created_at: string;
}

export async function settingsPage({ view, signal }: PageContext): Promise<void> {
  view.append(header('Settings'));
  focusHeading();
  const [keys, pks, integrations, ws] = await Promise.all([
    api<List<ApiKey>>('/v1/api-keys?limit=100', { signal }),
    api<List<PublishableKey>>('/v1/publishable-keys?limit=100', { signal }),
    api<List<{ id: string; name: string; provider: string; masked_key: string; created_at: string }>>('/v1/integrations?limit=100', { signal }),
    api<{ name: string; limits: Record<string, number>; settings: Record<string, unknown> }>('/v1/workspace', { signal }),
  ]);
  const rerender = () => void import('../app.ts').then((m) => m.render());
  // A revocation changes its own row only: re-rendering the page would replace the forms, and with them whatever
  // is being typed into them meanwhile.
  const revokeButton = (label: string, what: string, path: string, msg: HTMLElement, onRevoked: (row: HTMLTableRowElement) => void) => {
    const button: HTMLButtonElement = h(
      'button',
      {
        type: 'button',
        class: 'danger small',
        'aria-label': `Revoke ${label}`,
        onclick: () =>
          void confirmDialog(
            `Revoke ${label}?`,
            `${what} "${label}" stops working at once, everywhere it is used. This cannot be undone.`,
            `Revoke ${label}`,
          ).then((ok) => {
            if (ok)
              void api(path, { method: 'DELETE' }).then(
                () => {
                  const row = button.closest('tr');
                  if (row) onRevoked(row);
                  msg.replaceChildren(notice(`${what} "${label}" is revoked.`));
                  // The button is gone with its row: focus goes to the page's heading, as after a re-render.
                  focusHeading();
                },
                (err: unknown) => msg.replaceChildren(problem(err)),
              );
          }),
      },
      'Revoke',
    );
    return button;
  };

  // API keys.
  const kMsg = h('div', { 'aria-live': 'polite' });
  const kName = h('input', { type: 'text', autocomplete: 'off', 'data-path': 'name' });
  const kForm = h(
    'form',
    { novalidate: true, 'aria-label': 'New API key' },
    errorSummary(),
    field('k-name', 'Name', kName),
    h('div', { class: 'buttons' }, h('button', { type: 'submit' }, 'Create API key')),
  );
  kForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void api<ApiKey>('/v1/api-keys', { method: 'POST', body: { name: kName.value.trim() } }).then(
      (k) => {
        clearFieldErrors(kForm);
        kForm.reset();
        kMsg.replaceChildren(secretOnce(k.key!, '/settings', 'API key'));
        kMsg.querySelector<HTMLElement>('output')?.focus();
      },
      (err: unknown) => {
        if (!showFieldErrors(kForm, err)) kMsg.replaceChildren(problem(err));
      },
    );
  });
  view.append(
    h(
      'section',
      { 'aria-labelledby': 'set-keys' },
      h('h2', { id: 'set-keys' }, 'API keys'),
      table(
        'Secret API keys',
        ['Name', 'Key', 'Created', 'Last used', 'Expires', 'Revoke'],
        keys.items.map((k) => [
          k.name,
          h('code', null, k.masked_key),
          fmtDate(k.created_at),
          fmtDate(k.last_used_at),
          fmtDate(k.expires_at),
          // The list leaves revoked API keys out.
          revokeButton(k.name, 'The API key', `/v1/api-keys/${k.id}`, kMsg, (row) => row.remove()),
        ]),
        { rowHeader: true, captionHidden: true },
      ),
      kMsg,
      kForm,
    ),
  );

  // Publishable keys.
  const pMsg = h('div', { 'aria-live': 'polite' });
  const pName = h('input', { type: 'text', autocomplete: 'off', 'data-path': 'name' });
  const pOrigins = h('input', { type: 'text', autocomplete: 'off', 'data-path': 'allowed_origins', placeholder: 'https://www.example.com' });
  const scopes = ['calls:web', 'voices:read'].map((sc) =>
    h('input', { type: 'checkbox', value: sc, checked: sc === 'calls:web', id: `p-scope-${sc.replace(':', '-')}` }),
  );
  const pForm = h(
    'form',
    { novalidate: true, 'aria-label': 'New publishable key' },
    errorSummary(),
    field('p-name', 'Name', pName),
    field('p-origins', 'Allowed origins', pOrigins, 'Comma-separated origins the key may be used from'),
    h(
      'fieldset',
      { 'data-path': 'scopes', tabindex: -1, id: 'p-scopes' },
      h('legend', null, 'Scopes'),
      scopes.map((c) => h('div', { class: 'check' }, c, h('label', { for: c.id }, c.value))),
    ),
    h('div', { class: 'buttons' }, h('button', { type: 'submit' }, 'Create publishable key')),
  );
  pForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body = {
      name: pName.value.trim(),
      allowed_origins: pOrigins.value
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean),
      scopes: scopes.filter((c) => c.checked).map((c) => c.value),
    };
    void api<PublishableKey>('/v1/publishable-keys', { method: 'POST', body }).then(
      (k) => {
        clearFieldErrors(pForm);
        pMsg.replaceChildren(notice(`Publishable key "${k.name}" created: ${k.key}. It is meant for browsers and can be read again here.`));
        rerender();
      },
      (err: unknown) => {
        if (!showFieldErrors(pForm, err)) pMsg.replaceChildren(problem(err));
      },
    );
  });
  view.append(
    h(
      'section',
      { 'aria-labelledby': 'set-pks' },
      h('h2', { id: 'set-pks' }, 'Publishable keys'),
      table(
        'Publishable keys',
        ['Name', 'Key', 'Origins', 'Scopes', 'State', 'Revoke'],
        pks.items.map((k) => [
          k.name,
          h('code', null, k.key),
          k.allowed_origins.join(', '),
          k.scopes.join(', '),
          k.revoked_at ? 'revoked' : k.is_active ? 'active' : 'paused',
          k.revoked_at
            ? '—'
            : revokeButton(k.name, 'The publishable key', `/v1/publishable-keys/${k.id}`, pMsg, (row) => {
                // As the list shows a revoked key: its state, and no button.
                row.cells[4]?.replaceChildren('revoked');
                row.cells[5]?.replaceChildren('—');
              }),
        ]),
        { rowHeader: true, captionHidden: true },
      ),
      pMsg,
      pForm,
    ),
  );

  view.append(
    h(
      'section',
      { 'aria-labelledby': 'set-int' },
      h('h2', { id: 'set-int' }, 'Integrations'),
      h('p', { class: 'note' }, 'Provider keys are stored encrypted and never shown again; only their last characters are.'),
      table(
        'Integrations',
        ['Name', 'Provider', 'Key', 'Added'],
        integrations.items.map((i) => [i.name, i.provider, h('code', null, i.masked_key), fmtDate(i.created_at)]),
        { rowHeader: true, captionHidden: true },
      ),
    ),
    h(
      'section',
      { 'aria-labelledby': 'set-limits' },
      h('h2', { id: 'set-limits' }, `Workspace limits: ${ws.name}`),
      h('p', { class: 'note' }, 'Set by the platform operator; read-only here.'),
      facts(Object.entries(ws.limits).map(([k, v]) => [k.replace(/_/g, ' '), dash(v)])),
    ),
  );
}
