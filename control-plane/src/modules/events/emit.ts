// Emitting an event: the outbox row and one delivery task per endpoint are written with the caller's
// transaction, so they commit (or roll back) together with the state change that causes the event. A
// NOTIFY, delivered by PostgreSQL only at commit, wakes the dispatchers at once.
//
// Routing (docs/decisions.md, "Webhooks and events"):
//   1. the call's own `webhook_url`, when given, receives every event of that call;
//   2. plus ONE set of account webhooks, each only for the events it subscribes to:
//      the agent's `webhook_id` if set, else the workspace default (orgs.default_webhook_id),
//      else every webhook of the account.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/types.ts';
import type { EventBody, EventName, EventPayloads } from '../../../../shared/events.ts';

export const WEBHOOK_CHANNEL = 'vap_webhooks';

export interface EmitInput<T extends EventName> {
  orgId: string;
  type: T;
  callId?: string | null;
  agentId?: string | null;
  /** The call's own webhook URL; it receives every event of the call. */
  webhookUrl?: string | null;
  payload: EventPayloads[T];
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
  const createdAt = new Date().toISOString();
  const body = { id, event: e.type, created_at: createdAt, ...e.payload } as EventBody<T>;
  const callId = e.callId ?? null;
  const url = e.webhookUrl ?? null;

  const agentWebhook = e.agentId ? db`(select a.webhook_id from agents a where a.id = ${e.agentId} and a.org_id = ${e.orgId})` : db`null::uuid`;

  // The body goes in as text cast to json: json keeps the exact bytes (and key order) that will be signed.
  const rows = await db<{ id: string; order_key: string | null }[]>`
    with ev as (
      insert into events (id, org_id, type, call_id, agent_id, payload, created_at)
      values (${id}, ${e.orgId}, ${e.type}, ${callId}, ${e.agentId ?? null}, ${JSON.stringify(body)}::text::json, ${createdAt})
    ),
    pinned as (
      select coalesce(
        ${agentWebhook},
        (select o.default_webhook_id from orgs o where o.id = ${e.orgId})
      ) as webhook_id
    ),
    routed as (
      select w.id as webhook_id, w.id::text as target, w.status = 'active' as active
      from webhooks w, pinned p
      where w.org_id = ${e.orgId}
        and (p.webhook_id is null or w.id = p.webhook_id)
        and (${e.type}::text = any (w.events) or '*' = any (w.events))
        and ${e.type}::text <> 'webhook.test'
      union all
      select null::uuid, 'url:' || ${url}::text, true where ${url}::text is not null
    ),
    keyed as (
      select r.*, case when ${callId}::uuid is null then null else r.target || '/' || ${callId}::text end as order_key
      from routed r
    )
    insert into webhook_messages (org_id, event_id, event_type, webhook_id, url, target, order_key, status, next_attempt_at)
    select ${e.orgId}, ${id}, ${e.type}, k.webhook_id,
           case when k.webhook_id is null then ${url}::text end,
           k.target, k.order_key,
           case when k.active then 'pending' else 'paused' end,
           -- Not due before an earlier message of the call that is waiting for a retry: keeps the dispatcher's
           -- scan of due messages free of messages that could not be sent anyway.
           greatest(now(), (select max(p.next_attempt_at) from webhook_messages p
                            where p.order_key = k.order_key and p.status in ('pending', 'paused')))
    from keyed k
    returning id, order_key`;

  if (rows.length) {
    if (e.type === 'transcript.partial') await coalescePartials(db, rows);
    await db`select pg_notify(${WEBHOOK_CHANNEL}, '')`;
  }
  return { id, createdAt, messages: rows.length };
}

/**
 * A partial transcript is a snapshot of the conversation so far, so a newer one makes the older ones that
 * are still waiting (not in flight) pointless: they are dropped and never sent.
 */
async function coalescePartials(db: Db, fresh: { id: string; order_key: string | null }[]): Promise<void> {
  const keyed = fresh.filter((r) => r.order_key !== null);
  if (!keyed.length) return;
  await db`
    delete from webhook_messages m
    using (select unnest(${keyed.map((r) => r.order_key!)}::text[]) as order_key, unnest(${keyed.map((r) => r.id)}::bigint[]) as id) f
    where m.order_key = f.order_key and m.id < f.id
      and m.event_type = 'transcript.partial' and m.status in ('pending', 'paused')`;
}
