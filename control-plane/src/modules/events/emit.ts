// Emitting an event: the outbox row and one delivery task per endpoint are written with the caller's
// transaction, so they commit (or roll back) together with the state change that causes the event. A
// NOTIFY, delivered by PostgreSQL only at commit, wakes the dispatchers at once.
//
// Routing (docs/decisions/015-webhooks-and-events.md): every webhook of the account subscribed to the event
// gets it, and a call's own `webhook_url` gets every event of that call; each destination once per event. A
// call's `webhook_url` is a destination apart even when a webhook has the same URL (it is not folded into it).
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/types.ts';
import type { EventName, StoredPayload } from '../../../../shared/events.ts';
import { dropSupersededPartials, insertEventAndMessages, notifyWebhookChannel, WEBHOOK_CHANNEL } from './queries.ts';

export { WEBHOOK_CHANNEL };

export interface EmitInput<T extends EventName> {
  orgId: string;
  type: T;
  callId?: string | null;
  agentId?: string | null;
  /** The call's own webhook URL; it receives every event of the call. */
  webhookUrl?: string | null;
  /** When the event happened, if not now: `call.started` carries the moment the call connected. */
  createdAt?: string;
  /** Without the fields each delivery attempt renders (shared/events.ts, RenderedAtDelivery). */
  payload: StoredPayload<T>;
}

export interface EmittedEvent {
  id: string;
  createdAt: string;
  /** How many endpoints the event was routed to. */
  messages: number;
}

/** Writes the event and its delivery tasks inside `db`, which must be the transaction of the state change. */
export async function emitEvent<T extends EventName>(db: Db, e: EmitInput<T>): Promise<EmittedEvent> {
  const id = randomUUID();
  const createdAt = e.createdAt ? new Date(e.createdAt).toISOString() : new Date().toISOString();
  const body = { id, event: e.type, created_at: createdAt, ...e.payload };
  const callId = e.callId ?? null;
  const url = e.webhookUrl ?? null;

  const rows = await insertEventAndMessages(db, { id, createdAt, orgId: e.orgId, type: e.type, callId, agentId: e.agentId ?? null, url, body: JSON.stringify(body) });
  if (rows.length) {
    if (e.type === 'transcript.partial') await dropSupersededPartials(db, rows);
    await notifyWebhookChannel(db);
  }
  return { id, createdAt, messages: rows.length };
}
