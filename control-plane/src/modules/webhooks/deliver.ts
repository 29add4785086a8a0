// One delivery attempt: the body rendered for this attempt (render.ts), a signed POST through the SSRF guard,
// then one statement that records the attempt, moves the message on (done, or back to pending at its next
// retry time) and tracks endpoint failures.
import client from 'prom-client';
import type { Agent } from 'undici';
import type { Services } from '../../services.ts';
import type { Db } from '../../db/types.ts';
import { createGuardedAgent, describeRequestError, guardedRequest, type SsrfOptions } from '../../net/ssrf.ts';
import { ssrfOptions } from '../../net/ssrf.ts';
import { signatureHeaders } from '../../../../shared/signing.ts';
import { writeAudit } from '../audit-events/queries.ts';
import { renderBody } from './render.ts';
import { GONE, isRetriableStatus, nextDelay, parseRetryAfter, parseSchedule } from './retry.ts';
import { openWebhookSecrets, orgSigningSecrets, recordAttempt, setFailingInactive, setInactive, pauseMessages, type ClaimedMessage } from './queries.ts';

export { pauseMessages, resumeMessages, type ClaimedMessage } from './queries.ts';

/** Stored answer size: enough to read an error page's message, small enough to keep millions of records. */
export const RESPONSE_BODY_LIMIT = 4096;

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
    let gone = false;
    let retryAfterMs: number | undefined;
    try {
      const keys = m.webhook_id ? openWebhookSecrets(secrets, m.webhook_id, m) : (await orgSigningSecrets(sql, secrets, m.org_id)).secrets;
      // Signed over what this attempt sends: a body with fields made at send time differs between attempts.
      const body = await renderBody(this.services, m.event_type, m.body);
      const res = await guardedRequest(this.agent, m.endpoint, this.ssrf, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'vap-webhooks/1',
          ...signatureHeaders(keys, m.event_id, body),
        },
        body,
        timeoutMs: config.WEBHOOK_TIMEOUT_MS,
        maxResponseBytes: RESPONSE_BODY_LIMIT,
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      status = res.status;
      responseBody = res.body;
      if (status < 200 || status >= 300) {
        retriable = isRetriableStatus(status);
        // A call's own URL has no webhook to set inactive: its 410 is final. A webhook's is held (below).
        gone = status === GONE;
        if (gone && !m.webhook_id) retriable = false;
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
    // Set inactive before the attempt is recorded, so this message is held with the others (not retried first).
    if (gone && m.webhook_id && !opts.final) await disableWebhook(this.services, m.webhook_id, 'gone');
    const { deliveryId, unblocks } = await this.record(m, { outcome, status, responseBody, error, startedAt, completedAt, nextAttemptAt });
    return { deliveryId, status: outcome, nextAttemptAt, unblocks };
  }

  private async record(
    m: ClaimedMessage,
    r: { outcome: AttemptOutcome['status']; status: number | null; responseBody: string | null; error: string | null; startedAt: Date; completedAt: Date; nextAttemptAt: Date | null },
  ): Promise<{ deliveryId: string | null; unblocks: boolean }> {
    const { sql, log } = this.services;
    try {
      const row = await recordAttempt(sql, m, r);
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

/** What every automatic disabling does once the row is inactive: hold its messages, audit, log. */
async function heldAndAudited(services: Services, tx: Db, w: { id: string; org_id: string }, details: Record<string, string>, why: string): Promise<void> {
  await pauseMessages(tx, w.id);
  await writeAudit(tx, {
    orgId: w.org_id,
    actorType: 'system',
    actorId: null,
    action: 'webhook.disable',
    resourceType: 'webhook',
    resourceId: w.id,
    details,
  });
  services.log.warn({ webhook_id: w.id, org_id: w.org_id }, `webhook disabled: ${why}`);
}

/**
 * Sets a webhook inactive because its receiver answered 410 Gone (as Svix does): its messages are held, not
 * dropped, and go out if the account sets it active again. Audited like the failing case.
 */
export async function disableWebhook(services: Services, webhookId: string, reason: 'gone'): Promise<void> {
  await services.sql.begin(async (tx) => {
    const w = await setInactive(tx, webhookId, reason);
    if (w) await heldAndAudited(services, tx, w, { reason }, 'the receiver answered 410 Gone');
  });
}

/** Sets a failing webhook inactive (if it still is failing past the limit) and audits it. */
export async function disableFailingWebhook(services: Services, webhookId: string | null, limitMs: number): Promise<number> {
  return services.sql.begin(async (tx) => {
    const rows = await setFailingInactive(tx, webhookId, limitMs);
    for (const w of rows) {
      await heldAndAudited(services, tx, w, { reason: 'failing', failing_since: w.failing_since.toISOString() }, 'failing too long');
    }
    return rows.length;
  });
}
