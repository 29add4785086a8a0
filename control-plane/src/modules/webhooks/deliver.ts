// One delivery attempt: a signed POST through the SSRF guard, then one statement that records the attempt,
// moves the message on (done, or back to pending at its next retry time) and tracks endpoint failures.
import client from 'prom-client';
import type { Agent } from 'undici';
import type { Services } from '../../services.ts';
import { createGuardedAgent, describeRequestError, guardedRequest, type SsrfOptions } from '../../net/ssrf.ts';
import { ssrfOptions } from '../../net/ssrf.ts';
import { signatureHeaders } from '../../../../shared/signing.ts';
import { writeAudit } from '../audit-events/queries.ts';
import type { Db } from '../../db/types.ts';
import { isRetriableStatus, nextDelay, parseRetryAfter, parseSchedule } from './retry.ts';
import { openWebhookSecrets, orgSigningSecrets } from './queries.ts';

/** Stored answer size: enough to read an error page's message, small enough to keep millions of records. */
export const RESPONSE_BODY_LIMIT = 4096;

/** A message the caller has claimed (status `delivering`), with what is needed to send it. */
export interface ClaimedMessage {
  id: string;
  org_id: string;
  event_id: string;
  event_type: string;
  webhook_id: string | null;
  target: string;
  /** Endpoint + call: later messages with this key wait for this one. */
  order_key: string | null;
  /** The attempt number being made (1-based). */
  attempts: number;
  body: string;
  endpoint: string;
  secret_ciphertext: Buffer | null;
  secret_key_version: number | null;
  previous_secret_ciphertext: Buffer | null;
  previous_secret_key_version: number | null;
  previous_secret_expires_at: Date | null;
}

export interface AttemptOutcome {
  deliveryId: string | null;
  status: 'succeeded' | 'retrying' | 'failed';
  nextAttemptAt: Date | null;
  /** A later message of the same call and endpoint was waiting for this one to finish. */
  unblocks: boolean;
}

export class WebhookDeliverer {
  readonly agent: Agent;
  private readonly services: Services;
  private readonly ssrf: SsrfOptions;
  private readonly schedule: number[];
  private readonly attempts: client.Counter<'result'>;

  constructor(services: Services, opts: { ssrf?: SsrfOptions } = {}) {
    this.services = services;
    this.ssrf = opts.ssrf ?? ssrfOptions(services.config);
    this.schedule = parseSchedule(services.config.WEBHOOK_RETRY_SCHEDULE);
    // No connection cap per origin: endpoints of different customers often share a host, and the dispatcher
    // already bounds the requests in flight per endpoint.
    this.agent = createGuardedAgent({ ...this.ssrf, connectTimeoutMs: services.config.WEBHOOK_TIMEOUT_MS });
    const registry = services.metrics.registry;
    this.attempts =
      (registry.getSingleMetric('vap_webhook_attempts_total') as client.Counter<'result'> | undefined) ??
      new client.Counter({ name: 'vap_webhook_attempts_total', help: 'Webhook delivery attempts by result', labelNames: ['result'], registers: [registry] });
  }

  /** Sends the message once and records the attempt. `final` makes a failure the last attempt (test deliveries). */
  async attempt(m: ClaimedMessage, opts: { final?: boolean; signal?: AbortSignal } = {}): Promise<AttemptOutcome> {
    const { sql, config, secrets, log } = this.services;
    const startedAt = new Date();
    let status: number | null = null;
    let responseBody: string | null = null;
    let error: string | null = null;
    let retriable = true;
    let retryAfterMs: number | undefined;
    try {
      const keys = m.webhook_id ? openWebhookSecrets(secrets, m.webhook_id, m) : (await orgSigningSecrets(sql, secrets, m.org_id)).secrets;
      const res = await guardedRequest(this.agent, m.endpoint, this.ssrf, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'vap-webhooks/1',
          ...signatureHeaders(keys, m.event_id, m.body),
        },
        body: m.body,
        timeoutMs: config.WEBHOOK_TIMEOUT_MS,
        maxResponseBytes: RESPONSE_BODY_LIMIT,
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      status = res.status;
      responseBody = res.body;
      if (status < 200 || status >= 300) {
        retriable = isRetriableStatus(status);
        retryAfterMs = parseRetryAfter(res.headers['retry-after']);
        error = status >= 300 && status < 400 ? `redirect not followed (status ${status})` : `unexpected status ${status}`;
      }
    } catch (err) {
      const d = describeRequestError(err);
      error = opts.signal?.aborted ? 'cancelled: the webhook was deleted' : d.message;
      if (d.kind === 'network') log.warn({ err, webhook_id: m.webhook_id }, 'webhook attempt failed unexpectedly');
    }
    const completedAt = new Date();
    const ok = error === null;
    const delay = ok || !retriable || opts.final ? null : nextDelay(this.schedule, m.attempts, retryAfterMs);
    const outcome: AttemptOutcome['status'] = ok ? 'succeeded' : delay === null ? 'failed' : 'retrying';
    const nextAttemptAt = delay === null ? null : new Date(completedAt.getTime() + delay);
    this.attempts.inc({ result: outcome });
    const { deliveryId, unblocks } = await this.record(m, { outcome, status, responseBody, error, startedAt, completedAt, nextAttemptAt });
    return { deliveryId, status: outcome, nextAttemptAt, unblocks };
  }

