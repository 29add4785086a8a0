// The console's shell: a hash router (#/calls?status=failed, #/calls/<id>...), the navigation, error boxes in
// words, and the field errors of a 422. Each page is a function that renders into the view; a newer navigation
// aborts the older page's requests, so a slow answer never paints over the page the user moved to.
import { ApiError } from '../playground/api.ts';
import { h, type Child } from './dom.ts';

export interface PageContext {
  params: string[];
  query: URLSearchParams;
  view: HTMLElement;
  signal: AbortSignal;
}
export type Page = (ctx: PageContext) => Promise<void> | void;

interface Route {
  pattern: RegExp;
  nav: string;
  page: Page;
}
const routes: Route[] = [];

export function route(pattern: RegExp, nav: string, page: Page): void {
  routes.push({ pattern, nav, page });
}

/** The current hash as path and query. */
export function current(): { path: string; query: URLSearchParams } {
  const raw = window.location.hash.replace(/^#/, '') || '/overview';
  const [path = '/overview', qs = ''] = raw.split('?', 2);
  return { path, query: new URLSearchParams(qs) };
}

export function href(path: string, query?: Record<string, string | number | null | undefined> | URLSearchParams): string {
  const q =
    query instanceof URLSearchParams
      ? query
      : new URLSearchParams(Object.entries(query ?? {}).flatMap(([k, v]) => (v === null || v === undefined || v === '' ? [] : [[k, String(v)]])));
  const qs = q.toString();
  return `#${path}${qs ? `?${qs}` : ''}`;
}

export function navigate(path: string, query?: Record<string, string | number | null | undefined> | URLSearchParams): void {
  const target = href(path, query);
  if (window.location.hash === target) void render();
  else window.location.hash = target;
}

let controller: AbortController | null = null;
let viewEl: HTMLElement;
let navEl: HTMLElement;

export function mount(view: HTMLElement, nav: HTMLElement): void {
  viewEl = view;
  navEl = nav;
  window.addEventListener('hashchange', () => void render());
}

/** Renders the page of the current hash. */
export async function render(): Promise<void> {
  controller?.abort();
  const ctl = new AbortController();
  controller = ctl;
  const { path, query } = current();
  const match = routes.map((r) => ({ r, m: r.pattern.exec(path) })).find((x) => x.m);
  for (const a of navEl.querySelectorAll('a')) {
    if (match && a.dataset.nav === match.r.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  viewEl.replaceChildren();
  if (!match) {
    viewEl.append(
      h('h1', { tabindex: -1 }, 'Page not found'),
      h('p', null, 'No console page has this address. ', h('a', { href: '#/overview' }, 'Go to the overview.')),
    );
    focusHeading();
    return;
  }
  try {
    await match.r.page({ params: match.m!.slice(1).map((p) => decodeURIComponent(p)), query, view: viewEl, signal: ctl.signal });
  } catch (err) {
    if (ctl.signal.aborted || (err instanceof ApiError && err.status === 401)) return;
    viewEl.append(problem(err, () => void render()));
  }
}

/** Moves focus to the page's heading after a navigation, so keyboard and screen-reader users start there. */
export function focusHeading(): void {
  const h1 = viewEl.querySelector<HTMLElement>('h1');
  if (h1 && document.activeElement !== h1 && !viewEl.contains(document.activeElement)) h1.focus({ preventScroll: false });
}

/** An error in words. */
export function describe(err: unknown, what = 'This'): string {
  if (err instanceof ApiError) {
    if (err.status === 404) return `${what} was not found. It may have been deleted, or it belongs to another organisation.`;
    if (err.status === 403) return `Not allowed: ${err.message}. The console needs a secret API key or a dashboard token.`;
    if (err.status === 409) return `Conflict: ${err.message}`;
    if (err.status === 422)
      return `Some values were not accepted: ${
        fieldErrors(err)
          .map((e) => `${e.path || 'request'}: ${e.msg}`)
          .join('; ') || err.message
      }`;
    if (err.status === 429) return 'Too many requests. Wait a moment and try again.';
    if (err.status >= 500) return `The server failed (${err.status}): ${err.message}. Try again in a moment.`;
    return `The server answered ${err.status}: ${err.message}`;
  }
  if (err instanceof TypeError) return 'The server could not be reached: the network is down or the server stopped. Check the connection and try again.';
  return err instanceof Error ? err.message : String(err);
}

/** An error box with a Retry button. */
export function problem(err: unknown, retry?: () => void, what?: string): HTMLElement {
  const box = h('div', { class: 'problem', role: 'alert' }, h('p', null, describe(err, what)));
  if (retry) box.append(h('button', { type: 'button', class: 'secondary', onclick: retry }, 'Retry'));
  return box;
}

export interface FieldError {
  /** Dotted path under the body: "turn_taking.min_delay_ms". */
  path: string;
  msg: string;
}

export function fieldErrors(err: unknown): FieldError[] {
  if (!(err instanceof ApiError) || err.status !== 422) return [];
  const detail = (err.body as { detail?: unknown } | null)?.detail;
  if (!Array.isArray(detail)) return [];
  return detail.map((d: { loc?: unknown[]; msg?: string }) => ({
    path: (d.loc ?? []).filter((p, i) => !(i === 0 && (p === 'body' || p === 'query'))).join('.'),
    msg: d.msg ?? 'invalid value',
  }));
}

/**
 * Shows a 422's errors at their fields: each control named by its path (data-path) gets aria-invalid and a
 * message it is described by; errors with no field go to the form's summary. Returns true when any was placed.
 */
export function showFieldErrors(form: HTMLElement, err: unknown): boolean {
  clearFieldErrors(form);
  const errors = fieldErrors(err);
  if (!errors.length) return false;
  const summary = form.querySelector<HTMLElement>('.form-errors');
  const loose: string[] = [];
  let first: HTMLElement | null = null;
  for (const e of errors) {
    const control = findControl(form, e.path);
    if (!control) {
      loose.push(`${e.path || 'request'}: ${e.msg}`);
      continue;
    }
    const id = `${control.id}-error`;
    const msg = h('p', { class: 'field-error', id }, e.msg);
    control.setAttribute('aria-invalid', 'true');
    // A field in a collapsed group (the advanced settings) is shown with its error.
    const closed = control.closest('details');
    if (closed) closed.open = true;
    control.setAttribute('aria-describedby', [control.getAttribute('aria-describedby'), id].filter(Boolean).join(' '));
    (control.closest('.field') ?? control.parentElement!).append(msg);
    first ??= control;
  }
  if (summary) {
    summary.replaceChildren(
      h(
        'p',
        null,
        `${errors.length === 1 ? 'A value was' : 'Some values were'} not accepted${loose.length ? `: ${loose.join('; ')}` : '; see the marked fields.'}`,
      ),
    );
    summary.hidden = false;
  }
  (first ?? summary)?.focus();
  return true;
}

function findControl(form: HTMLElement, path: string): HTMLElement | null {
  const parts = path.split('.');
  // The deepest control named by a prefix of the path (an error inside a JSON field lands on that field).
  for (let n = parts.length; n > 0; n--) {
    const c = form.querySelector<HTMLElement>(`[data-path="${CSS.escape(parts.slice(0, n).join('.'))}"]`);
    if (c) return c;
  }
  return null;
}

export function clearFieldErrors(form: HTMLElement): void {
  for (const m of form.querySelectorAll('.field-error')) m.remove();
  for (const c of form.querySelectorAll<HTMLElement>('[aria-invalid]')) {
    c.removeAttribute('aria-invalid');
    const rest = (c.getAttribute('aria-describedby') ?? '').split(' ').filter((id) => id && !id.endsWith('-error'));
    if (rest.length) c.setAttribute('aria-describedby', rest.join(' '));
    else c.removeAttribute('aria-describedby');
  }
  const summary = form.querySelector<HTMLElement>('.form-errors');
  if (summary) {
    summary.hidden = true;
    summary.replaceChildren();
  }
}

/** A form's error summary (focusable so a failed submit can move focus to it). */
export const errorSummary = (): HTMLElement => h('div', { class: 'form-errors problem', role: 'alert', tabindex: -1, hidden: true });

/** A status line for confirmations ("Saved."). */
export function notice(text: Child): HTMLElement {
  return h('p', { class: 'notice', role: 'status' }, text);
}

/** A detail page's "not found": heading, the reason in words, and the way back to its list. */
export function showNotFound(view: HTMLElement, title: string, err: unknown, what: string, back: { href: string; label: string }): void {
  view.append(header(title), h('p', { class: 'problem', role: 'alert' }, describe(err, what)), h('p', null, h('a', { href: back.href }, back.label)));
  focusHeading();
}

/** Page heading plus optional actions. */
export function header(title: string, ...actions: Child[]): HTMLElement {
  return h('div', { class: 'page-head' }, h('h1', { tabindex: -1 }, title), actions.length ? h('div', { class: 'actions' }, actions) : null);
}

/**
 * A confirmation dialog naming what will happen. Resolves true when confirmed. Native <dialog>: focus is trapped
 * and Escape cancels.
 */
export function confirmDialog(title: string, body: string, confirmLabel: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dlg = h('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-title' });
    const done = (ok: boolean) => {
      dlg.close();
      dlg.remove();
      resolve(ok);
    };
    dlg.append(
      h('h2', { id: 'confirm-title' }, title),
      h('p', null, body),
      h(
        'div',
        { class: 'buttons' },
        h('button', { type: 'button', class: 'secondary', onclick: () => done(false) }, 'Cancel'),
        h('button', { type: 'button', class: 'danger', onclick: () => done(true) }, confirmLabel),
      ),
    );
    dlg.addEventListener('cancel', (e) => {
      e.preventDefault();
      done(false);
    });
    document.body.append(dlg);
    dlg.showModal();
    dlg.querySelector<HTMLButtonElement>('button.secondary')!.focus();
  });
}

/** Previous/next for a server-paginated list. */
export function pager(total: number, limit: number, offset: number, go: (offset: number) => void, label: string): HTMLElement {
  const from = total ? offset + 1 : 0;
  const to = Math.min(offset + limit, total);
  return h(
    'nav',
    { class: 'pager', 'aria-label': `${label} pages` },
    h('p', { role: 'status' }, `${from}–${to} of ${total}`),
    h('button', { type: 'button', class: 'secondary', disabled: offset <= 0, onclick: () => go(Math.max(0, offset - limit)) }, 'Previous page'),
    h('button', { type: 'button', class: 'secondary', disabled: offset + limit >= total, onclick: () => go(offset + limit) }, 'Next page'),
  );
}

/** A labelled form field. */
export function field(id: string, label: string, control: HTMLElement, help?: string): HTMLElement {
  control.id = id;
  if (help) control.setAttribute('aria-describedby', `${id}-help`);
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, help ? h('p', { class: 'note', id: `${id}-help` }, help) : null);
}
