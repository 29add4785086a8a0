// "Talk to it": the playground's call inside the console: the web SDK joins the agent's room, the page shows the
// agent's state, the live transcript and each turn's latency, and links to the call's page when it ends.
import { startCall, type VapCall } from '../../sdk/index.ts';
import { api, authorization } from '../../playground/api.ts';
import { drawChart, type TurnMetrics } from '../../playground/chart.ts';
import { describe, focusHeading, header, href, type PageContext } from '../app.ts';
import { h, s } from '../dom.ts';

let live: VapCall | null = null;

/** Ends a call left running when the user navigates away. */
export function stopTalk(): void {
  void live?.stop().catch(() => {});
  live = null;
}

export async function talkPage({ view, params: [id], signal }: PageContext): Promise<void> {
  stopTalk();
  const agent = await api<{ id: string; name: string }>(`/v1/agents/${encodeURIComponent(id!)}`, { signal });
  view.append(header(`Talk to ${agent.name}`, h('a', { class: 'button secondary', href: href(`/agents/${agent.id}`) }, 'Agent settings')));
  focusHeading();
  const state = h('strong', { role: 'status', 'aria-live': 'polite', 'data-state': 'idle' }, 'idle');
  const start = h('button', { type: 'button' }, 'Start call');
  const mute = h('button', { type: 'button', class: 'secondary', 'aria-pressed': 'false', disabled: true }, 'Mute microphone');
  const stop = h('button', { type: 'button', class: 'danger', disabled: true }, 'Stop call');
  const transcript = h('ol', { class: 'transcript', 'aria-labelledby': 'talk-transcript', tabindex: 0 });
  const metrics = h('tbody');
  const chart = s('svg', { viewBox: '0 0 480 200', role: 'img', 'aria-label': 'Latency across turns; the numbers are in the table' }) as SVGSVGElement;
  const message = h('div', { 'aria-live': 'polite' });
  const turns: TurnMetrics[] = [];
  drawChart(chart, turns);
  const setState = (st: string) => {
    state.textContent = st;
    state.dataset.state = st;
  };
  start.addEventListener('click', () => {
    start.disabled = true;
    message.replaceChildren();
    transcript.replaceChildren();
    metrics.replaceChildren();
    turns.length = 0;
    setState('connecting');
    void startCall({ apiBase: window.location.origin, authorization: authorization(), agentId: agent.id, metadata: { source: 'console' } }).then(
      (c) => {
        live = c;
        mute.disabled = false;
        stop.disabled = false;
        setState(c.state);
        c.on('state', setState);
        c.on('transcript', (t) => {
          let li = transcript.querySelector<HTMLLIElement>(`li[data-id="${CSS.escape(t.id)}"]`);
          if (!li) {
            li = h('li', { 'data-id': t.id, class: t.role }, h('span', { class: 'speaker' }, t.role === 'agent' ? 'Agent: ' : 'You: '), h('span'));
            transcript.append(li);
          }
          li.lastElementChild!.textContent = t.text;
          li.dataset.final = String(t.final);
        });
        c.on('metrics', (m) => {
          const at = turns.findIndex((t) => t.turn === m.turn);
          if (at >= 0) turns[at] = { ...turns[at]!, ...m };
          else turns.push(m);
          turns.sort((a, b) => a.turn - b.turn);
          const cell = (v: number | null) => (typeof v === 'number' ? String(Math.round(v)) : '—');
          metrics.replaceChildren(
            ...turns.map((t) =>
              h(
                'tr',
                null,
                h('th', { scope: 'row' }, String(t.turn)),
                h('td', null, cell(t.eou_delay_ms)),
                h('td', null, cell(t.llm_ttft_ms)),
                h('td', null, cell(t.tts_ttfb_ms)),
                h('td', null, cell(t.e2e_latency_ms)),
              ),
            ),
          );
          drawChart(chart, turns);
        });
        c.on('error', (e) => message.replaceChildren(h('p', { class: 'problem' }, e.message)));
        c.on('ended', () => {
          live = null;
          setState('ended');
          start.disabled = false;
          mute.disabled = true;
          stop.disabled = true;
          message.replaceChildren(h('p', null, 'The call ended. ', h('a', { href: href(`/calls/${c.id}`) }, 'Open its record')));
        });
        stop.focus();
      },
      (err: unknown) => {
        setState('ended');
        start.disabled = false;
        message.replaceChildren(h('p', { class: 'problem', role: 'alert' }, `The call could not start: ${describe(err)}`));
      },
    );
  });
  mute.addEventListener('click', () => {
    const on = mute.getAttribute('aria-pressed') !== 'true';
    if (on) live?.mute();
    else live?.unmute();
    mute.setAttribute('aria-pressed', String(on));
    mute.textContent = on ? 'Unmute microphone' : 'Mute microphone';
  });
  stop.addEventListener('click', () => void live?.stop());
  view.append(
    h('p', { class: 'state-line' }, 'Agent state: ', state),
    h('div', { class: 'buttons' }, start, mute, stop),
    message,
    h('h2', { id: 'talk-transcript' }, 'Live transcript'),
    transcript,
    h('h2', { id: 'talk-latency' }, 'Latency per turn'),
    h(
      'div',
      { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-labelledby': 'talk-latency' },
      h(
        'table',
        null,
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            ['Turn', 'End of utterance', 'LLM first token', 'TTS first byte', 'End to end'].map((x) => h('th', { scope: 'col' }, x)),
          ),
        ),
        metrics,
      ),
    ),
    h('figure', { class: 'chart' }, chart),
  );
}
