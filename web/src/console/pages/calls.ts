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
  notice,
  pager,
  problem,
  showFieldErrors,
  showNotFound,
  type PageContext,
} from '../app.ts';
import { clock, dash, facts, fmtDate, h, s, table } from '../dom.ts';

export interface List<T> {
  items: T[];
  total: number;
  limit: number;
  offset: number;
}
interface Named {
  id: string;
  name?: string;
  phone_number?: string;
}
interface Message {
  role: 'agent' | 'user';
  content: string;
  started_at?: string;
  ended_at?: string;
  interrupted?: boolean;
  tool_call?: { name: string; arguments: string; output: string; is_error: boolean };
  /** An agent reply's turn, as the worker measured it (null: not measured in that turn). */
  metrics?: { eou_delay_ms: number | null; llm_ttft_ms: number | null; tts_ttfb_ms: number | null; e2e_ms: number | null };
}
type Stat = { avg_ms: number; p50_ms: number; min_ms: number; max_ms: number; samples: number };
export interface Call {
  id: string;
  agent_id: string;
  type: string;
  status: string;
  to_number: string | null;
  from_number: string | null;
  started_at: string | null;
  ended_at: string | null;
  duration_seconds: number | null;
  end_reason: string | null;
  outcome: string | null;
  recording_url: string | null;
  messages: Message[] | null;
  ai_summary: string | null;
  analysis: { outcome: string | null; summary: string | null; status: string; error: string | null; method: string | null; model?: string | null };
  latency: Record<string, Stat | undefined>;
  created_at: string;
}
interface Delivery {
  id: string;
  webhook_id: string | null;
  event_id: string;
  event: string;
  url: string;
  status: string;
  attempt: number;
  response_status: number | null;
  response_body: string | null;
  error: string | null;
  duration_ms: number;
  next_retry_at: string | null;
  created_at: string;
}

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

/** Seconds from the call's start to a message's start, when the worker reported message times. */
function offsetOf(call: Call, m: Message): number | null {
  const base = call.started_at ?? call.messages?.find((x) => x.started_at)?.started_at;
  if (!m.started_at || !base) return null;
  return Math.max(0, (Date.parse(m.started_at) - Date.parse(base)) / 1000);
}

export async function callPage({ view, params: [id], signal }: PageContext): Promise<void> {
  let call: Call;
  try {
    call = await api<Call>(`/v1/calls/${encodeURIComponent(id!)}`, { signal });
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
      ['From / to', [call.from_number, call.to_number].filter(Boolean).join(' → ') || '—'],
      ['Created', fmtDate(call.created_at)],
      ['Duration', call.duration_seconds === null ? '—' : clock(call.duration_seconds)],
      ['End reason', dash(call.end_reason)],
    ]),
  );

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
            : 'The recording appears when the call has ended.',
        ),
      h('h3', { id: 'call-transcript' }, 'Transcript'),
      messages.length ? transcript : h('p', { class: 'note' }, call.messages ? 'Nothing was said.' : 'The transcript appears when the call has ended.'),
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

