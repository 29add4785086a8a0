// Knowledge bases: the list, and a base's sources with their ingestion progress (refreshed while any is queued
// or processing), errors in words, re-ingest in place, add and delete.
import { api, ApiError, apiUrl, authorization } from '../../playground/api.ts';
import {
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
  clearFieldErrors,
  type PageContext,
} from '../app.ts';
import { fmtDate, h, table } from '../dom.ts';
import type { List } from './calls.ts';

interface Source {
  source_id: string;
  type: 'url' | 'file' | 'text';
  source: string;
  chunk_count: number;
  status: 'queued' | 'processing' | 'ready' | 'error';
  error_message: string | null;
  created_at: string;
}
interface Base {
  kb_id: string;
  name: string;
  mode: string;
  language: string;
  total_tokens: number;
  created_at: string;
  sources: Source[];
}

export async function knowledgeBasesPage({ view, signal }: PageContext): Promise<void> {
  view.append(header('Knowledge bases'));
  focusHeading();
  const list = await api<List<Base>>('/v1/knowledge-bases?limit=100', { signal });
  view.append(
    table(
      `${list.total} knowledge bases`,
      ['Name', 'Sources', 'Tokens', 'Created'],
      list.items.map((b) => [
        h('a', { href: href(`/knowledge-bases/${b.kb_id}`) }, b.name),
        `${b.sources.length} (${b.sources.filter((s) => s.status === 'error').length} in error)`,
        String(b.total_tokens),
        fmtDate(b.created_at),
      ]),
      { rowHeader: true },
    ),
  );
  const name = h('input', { type: 'text', autocomplete: 'off', 'data-path': 'name' });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h(
    'form',
    { novalidate: true, 'aria-label': 'New knowledge base' },
    errorSummary(),
    field('kb-name', 'Name', name),
    h('div', { class: 'buttons' }, h('button', { type: 'submit' }, 'Create knowledge base')),
    status,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void api<Base>('/v1/knowledge-bases', { method: 'POST', body: { name: name.value.trim() } }).then(
      (b) => navigate(`/knowledge-bases/${b.kb_id}`),
      (err: unknown) => {
        if (!showFieldErrors(form, err)) status.replaceChildren(problem(err));
      },
    );
  });
  view.append(h('section', { 'aria-labelledby': 'kb-new' }, h('h2', { id: 'kb-new' }, 'New knowledge base'), form));
}

const STATUS_WORDS: Record<Source['status'], string> = { queued: 'Waiting to be read', processing: 'Being read and indexed', ready: 'Ready', error: 'Failed' };

