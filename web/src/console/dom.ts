// A tiny element builder: every text goes in as a text node (never parsed as HTML), so nothing the API returns
// can turn into markup or script, and the page's policy needs no inline code.
export type Child = Node | string | number | null | undefined | false | readonly Child[];
type Attrs = Record<string, unknown>;

const PROPS = new Set(['value', 'checked', 'selected', 'disabled', 'hidden', 'open', 'indeterminate']);

function append(parent: Node, children: readonly Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(parent, c as readonly Child[]);
    else parent.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
    else if (PROPS.has(k)) (el as unknown as Record<string, unknown>)[k] = v;
    else el.setAttribute(k === 'className' ? 'class' : k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
export function s(name: string, attrs: Record<string, string | number> = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

export function fmtDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
}

export const dash = (v: unknown): string => (v === null || v === undefined || v === '' ? '—' : String(v));

/** "m:ss" for an offset in seconds. */
export function clock(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** A description list from label/value pairs. */
export function facts(rows: [string, Child][]): HTMLDListElement {
  return h(
    'dl',
    { class: 'facts' },
    rows.map(([k, v]) => [h('dt', null, k), h('dd', null, v)]),
  );
}

/** A table with column headers; rows are cells (the first may be a row header). */
export function table(caption: string, headers: string[], rows: Child[][], opts: { rowHeader?: boolean; captionHidden?: boolean } = {}): HTMLElement {
  return h(
    'div',
    { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': caption },
    h(
      'table',
      null,
      h('caption', { class: opts.captionHidden ? 'sr-only' : 'note' }, caption),
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
        rows.length
          ? rows.map((r) =>
              h(
                'tr',
                null,
                r.map((c, i) => (i === 0 && opts.rowHeader ? h('th', { scope: 'row' }, c) : h('td', null, c))),
              ),
            )
          : h('tr', null, h('td', { colspan: headers.length, class: 'empty' }, 'Nothing here yet.')),
      ),
    ),
  );
}