/** A table of delivery attempts with their request and response, and a retry for each. */
export function deliveryTable(items: Delivery[], reload: () => void): HTMLElement {
  const out = h('div', { 'aria-live': 'polite' });
  const rows = items.map((d) => {
    const retry = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Retry the ${d.event} delivery of ${fmtDate(d.created_at)}` }, 'Retry');
    retry.addEventListener('click', () => {
      retry.disabled = true;
      // Retrying is per webhook; a call's own webhook_url (webhook_id null) has no endpoint to retry through.
      void api(`/v1/webhooks/${d.webhook_id}/deliveries/${d.id}/retry`, { method: 'POST' }).then(
        () => {
          out.prepend(notice(`Retry of the ${d.event} delivery queued.`));
          reload();
        },
        (err: unknown) => {
          retry.disabled = false;
          // A 404 is either a delivery that is gone or a server without the retry endpoint: say both.
          if (err instanceof ApiError && err.status === 404)
            out.prepend(
              h(
                'p',
                { class: 'problem', role: 'alert' },
                'The retry was refused (404): the delivery no longer exists, or this server does not offer retries yet.',
              ),
            );
          else out.prepend(problem(err, undefined, 'This delivery'));
        },
      );
    });
    return [
      d.event,
      h('span', { class: `status s-${d.status}` }, d.status),
      String(d.attempt),
      d.response_status === null ? dash(d.error) : `${d.response_status}${d.error ? ` (${d.error})` : ''}`,
      fmtDate(d.created_at),
      h(
        'details',
        null,
        h('summary', null, 'Request and response'),
        facts([
          ['Sent to', d.url],
          ['Event id (webhook-id header)', d.event_id],
          ['Took', `${d.duration_ms} ms`],
          ['Response status', dash(d.response_status)],
          ['Response body', h('pre', null, d.response_body ?? '—')],
          ['Error', dash(d.error)],
          ['Next retry', fmtDate(d.next_retry_at)],
        ]),
      ),
      d.webhook_id ? retry : h('span', { class: 'note' }, 'call webhook_url'),
    ];
  });
  out.append(
    table('Delivery attempts, newest first', ['Event', 'Status', 'Attempt', 'Response', 'When', 'Details', 'Retry'], rows, {
      rowHeader: true,
      captionHidden: true,
    }),
  );
  return out;
}

/** The parts of the wait for an answer, in the order they happen, with their classes and names. */
const WAIT_PARTS = [
  ['eou', 'End of utterance', 'eou_delay_ms'],
  ['llm', 'LLM first token', 'llm_ttft_ms'],
  ['tts', 'TTS first byte', 'tts_ttfb_ms'],
] as const;

/**
 * Per turn (a caller line and the agent's answer): the caller speaking, the wait for the answer, the agent
 * speaking, on one time axis, from the message times the worker stores. The wait is split by the reply's own
 * turn figures when the message carries them: the end-of-utterance decision, the LLM's first token, the TTS's
 * first audio, one after the other, and what is left (audio transport and buffering). A figure that does not
 * fit in the wait (the LLM can start before the end of the turn, preemptively) is cut at the wait's end; the
 * table has the measured numbers. The call's latency summary below.
 */
function waterfall(call: Call): HTMLElement {
  const ms = call.messages ?? [];
  const turns: { n: number; user: Message; agent: Message }[] = [];
  ms.forEach((m, i) => {
    const next = ms.slice(i + 1).find((x) => x.role === 'agent' && !x.tool_call);
    if (m.role === 'user' && m.started_at && m.ended_at && next?.started_at && next.ended_at) turns.push({ n: turns.length + 1, user: m, agent: next });
  });
  const sec = h('section', { 'aria-labelledby': 'call-latency' }, h('h2', { id: 'call-latency' }, 'Latency per turn'));
  if (turns.length) {
    const rowH = 26;
    const W = 560;
    const left = 60;
    const spans = turns.map((t) => {
      const t0 = Date.parse(t.user.started_at!);
      return {
        n: t.n,
        userMs: Date.parse(t.user.ended_at!) - t0,
        waitMs: Date.parse(t.agent.started_at!) - Date.parse(t.user.ended_at!),
        agentMs: Date.parse(t.agent.ended_at!) - Date.parse(t.agent.started_at!),
        metrics: t.agent.metrics,
      };
    });
    const split = spans.some((x) => x.metrics);
    const max = Math.max(1, ...spans.map((x) => x.userMs + Math.max(0, x.waitMs) + x.agentMs));
    const sc = (v: number) => (Math.max(0, v) / max) * (W - left - 10);
    const svg = s('svg', {
      viewBox: `0 0 ${W} ${rowH * spans.length + 10}`,
      role: 'img',
      'aria-label': 'Per-turn waterfall; the numbers are in the table below',
    });
    spans.forEach((x, i) => {
      const y = 5 + i * rowH;
      const x0 = left + sc(x.userMs);
      svg.append(s('text', { class: 'tick', x: 4, y: y + 15 }, `Turn ${x.n}`), s('rect', { class: 'bar user', x: left, y, width: sc(x.userMs), height: 18 }));
      // The wait: its measured parts in order, each cut to what is left of the wait, then the rest.
      let used = 0;
      const wait = Math.max(0, x.waitMs);
      for (const [cls, , key] of WAIT_PARTS) {
        const part = Math.min(Math.max(0, x.metrics?.[key] ?? 0), wait - used);
        if (part > 0) svg.append(s('rect', { class: `bar ${cls}`, x: x0 + sc(used), y, width: sc(part), height: 18 }));
        used += part;
      }
      svg.append(
        s('rect', { class: 'bar wait', x: x0 + sc(used), y, width: sc(wait - used), height: 18 }),
        s('rect', { class: 'bar agent', x: x0 + sc(wait), y, width: sc(x.agentMs), height: 18 }),
      );
    });
    const num = (v: number | null | undefined) => (typeof v === 'number' ? String(v) : '—');
    sec.append(
      h(
        'figure',
        { class: 'chart' },
        svg,
        h(
          'ul',
          { class: 'legend' },
          [
            ['user', 'Caller speaking'],
            ...(split ? WAIT_PARTS.map(([c, l]) => [c, l]) : []),
            ['wait', split ? 'Rest of the wait' : 'Wait for the answer'],
            ['agent', 'Agent speaking'],
          ].map(([c, l]) => h('li', null, h('span', { class: `swatch bar-${c}`, 'aria-hidden': 'true' }), l)),
        ),
      ),
      table(
        'Per turn, milliseconds',
        ['Turn', 'Caller speaking', 'Wait for the answer', ...WAIT_PARTS.map(([, l]) => l), 'End to end', 'Agent speaking'],
        spans.map((x) => [
          String(x.n),
          String(x.userMs),
          String(x.waitMs),
          ...WAIT_PARTS.map(([, , k]) => num(x.metrics?.[k])),
          num(x.metrics?.e2e_ms),
          String(x.agentMs),
        ]),
        { rowHeader: true },
      ),
    );
  } else sec.append(h('p', { class: 'note' }, 'No turn times for this call (they come with the transcript once the call has ended).'));
  const names: Record<string, string> = { eou_delay: 'End of utterance', llm_ttft: 'LLM first token', tts_ttfb: 'TTS first byte', e2e: 'End to end' };
  const stats = Object.entries(names).flatMap(([k, name]) => {
    const st = call.latency[k];
    return st && st.samples ? [[name, String(st.p50_ms), String(st.avg_ms), String(st.min_ms), String(st.max_ms), String(st.samples)]] : [];
  });
  sec.append(
    stats.length
      ? table('Latency over the call, milliseconds', ['Measure', 'p50', 'Average', 'Min', 'Max', 'Turns'], stats, { rowHeader: true })
      : h('p', { class: 'note' }, 'No latency figures yet.'),
  );
  return sec;
}
