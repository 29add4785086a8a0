// Calls: the list with filters and server-side pagination (the filters travel in the address, so a filtered list
// can be shared and the back button works), and a call's page: transcript with timestamps, the recording synced
// to it, the per-turn waterfall, tool calls, the analysis and editable outcome, and the call's webhook deliveries.
import { api, ApiError } from '../../playground/api.ts';
import {
  clearFieldErrors,
  errorSummary,
  field,
  focusHeading,
  header,
  href,
  navigate,
  render,
  notice,
  pager,
  problem,
  showFieldErrors,
  showNotFound,
  type PageContext,
} from '../app.ts';
import { clock, dash, facts, fmtDate, h, table } from '../dom.ts';

import type { Call, List, Message } from './call-types.ts';
import { type Delivery, deliveryTable } from './deliveries.ts';
import { waterfall } from './call-waterfall.ts';
import { liveView, type LiveCall } from './call-live.ts';

export type { Call, List } from './call-types.ts';

interface Named {
  id: string;
  name?: string;
  phone_number?: string;
}
/** Why a call ran its agent version (the call's agent_version_source). */
const VERSION_SOURCE: Record<string, string> = {
  published: 'the published version',
  split: "the traffic split's version",
  pinned: 'pinned by its number, campaign or request',
};

const PAGE = 25;
const FILTERS = ['status', 'type', 'agent_id', 'phone_number_id', 'outcome', 'q', 'from', 'to'] as const;

export async function callsPage({ view, query, signal }: PageContext): Promise<void> {
  view.append(header('Calls'));
  focusHeading();
  const [agents, numbers] = await Promise.all([
    api<List<Named>>('/v1/agents?limit=100', { signal }),
    api<List<Named>>('/v1/phone-numbers?limit=100', { signal }).catch(() => ({ items: [] }) as unknown as List<Named>),
  ]);
  const agentName = new Map(agents.items.map((a) => [a.id, a.name ?? a.id]));
  const opt = (v: string, label: string, cur: string | null) => h('option', { value: v, selected: v === (cur ?? '') }, label);
  const sel = (name: string, options: [string, string][]) =>
    h(
      'select',
      { name },
      opt('', 'Any', null),
      options.map(([v, l]) => opt(v, l, query.get(name))),
    );
  const input = (name: string, type = 'text') => h('input', { name, type, value: query.get(name) ?? '', autocomplete: 'off' });
  const form = h(
    'form',
    { class: 'filters', novalidate: true, 'aria-label': 'Filter calls' },
    errorSummary(),
    field('f-q', 'Text in the transcript', input('q', 'search')),
    field(
      'f-status',
      'Status',
      sel(
        'status',
        ['queued', 'initiated', 'in_progress', 'completed', 'failed'].map((x) => [x, x]),
      ),
    ),
    field(
      'f-type',
      'Type',
      sel(
        'type',
        ['web', 'inbound', 'outbound'].map((x) => [x, x]),
      ),
    ),
    field(
      'f-agent',
      'Agent',
      sel(
        'agent_id',
        agents.items.map((a) => [a.id, a.name ?? a.id]),
      ),
    ),
    field(
      'f-number',
      'Number',
      sel(
        'phone_number_id',
        numbers.items.map((n) => [n.id, n.phone_number ?? n.id]),
      ),
    ),
    field('f-outcome', 'Outcome', input('outcome')),
    field('f-from', 'From (date)', input('from', 'date')),
    field('f-to', 'To (date, inclusive)', input('to', 'date')),
    h('div', { class: 'buttons' }, h('button', { type: 'submit' }, 'Apply filters'), h('a', { class: 'button secondary', href: '#/calls' }, 'Clear')),
  );
  for (const el of form.querySelectorAll<HTMLElement>('[name]')) el.dataset.path = el.getAttribute('name')!;
  form.querySelector('[name=from]')!.setAttribute('data-path', 'created_after');
  form.querySelector('[name=to]')!.setAttribute('data-path', 'created_before');
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    navigate('/calls', Object.fromEntries(FILTERS.map((k) => [k, String(data.get(k) ?? '')])));
  });
  const results = h('div', { id: 'call-results', 'aria-live': 'polite' });
  view.append(form, results);

  const params = new URLSearchParams();
  for (const k of ['status', 'type', 'agent_id', 'phone_number_id', 'outcome', 'q']) if (query.get(k)) params.set(k, query.get(k)!);
  if (query.get('from')) params.set('created_after', new Date(`${query.get('from')}T00:00:00Z`).toISOString());
  if (query.get('to')) params.set('created_before', new Date(new Date(`${query.get('to')}T00:00:00Z`).getTime() + 86_400_000).toISOString());
  params.set('limit', String(PAGE));

  const load = async (offset: number): Promise<void> => {
    params.set('offset', String(offset));
    results.setAttribute('aria-busy', 'true');
    try {
      const list = await api<List<Call>>(`/v1/calls?${params}`, { signal });
      clearFieldErrors(form);
      results.replaceChildren(
        table(
          'Calls, newest first',
          ['Created', 'Type', 'Status', 'Agent', 'From / to', 'Duration', 'Outcome'],
          list.items.map((c) => [
            h('a', { href: href(`/calls/${c.id}`) }, fmtDate(c.created_at)),
            c.type,
            h('span', { class: `status s-${c.status}` }, c.status),
            agentName.get(c.agent_id) ?? c.agent_id.slice(0, 8),
            [c.from_number, c.to_number].filter(Boolean).join(' → ') || '—',
            c.duration_seconds === null ? '—' : clock(c.duration_seconds),
            dash(c.outcome ?? c.analysis.outcome),
          ]),
          { captionHidden: false },
        ),
        pager(list.total, PAGE, offset, (o) => void load(o).then(() => results.querySelector<HTMLElement>('.pager button:not([disabled])')?.focus()), 'Calls'),
      );
    } catch (err) {
      if (signal.aborted || (err instanceof ApiError && err.status === 401)) return;
      if (showFieldErrors(form, err)) results.replaceChildren();
      else results.replaceChildren(problem(err, () => void load(offset)));
      results.querySelector<HTMLElement>('.problem button')?.focus();
    } finally {
      results.removeAttribute('aria-busy');
    }
  };
  await load(Math.max(0, Number(query.get('offset')) || 0));
}

