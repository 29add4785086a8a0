import { randomUUID } from 'node:crypto';
import { defineRoute, reply } from '../../http/route.ts';
import { conflict, invalidField, notFound } from '../../http/errors.ts';
import type { Services } from '../../services.ts';
import {
  CallSigningSecret,
  CreateWebhook,
  UpdateWebhook,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookDeliveryListQuery,
  WebhookDeliveryParams,
  WebhookList,
  WebhookListQuery,
  MAX_WEBHOOKS,
  WebhookParams,
  WebhookRetry,
  WebhookWithSecret,
} from '../../../../schemas/webhooks.ts';
import { checkUrl, ssrfOptions, SsrfBlockedError } from '../../net/ssrf.ts';
import { TEST_EVENT, type EventBody } from '../../../../shared/events.ts';
import { pauseMessages, resumeMessages, WebhookDeliverer } from './deliver.ts';
import { writeAudit } from '../audit-events/queries.ts';
import {
  insertTestMessage,
  notifyCancel,
  notifyDispatchers,
  deleteWebhook,
  deliveryForRetry,
  getDelivery,
  getWebhook,
  insertWebhook,
  listDeliveries,
  listWebhooks,
  countWebhooksLocked,
  orgSigningSecrets,
  queueRetry,
  rotateOrgSigningSecret,
  rotateWebhookSecret,
  updateWebhook,
} from './queries.ts';

/** Refuses URLs that can never be delivered: wrong scheme, http in production, private literal addresses. */
function checkWebhookUrl(services: Services, url: string): void {
  try {
    checkUrl(url, ssrfOptions(services.config));
  } catch (err) {
    if (err instanceof SsrfBlockedError) throw invalidField(['body', 'url'], `URL is not allowed: ${err.message}`, 'url_not_allowed', url);
    throw err;
  }
}

// Test deliveries are sent from the request; one deliverer (and its connection pool) per platform.
const deliverers = new WeakMap<Services, WebhookDeliverer>();
const delivererOf = (s: Services) => deliverers.get(s) ?? deliverers.set(s, new WebhookDeliverer(s)).get(s)!;

