// Phone numbers: the list, search and buy, and a number's page with its routing (agent, fallback, voicemail
// message), pause/resume, and release behind a confirmation that names the number.
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
  problem,
  showFieldErrors,
  showNotFound,
  type PageContext,
} from '../app.ts';
import { dash, facts, fmtDate, h, table } from '../dom.ts';
import type { List } from './calls.ts';

interface PhoneNumber {
  id: string;
  phone_number: string;
  friendly_name: string | null;
  provider: string;
  agent_id: string;
  squad_id: string | null;
  status: string;
  inbound_routing: {
    agent_id: string | null;
    squad_id: string | null;
    fallback: { agent_id?: string; squad_id?: string } | null;
    voicemail_message: string | null;
  } | null;
  created_at: string;
}
interface Available {
  phone_number: string;
  locality: string | null;
  region: string | null;
  country: string;
  capabilities: { voice: boolean; sms: boolean };
}
type Agents = List<{ id: string; name: string }>;
type Squads = List<{ id: string; name: string }>;

/**
 * Who answers: an agent or a squad, in one select (the API takes exactly one of `agent_id` and `squad_id`). The
 * option's value is the id; its data-kind says which field it goes in.
 */
const targetSelect = (agents: Agents, squads: Squads, current: { agent_id?: string | null; squad_id?: string | null } | null, path: string, none?: string) => {
  const option = (kind: 'agent' | 'squad', t: { id: string; name: string }) =>
    h('option', { value: t.id, 'data-kind': kind, selected: kind === 'squad' ? t.id === current?.squad_id : !current?.squad_id && t.id === current?.agent_id }, t.name);
  return h(
    'select',
    { 'data-path': path },
    none ? h('option', { value: '' }, none) : null,
    h('optgroup', { label: 'Agents' }, agents.items.map((a) => option('agent', a))),
    squads.items.length ? h('optgroup', { label: 'Squads' }, squads.items.map((q) => option('squad', q))) : null,
  );
};
/** The chosen target as the API's fields; null for the "none" option. */
const targetOf = (select: HTMLSelectElement): { agent_id: string } | { squad_id: string } | null => {
  const o = select.selectedOptions[0];
  if (!o?.value) return null;
  return o.dataset.kind === 'squad' ? { squad_id: o.value } : { agent_id: o.value };
};

const agentSelect = (agents: Agents, current: string | null, path: string, none?: string) =>
  h(
    'select',
    { 'data-path': path },
    none ? h('option', { value: '' }, none) : null,
    agents.items.map((a) => h('option', { value: a.id, selected: a.id === current }, a.name)),
  );

export async function numbersPage({ view, query, signal }: PageContext): Promise<void> {
  view.append(header('Phone numbers'));
  focusHeading();
  const [list, agents] = await Promise.all([
    api<List<PhoneNumber>>('/v1/phone-numbers?limit=100', { signal }),
    api<Agents>('/v1/agents?limit=100', { signal }),
  ]);
  const agentName = new Map(agents.items.map((a) => [a.id, a.name]));
  view.append(
    table(
      `${list.total} numbers`,
      ['Number', 'Name', 'Agent', 'Status', 'Bought'],
      list.items.map((n) => [
        h('a', { href: href(`/numbers/${n.id}`) }, n.phone_number),
        dash(n.friendly_name),
        agentName.get(n.inbound_routing?.agent_id ?? n.agent_id) ?? n.agent_id.slice(0, 8),
        n.status,
        fmtDate(n.created_at),
      ]),
      { rowHeader: true },
    ),
  );

  // Search and buy.
  const country = h('input', { type: 'text', value: query.get('country') ?? 'US', maxlength: 2, autocomplete: 'off', 'data-path': 'country' });
  const area = h('input', { type: 'text', inputmode: 'numeric', value: query.get('area_code') ?? '', autocomplete: 'off', 'data-path': 'area_code' });
  const contains = h('input', { type: 'text', value: query.get('contains') ?? '', autocomplete: 'off', 'data-path': 'contains' });
  const buyAgent = agentSelect(agents, null, 'agent_id');
  const results = h('div', { 'aria-live': 'polite' });
  const form = h(
    'form',
    { novalidate: true, class: 'filters', 'aria-label': 'Search numbers' },
    errorSummary(),
    field('n-country', 'Country', country, 'ISO code, such as US or GB'),
    field('n-area', 'Area code', area, 'US and CA only'),
    field('n-contains', 'Contains', contains, 'Digits, or letters by their keypad digit'),
    field('n-agent', 'Agent that answers', buyAgent),
    h('div', { class: 'buttons' }, h('button', { type: 'submit' }, 'Search')),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams({ country: country.value.trim() });
    if (area.value.trim()) q.set('area_code', area.value.trim());
    if (contains.value.trim()) q.set('contains', contains.value.trim());
    results.replaceChildren(h('p', { class: 'note' }, 'Searching…'));
    void api<{ items: Available[] }>(`/v1/phone-numbers/search?${q}`).then(
      (r) => {
        clearFieldErrors(form);
        results.replaceChildren(
          table(
            'Available now (not reserved)',
            ['Number', 'Place', 'Voice / SMS', 'Buy'],
            r.items.map((a) => [
              a.phone_number,
              [a.locality, a.region, a.country].filter(Boolean).join(', '),
              `${a.capabilities.voice ? 'voice' : ''}${a.capabilities.sms ? ' sms' : ''}`,
              h(
                'button',
                {
                  type: 'button',
                  class: 'small',
                  onclick: (ev: Event) => {
                    const b = ev.currentTarget as HTMLButtonElement;
                    b.disabled = true;
                    void api<PhoneNumber>('/v1/phone-numbers', { method: 'POST', body: { phone_number: a.phone_number, agent_id: buyAgent.value } }).then(
                      (n) => navigate(`/numbers/${n.id}`),
                      (err: unknown) => {
                        b.disabled = false;
                        results.prepend(problem(err));
                      },
                    );
                  },
                },
                `Buy ${a.phone_number}`,
              ),
            ]),
            { rowHeader: true },
          ),
        );
      },
      (err: unknown) => {
        if (showFieldErrors(form, err)) results.replaceChildren();
        else results.replaceChildren(problem(err));
      },
    );
  });
  view.append(h('section', { 'aria-labelledby': 'n-buy' }, h('h2', { id: 'n-buy' }, 'Search and buy'), form, results));
}

