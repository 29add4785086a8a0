// A call's or a webhook's delivery attempts: their request and response, and a retry for each.
import { api, ApiError } from '../../playground/api.ts';
import { notice, problem } from '../app.ts';
import { dash, facts, fmtDate, h, table } from '../dom.ts';

export interface Delivery {
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