export const webhookRoutes = [
  defineRoute({
    method: 'post',
    path: '/webhooks',
    operationId: 'createWebhook',
    tag: 'webhooks',
    summary: 'Create a webhook',
    description:
      'Subscribes a URL to events. The answer carries the signing secret (`whsec_...`) once; deliveries are signed with it ' +
      'following Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature` headers).',
    body: CreateWebhook,
    status: 201,
    responses: { 201: { description: 'The webhook, with its signing secret', schema: WebhookWithSecret } },
    handler: async ({ body, auth, db, audit, services }) => {
      checkWebhookUrl(services, body.url);
      // The list answers every webhook at once (as the spec shows it), so an account's count is bounded.
      if ((await countWebhooksLocked(db, auth.orgId)) >= MAX_WEBHOOKS) {
        throw conflict(`An account has at most ${MAX_WEBHOOKS} webhooks; delete one first`, { max_webhooks: MAX_WEBHOOKS });
      }
      const row = await insertWebhook(db, services.secrets, auth.orgId, body);
      await audit({ action: 'webhook.create', resourceType: 'webhook', resourceId: row.id, details: { name: body.name, url: body.url, events: body.events } });
      return row;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/webhooks',
    operationId: 'listWebhooks',
    tag: 'webhooks',
    summary: 'List webhooks',
    description:
      `The webhooks of the account, newest first, in the list envelope. An account has at most ${MAX_WEBHOOKS}, so the ` +
      'default page holds all of them.',
    query: WebhookListQuery,
    responses: { 200: { description: 'Webhooks', schema: WebhookList } },
    handler: async ({ query, auth, db }) => {
      const { items, total } = await listWebhooks(db, auth.orgId, query);
      return { items, total, limit: query.limit, offset: query.offset };
    },
  }),
  // Registered before `/webhooks/:webhook_id`, which would otherwise take the path.
  defineRoute({
    method: 'get',
    path: '/webhooks/call-signing-secret',
    operationId: 'getCallSigningSecret',
    tag: 'webhooks',
    summary: "Get the signing secret of calls' own webhook URLs",
    description:
      'Events sent to the `webhook_url` of a call (rather than to a webhook) are signed with this account-wide secret. ' +
      'It is created on first use.',
    transaction: true,
    responses: { 200: { description: 'The secret', schema: CallSigningSecret } },
    handler: async ({ auth, db, services }) => {
      const s = await orgSigningSecrets(db, services.secrets, auth.orgId);
      return { secret: s.secrets[0], previous_secret_expires_at: s.previousExpiresAt };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/webhooks/call-signing-secret/rotate',
    operationId: 'rotateCallSigningSecret',
    tag: 'webhooks',
    summary: "Rotate the signing secret of calls' own webhook URLs",
    description: 'The previous secret keeps signing too (a second signature) for 24 hours.',
    responses: { 200: { description: 'The new secret', schema: CallSigningSecret } },
    handler: async ({ auth, db, services, audit }) => {
      const s = await rotateOrgSigningSecret(db, services.secrets, auth.orgId);
      await audit({ action: 'webhook.call_secret_rotate', resourceType: 'webhook', resourceId: null });
      return { secret: s.secrets[0], previous_secret_expires_at: s.previousExpiresAt };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/webhooks/:webhook_id',
    operationId: 'getWebhook',
    tag: 'webhooks',
    summary: 'Get a webhook',
    params: WebhookParams,
    responses: { 200: { description: 'The webhook', schema: Webhook } },
    handler: async ({ params, auth, db }) => {
      const row = await getWebhook(db, auth.orgId, params.webhook_id);
      if (!row) throw notFound('Webhook');
      return row;
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/webhooks/:webhook_id',
    operationId: 'updateWebhook',
    tag: 'webhooks',
    summary: 'Update a webhook',
    description:
      'Any of `name`, `url`, `events` (replaces the whole list) and `status`. `inactive` holds deliveries, which resume ' +
      'when the webhook is set `active` again (that also clears an automatic disabling).',
    params: WebhookParams,
    body: UpdateWebhook,
    responses: { 200: { description: 'The updated webhook', schema: Webhook } },
    handler: async ({ params, body, auth, db, audit, services }) => {
      if (body.url !== undefined) checkWebhookUrl(services, body.url);
      const row = await updateWebhook(db, auth.orgId, params.webhook_id, body);
      if (!row) throw notFound('Webhook');
      await audit({ action: 'webhook.update', resourceType: 'webhook', resourceId: params.webhook_id, details: { fields: Object.keys(body), ...body } });
      if (body.status === 'inactive') await pauseMessages(db, params.webhook_id);
      if (body.status === 'active') {
        // Paused deliveries go out at once.
        await resumeMessages(db, params.webhook_id);
        await notifyDispatchers(db);
      }
      return row;
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/webhooks/:webhook_id',
    operationId: 'deleteWebhook',
    tag: 'webhooks',
    summary: 'Delete a webhook',
    description: 'Removes the webhook, its pending deliveries and its delivery records. Requests in flight are aborted.',
    params: WebhookParams,
    status: 204,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ params, auth, db, audit }) => {
      if (!(await deleteWebhook(db, auth.orgId, params.webhook_id))) throw notFound('Webhook');
      await audit({ action: 'webhook.delete', resourceType: 'webhook', resourceId: params.webhook_id });
      await notifyCancel(db, params.webhook_id);
      return reply(204);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/webhooks/:webhook_id/rotate-secret',
    operationId: 'rotateWebhookSecret',
    tag: 'webhooks',
    summary: 'Rotate the signing secret of a webhook',
    description: 'Returns the new secret once. For 24 hours deliveries carry two signatures, one per secret, so receivers can switch over.',
    params: WebhookParams,
    responses: { 200: { description: 'The webhook, with its new signing secret', schema: WebhookWithSecret } },
    handler: async ({ params, auth, db, audit, services }) => {
      const row = await rotateWebhookSecret(db, services.secrets, auth.orgId, params.webhook_id);
      if (!row) throw notFound('Webhook');
      await audit({ action: 'webhook.rotate_secret', resourceType: 'webhook', resourceId: params.webhook_id });
      return row;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/webhooks/:webhook_id/test',
    operationId: 'testWebhook',
    tag: 'webhooks',
    summary: 'Send a test delivery',
    description:
      'Sends a `webhook.test` event to the webhook now, whatever its status and subscriptions, once (no retries), and ' +
      'returns the delivery record. Body: `{"id", "event": "webhook.test", "created_at", "webhook_id", "message"}`.',
    params: WebhookParams,
    // The request to the receiver must not hold a database transaction open.
    transaction: false,
    responses: { 200: { description: 'The delivery record of the attempt', schema: WebhookDelivery } },
    handler: async ({ params, auth, services, ctx }) => {
      const { sql } = services;
      const id = randomUUID();
      const createdAt = new Date().toISOString();
      const body: EventBody<typeof TEST_EVENT> = {
        id,
        event: TEST_EVENT,
        created_at: createdAt,
        webhook_id: params.webhook_id,
        message: 'Test delivery from vap. If you can read this, your endpoint works.',
      };
      const claimed = await sql.begin(async (tx) => {
        const m = await insertTestMessage(tx, {
          orgId: auth.orgId,
          webhookId: params.webhook_id,
          eventId: id,
          body: JSON.stringify(body),
          createdAt,
          lockMs: services.config.WEBHOOK_TIMEOUT_MS + 30_000,
        });
        if (!m) throw notFound('Webhook');
        await writeAudit(tx, {
          orgId: auth.orgId,
          actorType: auth.actorType,
          actorId: auth.actorId,
          action: 'webhook.test',
          resourceType: 'webhook',
          resourceId: params.webhook_id,
          requestId: ctx.state.requestId as string,
          ip: ctx.ip || null,
        });
        return m;
      });
      const outcome = await delivererOf(services).attempt(claimed, { final: true });
      const record = outcome.deliveryId ? await getDelivery(sql, outcome.deliveryId) : null;
      if (!record) throw notFound('Webhook'); // deleted while the test was in flight
      return record;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/webhooks/:webhook_id/deliveries',
    operationId: 'listWebhookDeliveries',
    tag: 'webhooks',
    summary: 'List delivery attempts',
    description:
      "Every attempt is a record. Most recent attempt first; filter by `event`, `status` and `call_id` (the attempts of that call's events).",
    params: WebhookParams,
    query: WebhookDeliveryListQuery,
    responses: { 200: { description: 'Delivery records', schema: WebhookDeliveryList } },
    handler: async ({ params, query, auth, db }) => {
      if (!(await getWebhook(db, auth.orgId, params.webhook_id))) throw notFound('Webhook');
      const { items, total } = await listDeliveries(db, auth.orgId, params.webhook_id, query);
      return { items, total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/webhooks/:webhook_id/deliveries/:delivery_id/retry',
    operationId: 'retryWebhookDelivery',
    tag: 'webhooks',
    summary: 'Retry a delivery',
    description:
      'Sends the event of this delivery record to the webhook once more, through the delivery worker: the same body and ' +
      '`webhook-id`, signed afresh, recorded as a new attempt (one more than the last attempt of this event to this ' +
      'webhook). A failure is retried on what is left of the retry schedule (nothing when the event had used it all). ' +
      'Any delivery record may be retried, a successful one too. 409 while an attempt of this event to this webhook is ' +
      'still waiting or in flight, and when the event is older than the delivery records\' retention. An inactive ' +
      'webhook holds the attempt (`paused`) until it is set active.',
    params: WebhookDeliveryParams,
    status: 202,
    responses: { 202: { description: 'The attempt is queued', schema: WebhookRetry } },
    handler: async ({ params, auth, db, audit }) => {
      if (!(await getWebhook(db, auth.orgId, params.webhook_id))) throw notFound('Webhook');
      const d = await deliveryForRetry(db, auth.orgId, params.webhook_id, params.delivery_id);
      if (!d) throw notFound('Delivery');
      if (!d.event_kept) throw conflict('The event of this delivery is no longer stored (older than the delivery records\' retention)');
      const queued = await queueRetry(db, auth.orgId, params.webhook_id, d.event_id, d.event, d.webhook_status !== 'active');
      if (!queued) throw conflict('An attempt of this event to this webhook is already waiting or in flight');
      await audit({
        action: 'webhook.delivery_retry',
        resourceType: 'webhook',
        resourceId: params.webhook_id,
        details: { delivery_id: params.delivery_id, event_id: d.event_id, attempt: queued.attempt },
      });
      // At commit: the dispatchers take it at once.
      await notifyDispatchers(db);
      return reply(202, { delivery_id: params.delivery_id, webhook_id: params.webhook_id, event_id: d.event_id, event: d.event, attempt: queued.attempt, status: queued.status });
    },
  }),
];
