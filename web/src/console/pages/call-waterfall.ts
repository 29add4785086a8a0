// A call's latency per turn: the caller speaking, the wait for the answer by its parts, the agent speaking.
import { h, s, table } from '../dom.ts';
import type { Call, Message } from './call-types.ts';

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
export function waterfall(call: Call): HTMLElement {
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
    const st = call.latency?.[k];
    return st && st.samples ? [[name, String(st.p50_ms), String(st.avg_ms), String(st.min_ms), String(st.max_ms), String(st.samples)]] : [];
  });
  sec.append(
    stats.length
      ? table('Latency over the call, milliseconds', ['Measure', 'p50', 'Average', 'Min', 'Max', 'Turns'], stats, { rowHeader: true })
      : h('p', { class: 'note' }, 'No latency figures yet.'),
  );
  return sec;
}