export async function knowledgeBasePage({ view, params: [id], signal }: PageContext): Promise<void> {
  let base: Base;
  try {
    base = await api<Base>(`/v1/knowledge-bases/${encodeURIComponent(id!)}`, { signal });
  } catch (err) {
    if (err instanceof ApiError && (err.status === 404 || err.status === 422)) {
      showNotFound(view, 'Knowledge base not found', new ApiError(404, ''), 'This knowledge base', { href: '#/knowledge-bases', label: 'Back to the knowledge bases' });
      return;
    }
    throw err;
  }
  view.append(header(base.name, h('a', { class: 'button secondary', href: '#/knowledge-bases' }, 'All knowledge bases')));
  focusHeading();
  const sources = h('div', { 'aria-live': 'polite' });
  const msg = h('div', { 'aria-live': 'polite' });
  let timer: ReturnType<typeof setTimeout> | null = null;
  signal.addEventListener('abort', () => timer && clearTimeout(timer));

  const reingest = (s: Source) => api(`/v1/knowledge-bases/${base.kb_id}/sources/${s.source_id}/reingest`, { method: 'POST' });
  const remove = (s: Source) => api(`/v1/knowledge-bases/${base.kb_id}/sources/${s.source_id}`, { method: 'DELETE' });

  const draw = (list: Source[]) => {
    sources.replaceChildren(
      table(
        'Sources',
        ['Source', 'Type', 'Progress', 'Chunks', 'Added', 'Actions'],
        list.map((s) => [
          s.source,
          s.type,
          h(
            'div',
            null,
            s.status === 'processing' || s.status === 'queued' ? h('progress', { 'aria-label': `${s.source}: ${STATUS_WORDS[s.status]}` }) : null,
            h('span', { class: `status s-${s.status}` }, ` ${STATUS_WORDS[s.status]}`),
            // Being read again: the previous chunks answer until the new ones replace them.
            (s.status === 'processing' || s.status === 'queued') && s.chunk_count > 0 ? h('p', null, 'Being read again; agents use the previous content meanwhile.') : null,
            s.error_message ? h('p', { class: 'bad' }, s.error_message) : null,
          ),
          String(s.chunk_count),
          fmtDate(s.created_at),
          h(
            'div',
            { class: 'buttons' },
            // Re-ingest reads the same source again in place (a URL re-crawled, a file or text re-parsed).
            s.status === 'ready' || s.status === 'error'
              ? h(
                  'button',
                  {
                    type: 'button',
                    class: 'secondary small',
                    'aria-label': `Re-ingest ${s.source}`,
                    onclick: () =>
                      void reingest(s).then(
                        () => {
                          msg.replaceChildren(notice(`Reading ${s.source} again.`));
                          void refresh();
                        },
                        (err: unknown) => msg.replaceChildren(problem(err)),
                      ),
                  },
                  'Re-ingest',
                )
              : null,
            h(
              'button',
              {
                type: 'button',
                class: 'danger small',
                'aria-label': `Delete ${s.source}`,
                onclick: () =>
                  void confirmDialog(
                    'Delete this source?',
                    `"${s.source}" and its chunks leave the knowledge base; agents stop using it.`,
                    'Delete source',
                  ).then((ok) => {
                    if (ok)
                      void remove(s).then(
                        () => void refresh(),
                        (err: unknown) => msg.replaceChildren(problem(err)),
                      );
                  }),
              },
              'Delete',
            ),
          ),
        ]),
        { rowHeader: true },
      ),
    );
  };
  const refresh = async (): Promise<void> => {
    if (timer) clearTimeout(timer);
    try {
      const b = await api<Base>(`/v1/knowledge-bases/${base.kb_id}`, { signal });
      draw(b.sources);
      if (b.sources.some((s) => s.status === 'queued' || s.status === 'processing')) timer = setTimeout(() => void refresh(), 2000);
    } catch (err) {
      if (!signal.aborted) sources.replaceChildren(problem(err, () => void refresh()));
    }
  };
  draw(base.sources);
  if (base.sources.some((s) => s.status === 'queued' || s.status === 'processing')) timer = setTimeout(() => void refresh(), 2000);

  // Add a URL, a text or a file (multipart, as the API takes them).
  const kind = h(
    'select',
    { 'data-path': 'type' },
    h('option', { value: 'url' }, 'A web page (URL)'),
    h('option', { value: 'text' }, 'Text'),
    h('option', { value: 'file' }, 'A file'),
  );
  const url = h('input', { type: 'url', autocomplete: 'off', 'data-path': 'url' });
  const text = h('textarea', { rows: 4, 'data-path': 'text' });
  const file = h('input', { type: 'file', 'data-path': 'file' });
  const status = h('div', { 'aria-live': 'polite' });
  const form = h(
    'form',
    { novalidate: true, 'aria-label': 'Add a source' },
    errorSummary(),
    field('s-kind', 'Kind', kind),
    field('s-url', 'URL', url),
    field('s-text', 'Text', text),
    field('s-file', 'File', file, 'PDF, Word, HTML, Markdown, text or CSV'),
    h('div', { class: 'buttons' }, h('button', { type: 'submit' }, 'Add source')),
    status,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const data = new FormData();
    data.append('type', kind.value);
    if (kind.value === 'url') data.append('url', url.value.trim());
    if (kind.value === 'text') data.append('text', text.value);
    if (kind.value === 'file' && file.files?.[0]) data.append('file', file.files[0]);
    void fetch(apiUrl(`/v1/knowledge-bases/${base.kb_id}/sources`), {
      method: 'POST',
      headers: { authorization: authorization() },
      body: data,
      credentials: 'omit',
      cache: 'no-store',
    })
      .then(async (res) => {
        const body: unknown = await res.json().catch(() => null);
        if (!res.ok)
          throw new ApiError(
            res.status,
            (body as { detail?: unknown } | null)?.detail && typeof (body as { detail: unknown }).detail === 'string'
              ? String((body as { detail: string }).detail)
              : `HTTP ${res.status}`,
            body,
          );
      })
      .then(
        () => {
          clearFieldErrors(form);
          form.reset();
          status.replaceChildren(notice('Source added; it is being read.'));
          void refresh();
        },
        (err: unknown) => {
          if (!showFieldErrors(form, err)) status.replaceChildren(problem(err));
        },
      );
  });
  view.append(
    h('section', { 'aria-labelledby': 'kb-sources' }, h('h2', { id: 'kb-sources' }, 'Sources'), msg, sources),
    h('section', { 'aria-labelledby': 'kb-add' }, h('h2', { id: 'kb-add' }, 'Add a source'), form),
    h(
      'section',
      { 'aria-labelledby': 'kb-delete' },
      h('h2', { id: 'kb-delete' }, 'Delete'),
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          onclick: () =>
            void confirmDialog(
              `Delete ${base.name}?`,
              `The knowledge base "${base.name}" and all its sources are deleted; agents using it stop finding anything in it.`,
              `Delete ${base.name}`,
            ).then((ok) => {
              if (ok)
                void api(`/v1/knowledge-bases/${base.kb_id}`, { method: 'DELETE' }).then(
                  () => navigate('/knowledge-bases'),
                  (err: unknown) => msg.replaceChildren(problem(err)),
                );
            }),
        },
        'Delete this knowledge base',
      ),
    ),
  );
}