export async function numberPage({ view, params: [id], signal }: PageContext): Promise<void> {
  let n: PhoneNumber;
  try {
    n = await api<PhoneNumber>(`/v1/phone-numbers/${encodeURIComponent(id!)}`, { signal });
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      showNotFound(view, 'Number not found', err, 'This number', { href: '#/numbers', label: 'Back to the numbers' });
      return;
    }
    throw err;
  }
  const [agents, squads] = await Promise.all([api<Agents>('/v1/agents?limit=100', { signal }), api<Squads>('/v1/squads?limit=100', { signal })]);
  view.append(header(n.phone_number, h('a', { class: 'button secondary', href: href('/calls', { phone_number_id: n.id }) }, 'Its calls')));
  focusHeading();
  view.append(
    facts([
      ['Name', dash(n.friendly_name)],
      ['Carrier', n.provider],
      ['Status', n.status],
      ['Bought', fmtDate(n.created_at)],
    ]),
  );
  const r = n.inbound_routing;
  // The routing's own target, else the number's (a squad's number also shows its entry agent in agent_id).
  const answers = targetSelect(agents, squads, r?.agent_id || r?.squad_id ? r : { agent_id: n.agent_id, squad_id: n.squad_id }, 'agent_id');
  const fallback = targetSelect(agents, squads, r?.fallback ?? null, 'fallback.agent_id', 'No fallback');
  const voicemail = h('textarea', { rows: 2, 'data-path': 'voicemail_message' });
  voicemail.value = r?.voicemail_message ?? '';
  const status = h('div', { 'aria-live': 'polite' });
  const form = h(
    'form',
    { novalidate: true, 'aria-label': 'Routing' },
    errorSummary(),
    field('r-agent', 'Answered by', answers, 'An agent, or a squad (its entry agent answers and hands off within the call)'),
    field(
      'r-fallback',
      'Fallback',
      fallback,
      'An agent or a squad that answers when the primary one has been deleted, or the organisation is at its daily or concurrent call limit',
    ),
    field('r-voicemail', 'Voicemail message', voicemail, 'Left when voicemail is detected on an inbound call; empty for none'),
    h('div', { class: 'buttons' }, h('button', { type: 'submit' }, 'Save routing')),
    status,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    // A notice of an earlier save would say this one is done before it is.
    status.replaceChildren();
    // One target each: the other field is cleared (null), as the API's exactly-one rule wants.
    const target = targetOf(answers);
    const body = {
      agent_id: target && 'agent_id' in target ? target.agent_id : null,
      squad_id: target && 'squad_id' in target ? target.squad_id : null,
      fallback: targetOf(fallback),
      voicemail_message: voicemail.value.trim() || null,
    };
    void api(`/v1/phone-numbers/${n.id}/inbound-routing`, { method: 'PATCH', body }).then(
      () => {
        clearFieldErrors(form);
        status.replaceChildren(notice('Routing saved.'));
      },
      (err: unknown) => {
        if (!showFieldErrors(form, err)) status.replaceChildren(problem(err));
      },
    );
  });
  const paused = n.status === 'inactive';
  const actions = h('div', { 'aria-live': 'polite' });
  view.append(
    h('section', { 'aria-labelledby': 'r-title' }, h('h2', { id: 'r-title' }, 'Routing and fallback'), form),
    h(
      'section',
      { 'aria-labelledby': 'n-manage' },
      h('h2', { id: 'n-manage' }, 'Manage'),
      h(
        'div',
        { class: 'buttons' },
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            onclick: () =>
              void api(`/v1/phone-numbers/${n.id}`, { method: 'PATCH', body: { status: paused ? 'active' : 'inactive' } }).then(
                () => navigate(`/numbers/${n.id}`),
                (err: unknown) => actions.replaceChildren(problem(err)),
              ),
          },
          paused ? 'Resume taking calls' : 'Pause (reject calls)',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            onclick: () =>
              void confirmDialog(
                `Release ${n.phone_number}?`,
                `${n.phone_number} stops taking calls at once and goes back to the carrier; you may not get it back. Its calls stay readable.`,
                `Release ${n.phone_number}`,
              ).then((ok) => {
                if (!ok) return;
                void api(`/v1/phone-numbers/${n.id}`, { method: 'DELETE' }).then(
                  () => navigate('/numbers', { released: n.phone_number }),
                  (err: unknown) => actions.replaceChildren(problem(err)),
                );
              }),
          },
          'Release this number',
        ),
      ),
      actions,
    ),
  );
}
