// The latency chart: one polyline per measure across turns, drawn as inline SVG (no chart library; the page's
// policy allows no third-party code). Geometry is a pure function so it can be checked without a browser.

export interface TurnMetrics {
  turn: number;
  eou_delay_ms: number | null;
  llm_ttft_ms: number | null;
  tts_ttfb_ms: number | null;
  e2e_latency_ms: number | null;
}

export const SERIES = [
  { key: 'eou_delay_ms', cls: 'eou', label: 'end of utterance' },
  { key: 'llm_ttft_ms', cls: 'llm', label: 'LLM first token' },
  { key: 'tts_ttfb_ms', cls: 'tts', label: 'TTS first byte' },
  { key: 'e2e_latency_ms', cls: 'e2e', label: 'end to end' },
] as const;

export const WIDTH = 480;
export const HEIGHT = 200;
const PAD = { left: 48, right: 12, top: 12, bottom: 28 };

export interface ChartGeometry {
  maxMs: number;
  /** One entry per series: its points as "x,y" pairs (turns without a value are skipped). */
  lines: { cls: string; label: string; points: [number, number][] }[];
  xTicks: { x: number; label: string }[];
  yTicks: { y: number; label: string }[];
}

/** A round axis maximum at or above the largest value (1, 2 or 5 times a power of ten). */
export function niceMax(v: number): number {
  if (!(v > 0)) return 100;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

export function chartGeometry(rows: readonly TurnMetrics[]): ChartGeometry {
  const values = rows.flatMap((r) => SERIES.map((s) => r[s.key])).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  const maxMs = niceMax(Math.max(0, ...values));
  const innerW = WIDTH - PAD.left - PAD.right;
  const innerH = HEIGHT - PAD.top - PAD.bottom;
  const n = rows.length;
  const x = (i: number) => PAD.left + (n <= 1 ? innerW / 2 : (i * innerW) / (n - 1));
  const y = (ms: number) => PAD.top + innerH - (Math.min(ms, maxMs) / maxMs) * innerH;
  const round = (v: number) => Math.round(v * 10) / 10;
  return {
    maxMs,
    lines: SERIES.map((s) => ({
      cls: s.cls,
      label: s.label,
      points: rows.flatMap((r, i) => {
        const v = r[s.key];
        return typeof v === 'number' && Number.isFinite(v) ? [[round(x(i)), round(y(v))] as [number, number]] : [];
      }),
    })),
    xTicks: rows.map((r, i) => ({ x: round(x(i)), label: String(r.turn) })),
    yTicks: [0, 0.5, 1].map((f) => ({ y: round(y(f * maxMs)), label: String(Math.round(f * maxMs)) })),
  };
}

const SVG_NS = 'http://www.w3.org/2000/svg';

function el(name: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const e = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Redraws the chart into an <svg> element. */
export function drawChart(svg: SVGSVGElement, rows: readonly TurnMetrics[]): void {
  const g = chartGeometry(rows);
  svg.replaceChildren();
  const axisX = HEIGHT - PAD.bottom;
  svg.append(el('line', { class: 'axis', x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: axisX }));
  svg.append(el('line', { class: 'axis', x1: PAD.left, y1: axisX, x2: WIDTH - PAD.right, y2: axisX }));
  for (const t of g.yTicks) {
    svg.append(el('line', { class: 'grid', x1: PAD.left, y1: t.y, x2: WIDTH - PAD.right, y2: t.y }));
    svg.append(el('text', { class: 'tick', x: PAD.left - 6, y: t.y + 4, 'text-anchor': 'end' }, t.label));
  }
  for (const t of g.xTicks) svg.append(el('text', { class: 'tick', x: t.x, y: axisX + 18, 'text-anchor': 'middle' }, t.label));
  for (const line of g.lines) {
    if (!line.points.length) continue;
    const pts = line.points.map(([px, py]) => `${px},${py}`).join(' ');
    if (line.points.length > 1) svg.append(el('polyline', { class: `series ${line.cls}`, points: pts, fill: 'none' }));
    for (const [px, py] of line.points) svg.append(el('circle', { class: `dot ${line.cls}`, cx: px, cy: py, r: 3 }));
  }
  if (!rows.length) svg.append(el('text', { class: 'tick', x: WIDTH / 2, y: HEIGHT / 2, 'text-anchor': 'middle' }, 'No turns yet'));
}
