// Webhooks, their delivery records and the signing secrets.
import { Type, DateTime, Nullable, Strict, ListEnvelope, Pagination, StringEnum, Uuid, type Static } from './common.ts';
import { ALL_EVENTS, SUBSCRIBABLE_EVENT_NAMES, TEST_EVENT } from '../shared/events.ts';

export const SUBSCRIBABLE_EVENTS = [...SUBSCRIBABLE_EVENT_NAMES, ALL_EVENTS] as const;
export const WEBHOOK_STATUSES = ['active', 'inactive'] as const;
export const DELIVERY_STATUSES = ['succeeded', 'retrying', 'failed'] as const;

const Name = Type.String({ minLength: 1, maxLength: 255 });
const Url = Type.String({
  format: 'http-url',
  maxLength: 2048,
  description: 'Where events are POSTed. Must resolve to a public address (checked at every delivery); https in production.',
});
const Events = Type.Array(StringEnum(SUBSCRIBABLE_EVENTS), {
  minItems: 1,
  uniqueItems: true,
  description: `Event names to receive: call, campaign and test-run events; "${ALL_EVENTS}" means every event, including ones added later.`,
});

const webhookExample = {
  id: '0d6b9a52-3f1e-4c1a-9d7e-2f5a8e0c4b11',
  name: 'CRM sync',
  url: 'https://hooks.example.com/vap',
  events: ['call.ended', 'call.analyzed'],
  status: 'active',
  disabled_reason: null,
  disabled_at: null,
  failing_since: null,
  created_at: '2025-01-01T12:00:00.000Z',
  updated_at: '2025-01-01T12:00:00.000Z',
};

export const Webhook = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    url: Type.String(),
    events: Type.Array(Type.String()),
    status: StringEnum(WEBHOOK_STATUSES, { description: '`inactive` holds deliveries (paused) until set `active` again' }),
    disabled_reason: Nullable(Type.String({ description: 'Why the platform set the webhook inactive: `failing` (no successful delivery for too long) or `gone` (the receiver answered 410 Gone)' })),
    disabled_at: Nullable(DateTime()),
    failing_since: Nullable(DateTime({ description: 'First failed attempt since the last success' })),
    created_at: DateTime(),
    updated_at: DateTime(),
  },
  { title: 'Webhook', additionalProperties: false, examples: [webhookExample] },
);
export type Webhook = Static<typeof Webhook>;

const Secret = Type.String({ description: 'Standard Webhooks signing secret (`whsec_` + base64). Shown only here.', examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] });

export const WebhookWithSecret = Type.Composite([Webhook, Type.Object({ secret: Secret })], {
  title: 'WebhookWithSecret',
  additionalProperties: false,
  examples: [{ ...webhookExample, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
});

export const CreateWebhook = Strict({ name: Name, url: Url, events: Events }, { title: 'CreateWebhook' });

export const UpdateWebhook = Strict(
  {
    name: Type.Optional(Name),
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    status: Type.Optional(StringEnum(WEBHOOK_STATUSES)),
  },
  { title: 'UpdateWebhook' },
);

export const WebhookParams = Strict({ webhook_id: Uuid() });
/** An account's webhooks are bounded, so the default page (100) holds all of them: "all webhooks of the account". */
export const MAX_WEBHOOKS = 100;
export const WebhookListQuery = Pagination({ default: MAX_WEBHOOKS, maximum: MAX_WEBHOOKS });
export const WebhookList = ListEnvelope(Webhook, 'Webhook');

export const WebhookDelivery = Type.Object(
  {
    id: Uuid(),
    webhook_id: Nullable(Uuid()),
    event_id: Uuid({ description: 'The event id, also sent as the `webhook-id` header: the same on every attempt' }),
    event: Type.String(),
    url: Type.String({ description: 'Where this attempt was sent' }),
    status: StringEnum(DELIVERY_STATUSES, {
      description: '`succeeded`; `retrying` (failed, another attempt at `next_retry_at`); `failed` (failed, no attempt follows)',
    }),
    attempt: Type.Integer({ minimum: 1 }),
    response_status: Nullable(Type.Integer()),
    response_body: Nullable(Type.String({ description: 'The first 4 KB of the answer' })),
    error: Nullable(Type.String({ description: 'Why the attempt failed: timeout, dns, connection refused, tls, blocked address, unexpected status...' })),
    duration_ms: Type.Integer(),
    next_retry_at: Nullable(DateTime()),
    completed_at: DateTime(),
    created_at: DateTime({ description: 'When the attempt started' }),
  },
  {
    title: 'WebhookDelivery',
    additionalProperties: false,
    examples: [
      {
        id: '7a0c2d3e-5b1f-4e8a-9c6d-1e2f3a4b5c6d',
        webhook_id: webhookExample.id,
        event_id: '1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9',
        event: 'call.ended',
        url: webhookExample.url,
        status: 'retrying',
        attempt: 1,
        response_status: 503,
        response_body: 'upstream unavailable',
        error: 'unexpected status 503',
        duration_ms: 84,
        next_retry_at: '2025-01-01T12:00:05.300Z',
        completed_at: '2025-01-01T12:00:00.084Z',
        created_at: '2025-01-01T12:00:00.000Z',
      },
    ],
  },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookDeliveryList = ListEnvelope(WebhookDelivery, 'WebhookDelivery');
export const WebhookDeliveryQuery = Type.Composite(
  [
    Pagination({ default: 50, maximum: 200 }),
    Type.Object({
      event: Type.Optional(StringEnum([...SUBSCRIBABLE_EVENT_NAMES, TEST_EVENT] as const)),
      status: Type.Optional(StringEnum(DELIVERY_STATUSES)),
    }),
  ],
  { additionalProperties: false },
);

/** GET /v1/webhooks/{webhook_id}/deliveries: the deliveries' filters, and one call's. */
export const WebhookDeliveryListQuery = Type.Composite(
  [WebhookDeliveryQuery, Type.Object({ call_id: Type.Optional(Uuid({ description: "Only the attempts of this call's events" })) })],
  { additionalProperties: false },
);

export const WebhookDeliveryParams = Strict({ webhook_id: Uuid(), delivery_id: Uuid() });

/** POST /v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry: the attempt now queued. */
export const WebhookRetry = Type.Object(
  {
    delivery_id: Uuid({ description: 'The delivery record retried' }),
    webhook_id: Uuid(),
    event_id: Uuid({ description: 'The event sent again: the same `webhook-id` header, so receivers can deduplicate' }),
    event: Type.String(),
    attempt: Type.Integer({ minimum: 1, description: 'The number the new attempt will have: one more than the last attempt of this event to this webhook' }),
    status: StringEnum(['pending', 'paused'] as const, {
      description: '`pending`: the delivery worker sends it within moments; `paused`: the webhook is inactive, and it goes out when the webhook is set active',
    }),
  },
  {
    title: 'WebhookRetry',
    additionalProperties: false,
    examples: [
      {
        delivery_id: '7a0c2d3e-5b1f-4e8a-9c6d-1e2f3a4b5c6d',
        webhook_id: webhookExample.id,
        event_id: '1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9',
        event: 'call.ended',
        attempt: 9,
        status: 'pending',
      },
    ],
  },
);

export const CallSigningSecret = Type.Object(
  {
    secret: Secret,
    previous_secret_expires_at: Nullable(DateTime({ description: 'Until then the previous secret signs too (a second signature)' })),
  },
  { title: 'CallSigningSecret', additionalProperties: false },
);
