// Inline SVG charts for the overview (no chart library: the page's policy allows no third-party code). Each chart
// has a text alternative and its numbers in a table, so nothing is conveyed by colour or shape alone.
import { h, s } from './dom.ts';

const W = 560;
const H = 220;
const PAD = { left: 44, right: 8, top: 10, bottom: 30 };

export function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function frame(svg: SVGElement, max: number, labels: string[], x: (i: number) => number): void {
  const innerH = H - PAD.top - PAD.bottom;
  for (const f of [0, 0.5, 1]) {
    const y = PAD.top + innerH - f * innerH;
    svg.append(
      s('line', { class: 'grid', x1: PAD.left, x2: W - PAD.right, y1: y, y2: y }),
      s('text', { class: 'tick', x: PAD.left - 4, y: y + 4, 'text-anchor': 'end' }, String(Math.round(f * max))),
    );
  }
  const every = Math.max(1, Math.ceil(labels.length / 7));
  labels.forEach((l, i) => {
    if (i % every === 0) svg.append(s('text', { class: 'tick', x: x(i), y: H - 10, 'text-anchor': 'middle' }, l));
  });
}

/** Stacked bars: one bar per bucket, one segment per series (colour class `c0`...). */
export function stackedBars(title: string, labels: string[], series: { name: string; values: number[] }[]): HTMLElement {
  const totals = labels.map((_, i) => series.reduce((a, se) => a + (se.values[i] ?? 0), 0));
  const max = niceMax(Math.max(0, ...totals));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const bw = labels.length ? innerW / labels.length : innerW;
  const x = (i: number) => PAD.left + bw * i + bw / 2;
  const svg = s('svg', {
    viewBox: `0 0 ${W} ${H}`,
    role: 'img',
    'aria-label': `${title}: ${series.map((se) => `${se.name} ${se.values.reduce((a, b) => a + b, 0)}`).join(', ') || 'no data'}`,
  });
  frame(svg, max, labels, x);
  labels.forEach((_, i) => {
    let y = PAD.top + innerH;
    series.forEach((se, k) => {
      const v = se.values[i] ?? 0;
      if (!v) return;
      const hgt = (v / max) * innerH;
      y -= hgt;
      svg.append(
        s(
          'rect',
          { class: `bar c${k % 6}`, x: PAD.left + bw * i + bw * 0.15, y, width: Math.max(1, bw * 0.7), height: hgt },
          s('title', {}, `${labels[i]}: ${se.name} ${v}`),
        ),
      );
    });
  });
  return figure(
    title,
    svg,
    series.map((se, k) => ({ name: se.name, cls: `c${k % 6}` })),
    ['Day', ...series.map((se) => se.name)],
    labels.map((l, i) => [l, ...series.map((se) => String(se.values[i] ?? 0))]),
  );
}

/** Lines over buckets; a null value leaves a gap. */
export function lines(
  title: string,
  labels: string[],
  series: { name: string; values: (number | null)[]; dashed?: boolean; cls: string }[],
  unit: string,
): HTMLElement {
  const all = series.flatMap((se) => se.values).filter((v): v is number => typeof v === 'number');
  const max = niceMax(Math.max(0, ...all));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const x = (i: number) => PAD.left + (labels.length <= 1 ? innerW / 2 : (i * innerW) / (labels.length - 1));
  const y = (v: number) => PAD.top + innerH - (Math.min(v, max) / max) * innerH;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `${title} (${unit}); the numbers are in the table below` });
  frame(svg, max, labels, x);
  for (const se of series) {
    const pts = se.values.flatMap((v, i) => (typeof v === 'number' ? [`${x(i).toFixed(1)},${y(v).toFixed(1)}`] : []));
    if (pts.length > 1) svg.append(s('polyline', { class: `series ${se.cls}${se.dashed ? ' dashed' : ''}`, points: pts.join(' '), fill: 'none' }));
    se.values.forEach((v, i) => {
      if (typeof v === 'number') svg.append(s('circle', { class: `dot ${se.cls}`, cx: x(i), cy: y(v), r: 2.5 }));
    });
  }
  return figure(
    title,
    svg,
    series.map((se) => ({ name: se.name, cls: se.cls, dashed: se.dashed })),
    ['Day', ...series.map((se) => se.name)],
    labels.map((l, i) => [l, ...series.map((se) => (se.values[i] === null || se.values[i] === undefined ? '—' : String(Math.round(se.values[i]))))]),
  );
}

/** Horizontal bars for counts by value (outcomes, end reasons). */
export function countBars(title: string, rows: { value: string; count: number }[]): HTMLElement {
  const max = Math.max(1, ...rows.map((r) => r.count));
  return h(
    'figure',
    { class: 'chart counts' },
    h('figcaption', null, title),
    rows.length
      ? h(
          'ul',
          { class: 'count-bars' },
          rows.map((r) =>
            h(
              'li',
              null,
              h('span', { class: 'count-label' }, r.value),
              h('meter', { min: 0, max, value: r.count, 'aria-label': `${r.value}: ${r.count}` }),
              h('span', { class: 'count-n' }, String(r.count)),
            ),
          ),
        )
      : h('p', { class: 'note' }, 'None in this window.'),
  );
}

function figure(
  title: string,
  svg: SVGElement,
  legend: { name: string; cls: string; dashed?: boolean | undefined }[],
  headers: string[],
  rows: string[][],
): HTMLElement {
  return h(
    'figure',
    { class: 'chart' },
    h('figcaption', null, title),
    svg,
    h(
      'ul',
      { class: 'legend' },
      legend.map((l) => h('li', null, h('span', { class: `swatch ${l.cls}${l.dashed ? ' dashed' : ''}`, 'aria-hidden': 'true' }), l.name)),
    ),
    h(
      'details',
      null,
      h('summary', null, 'Show the numbers'),
      h(
        'div',
        { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': `${title}: numbers` },
        h(
          'table',
          null,
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              headers.map((x) => h('th', { scope: 'col' }, x)),
            ),
          ),
          h(
            'tbody',
            null,
            rows.map((r) =>
              h(
                'tr',
                null,
                r.map((c, i) => (i === 0 ? h('th', { scope: 'row' }, c) : h('td', null, c))),
              ),
            ),
          ),
        ),
      ),
    ),
  );
}