  private async record(
    m: ClaimedMessage,
    r: { outcome: AttemptOutcome['status']; status: number | null; responseBody: string | null; error: string | null; startedAt: Date; completedAt: Date; nextAttemptAt: Date | null },
  ): Promise<{ deliveryId: string | null; unblocks: boolean }> {
    const { sql, log } = this.services;
    const done = r.outcome !== 'retrying';
    // Failure tracking touches the webhook row only when its state changes, so steady successful traffic
    // never writes (or locks) it.
    // A retried message holds back the later messages of its call: they are not due before it is.
    const holdBack =
      r.outcome === 'retrying' && m.order_key
        ? sql`, hold as (
            update webhook_messages set next_attempt_at = ${r.nextAttemptAt}
            where order_key = ${m.order_key} and id > ${m.id} and status in ('pending', 'paused') and next_attempt_at < ${r.nextAttemptAt})`
        : sql``;
    const tracking = !m.webhook_id
      ? sql``
      : r.outcome === 'succeeded'
        ? sql`, ok as (update webhooks set failing_since = null where id = ${m.webhook_id} and failing_since is not null)`
        : sql`, ko as (update webhooks set failing_since = ${r.completedAt} where id = ${m.webhook_id} and failing_since is null)`;
    try {
      const [row] = await sql<{ id: string | null; failing_since: Date | null; unblocks: boolean }[]>`
        with msg as (
          ${
            done
              ? // Finished messages leave the table (the attempts stay in webhook_deliveries): the queue stays
                // small, and a delete writes no index entries.
                sql`delete from webhook_messages where id = ${m.id} and status = 'delivering' returning id`
              : sql`
                update webhook_messages set status = 'pending', next_attempt_at = ${r.nextAttemptAt}, locked_until = null
                where id = ${m.id} and status = 'delivering'
                returning id`
          }
        ),
        rec as (
          insert into webhook_deliveries (org_id, webhook_id, event_id, event, url, status, attempt, response_status, response_body,
                                          error, duration_ms, next_retry_at, completed_at, created_at)
          select ${m.org_id}, ${m.webhook_id}, ${m.event_id}, ${m.event_type}, ${m.endpoint}, ${r.outcome}, ${m.attempts}, ${r.status},
                 ${r.responseBody}, ${r.error}, ${r.completedAt.getTime() - r.startedAt.getTime()}, ${r.nextAttemptAt},
                 ${r.completedAt}, ${r.startedAt}
          from msg
          returning id
        )
        ${holdBack}
        ${tracking}
        select (select id from rec) as id,
               ${m.webhook_id ? sql`(select failing_since from webhooks where id = ${m.webhook_id})` : sql`null::timestamptz`} as failing_since,
               ${
                 done && m.order_key
                   ? sql`exists (select 1 from webhook_messages n where n.order_key = ${m.order_key} and n.id > ${m.id} and n.status = 'pending')`
                   : sql`false`
               } as unblocks`;
      if (r.outcome !== 'succeeded' && m.webhook_id && row?.failing_since) await this.maybeDisable(m.webhook_id, row.failing_since);
      return { deliveryId: row?.id ?? null, unblocks: row?.unblocks ?? false };
    } catch (err) {
      // The webhook was deleted while the attempt was in flight: nothing is left to record.
      if ((err as { code?: string }).code === '23503') return { deliveryId: null, unblocks: false };
      log.error({ err, message_id: m.id }, 'recording a webhook attempt failed');
      throw err;
    }
  }

  /** An endpoint without a single success for WEBHOOK_DISABLE_AFTER_HOURS is set inactive, with an audit event. */
  private async maybeDisable(webhookId: string, failingSince: Date): Promise<void> {
    const limitMs = this.services.config.WEBHOOK_DISABLE_AFTER_HOURS * 3_600_000;
    if (Date.now() - failingSince.getTime() < limitMs) return;
    await disableFailingWebhook(this.services, webhookId, limitMs);
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** Sets a failing webhook inactive (if it still is failing past the limit) and audits it. */
export async function disableFailingWebhook(services: Services, webhookId: string | null, limitMs: number): Promise<number> {
  return services.sql.begin(async (tx) => {
    const rows = await tx<{ id: string; org_id: string; failing_since: Date }[]>`
      update webhooks set status = 'inactive', disabled_reason = 'failing', disabled_at = now(), updated_at = now()
      where status = 'active' and failing_since < now() - ${limitMs} * interval '1 millisecond'
        ${webhookId ? tx`and id = ${webhookId}` : tx``}
      returning id, org_id, failing_since`;
    for (const w of rows) {
      await pauseMessages(tx, w.id);
      await writeAudit(tx, {
        orgId: w.org_id,
        actorType: 'system',
        actorId: null,
        action: 'webhook.disable',
        resourceType: 'webhook',
        resourceId: w.id,
        details: { reason: 'failing', failing_since: w.failing_since.toISOString() },
      });
      services.log.warn({ webhook_id: w.id, org_id: w.org_id }, 'webhook disabled after failing too long');
    }
    return rows.length;
  });
}

/** An inactive webhook's waiting messages are `paused`: out of the dispatcher's scan until it is active again. */
export async function pauseMessages(db: Db, webhookId: string): Promise<void> {
  await db`update webhook_messages set status = 'paused' where webhook_id = ${webhookId} and status = 'pending'`;
}

export async function resumeMessages(db: Db, webhookId: string): Promise<void> {
  await db`update webhook_messages set status = 'pending' where webhook_id = ${webhookId} and status = 'paused'`;
}