const once = (el: HTMLMediaElement, ev: string) => new Promise<void>((resolve) => el.addEventListener(ev, () => resolve(), { once: true }));

/**
 * Plays the recording from `at` seconds. Recordings are served with byte ranges, so the player seeks by asking
 * for the part it needs. A server without them (an older control plane) cannot be seeked by every browser
 * (Chromium restarts it from 0), so when the position is not seekable the file is fetched once and played from
 * memory (a blob: URL, which the policy allows), where every position is.
 */
async function playFrom(audio: HTMLAudioElement, url: string, at: number): Promise<void> {
  if (audio.readyState < 1) {
    audio.preload = 'auto';
    audio.load();
    await once(audio, 'loadedmetadata');
  }
  const seekable = () => [...Array(audio.seekable.length).keys()].some((i) => audio.seekable.start(i) <= at && at <= audio.seekable.end(i));
  if (!seekable() && !audio.src.startsWith('blob:')) {
    try {
      const res = await fetch(url, { credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' });
      if (res.ok) {
        audio.src = URL.createObjectURL(await res.blob());
        await once(audio, 'loadedmetadata');
      }
    } catch {
      // A recording on another origin (S3) cannot be fetched under the policy: seek as well as the browser can.
    }
  }
  audio.currentTime = at;
  await audio.play().catch(() => {});
}

/** Why a failed call never connected, for the calls the platform records no `error` for (carrier answers, limits). */
const FAILED_BECAUSE: Record<string, string> = {
  busy: "The callee's line was busy.",
  no_answer: 'Nobody answered before the ring timeout.',
  rejected: 'The callee or their carrier refused the call.',
  invalid_number: 'The number does not exist, or cannot be called.',
  carrier_error: 'The carrier could not place the call.',
  destination_not_allowed: "The workspace's destination policy does not allow calls to this number.",
  do_not_call: "The number is on the organisation's do-not-call list.",
  daily_spend_cap: 'The organisation reached its daily spend cap (daily_spend_cap_cents).',
  concurrency_limit: 'The organisation stayed at max_concurrent_calls until the call gave up waiting.',
  from_number_unavailable: 'The number the call was to come from was released or deactivated.',
  dial_interrupted: 'The process dialling the call stopped, and the call could not be followed.',
};

/** A failed call's page opens with why it failed: the platform's own words (`error`), else its end reason's. */
function failureBox(call: Call): HTMLElement | null {
  if (call.status !== 'failed') return null;
  const why = call.error?.message ?? FAILED_BECAUSE[call.end_reason ?? ''] ?? `The call never connected (end reason ${call.end_reason ?? 'unknown'}).`;
  return h(
    'section',
    { class: 'problem', 'aria-labelledby': 'call-failure' },
    h('h2', { id: 'call-failure' }, 'Why this call failed'),
    h('p', { 'data-testid': 'call-failure' }, why),
    call.error ? h('p', { class: 'note' }, `Code: ${call.error.code} (end reason ${call.end_reason ?? '—'}).`) : null,
  );
}

/** Seconds from the call's start to a message's start, when the worker reported message times. */
function offsetOf(call: Call, m: Message): number | null {
  const base = call.started_at ?? call.messages?.find((x) => x.started_at)?.started_at;
  if (!m.started_at || !base) return null;
  return Math.max(0, (Date.parse(m.started_at) - Date.parse(base)) / 1000);
}

export async function callPage({ view, params: [id], signal }: PageContext): Promise<void> {
  let call: LiveCall;
  try {
    call = await api<LiveCall>(`/v1/calls/${encodeURIComponent(id!)}`, { signal });
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      showNotFound(view, 'Call not found', err, 'This call', { href: '#/calls', label: 'Back to the calls' });
      return;
    }
    throw err;
  }
  view.append(header(`Call ${call.id.slice(0, 8)}`, h('a', { class: 'button secondary', href: '#/calls' }, 'All calls')));
  focusHeading();
  view.append(
    facts([
      ['ID', call.id],
      ['Status', call.status],
      ['Type', call.type],
      ['Agent', h('a', { href: href(`/agents/${call.agent_id}`) }, call.agent_id)],
      [
        'Agent version',
        call.agent_version == null
          ? '— (the call never reached an agent session)'
          : [
              h('a', { href: href(`/agents/${call.agent_id}`, { version: call.agent_version }) }, `Version ${call.agent_version}`),
              ` (${VERSION_SOURCE[call.agent_version_source ?? 'published'] ?? call.agent_version_source})`,
            ],
      ],
      ['From / to', [call.from_number, call.to_number].filter(Boolean).join(' → ') || '—'],
      ['Created', fmtDate(call.created_at)],
      ['Duration', call.duration_seconds === null ? '—' : clock(call.duration_seconds)],
      ['End reason', dash(call.end_reason)],
    ]),
  );
  const failure = failureBox(call);
  if (failure) view.append(failure);
  // A call in progress: its live view, until it ends and the page renders again as the completed call's.
  if (call.status === 'in_progress') {
    view.append(liveView(call, { signal, onEnded: () => void render() }));
    return;
  }

  // Recording and transcript, synchronised: a line is a button that seeks the player to where it was said.
  const messages = (call.messages ?? []).filter((m) => !m.tool_call);
  const audio = call.recording_url ? h('audio', { controls: true, preload: 'metadata', src: call.recording_url, 'aria-label': 'Call recording' }) : null;
  const lines = messages.map((m) => {
    const at = offsetOf(call, m);
    const who = m.role === 'agent' ? 'Agent' : 'Caller';
    const body = [
      h('span', { class: 'ts' }, at === null ? '—' : clock(at)),
      h('span', { class: 'speaker' }, `${who}: `),
      m.content,
      m.interrupted ? h('span', { class: 'note' }, ' (interrupted)') : null,
    ];
    const li = h('li', { class: m.role, 'data-at': at ?? '' });
    if (audio && at !== null) {
      li.append(
        h(
          'button',
          { type: 'button', class: 'line', onclick: () => void playFrom(audio, call.recording_url!, at) },
          h('span', { class: 'sr-only' }, 'Play from '),
          body,
        ),
      );
    } else li.append(...body.filter((x) => x !== null));
    return li;
  });
  const transcript = h('ol', { class: 'transcript', 'aria-labelledby': 'call-transcript' }, lines);
  if (audio) {
    // The line being heard is marked as it plays.
    audio.addEventListener('timeupdate', () => {
      let current: HTMLElement | null = null;
      for (const li of lines) if (li.dataset.at !== '' && Number(li.dataset.at) <= audio.currentTime) current = li;
      for (const li of lines) li.classList.toggle('playing', li === current);
    });
  }
  view.append(
    h(
      'section',
      { 'aria-labelledby': 'call-conv' },
      h('h2', { id: 'call-conv' }, 'Conversation'),
      h('h3', null, 'Recording'),
      audio ??
        h(
          'p',
          { class: 'note' },
          call.status === 'completed'
            ? 'This call has no recording (recording was off, or the agent keeps no content).'
            : call.status === 'failed'
              ? 'No recording: the call never connected.'
              : 'The recording appears when the call has ended.',
        ),
      h('h3', { id: 'call-transcript' }, 'Transcript'),
      messages.length
        ? transcript
        : h(
            'p',
            { class: 'note' },
            call.status === 'failed'
              ? 'Nothing was said: the call never connected.'
              : call.messages
                ? 'Nothing was said.'
                : 'The transcript appears when the call has ended.',
          ),
      audio && lines.length ? h('p', { class: 'note' }, 'Choose a line to play the recording from there.') : null,
    ),
  );
  view.append(waterfall(call));

  const tools = (call.messages ?? []).filter((m) => m.tool_call);
  view.append(
    h(
      'section',
      { 'aria-labelledby': 'call-tools' },
      h('h2', { id: 'call-tools' }, 'Tool calls'),
      tools.length
        ? table(
            'Tool calls in order',
            ['Tool', 'Arguments', 'Result'],
            tools.map((m) => [
              m.tool_call!.name,
              h('pre', null, m.tool_call!.arguments),
              h('pre', { class: m.tool_call!.is_error ? 'bad' : '' }, (m.tool_call!.is_error ? 'Error: ' : '') + m.tool_call!.output),
            ]),
            { rowHeader: true, captionHidden: true },
          )
        : h('p', { class: 'note' }, 'No tools were called.'),
    ),
  );

  // Analysis and the outcome (PATCH /v1/calls/{id}; the analysis never overwrites a manual outcome).
  const outcome = h('input', { type: 'text', value: call.outcome ?? '', autocomplete: 'off', 'data-path': 'outcome' });
  const saved = h('div', { 'aria-live': 'polite' });
  const outcomeForm = h(
    'form',
    { novalidate: true, class: 'inline-form' },
    errorSummary(),
    field('call-outcome', 'Outcome', outcome, 'A label in lowercase_underscore form, such as appointment_booked. The analysis never overwrites it.'),
    h('button', { type: 'submit' }, 'Save outcome'),
    saved,
  );
  outcomeForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    saved.replaceChildren();
    void api<Call>(`/v1/calls/${call.id}`, { method: 'PATCH', body: { outcome: outcome.value.trim() } }).then(
      (c) => {
        clearFieldErrors(outcomeForm);
        saved.replaceChildren(notice(`Saved: the outcome is ${c.outcome}.`));
      },
      (err: unknown) => {
        if (!showFieldErrors(outcomeForm, err)) saved.replaceChildren(problem(err));
      },
    );
  });
  const a = call.analysis;
  view.append(
    h(
      'section',
      { 'aria-labelledby': 'call-analysis' },
      h('h2', { id: 'call-analysis' }, 'Analysis and outcome'),
      facts([
        ['Analysis', `${a.status}${a.method ? ` (${a.method}${a.model ? `, ${a.model}` : ''})` : ''}`],
        ['Summary', dash(call.ai_summary ?? a.summary)],
        ['Analysed outcome', dash(a.outcome)],
        ...(a.error ? ([['Analysis error', a.error]] as [string, string][]) : []),
      ]),
      outcomeForm,
    ),
  );

  const deliveries = h('section', { 'aria-labelledby': 'call-deliveries' }, h('h2', { id: 'call-deliveries' }, 'Webhook deliveries'));
  view.append(deliveries);
  const loadDeliveries = async (): Promise<void> => {
    try {
      const list = await api<List<Delivery>>(`/v1/calls/${call.id}/deliveries?limit=50`, { signal });
      deliveries.replaceChildren(
        deliveries.firstElementChild!,
        deliveryTable(list.items, () => void loadDeliveries()),
      );
    } catch (err) {
      if (!signal.aborted)
        deliveries.replaceChildren(
          deliveries.firstElementChild!,
          problem(err, () => void loadDeliveries()),
        );
    }
  };
  await loadDeliveries();
}
