// SQL of the event outbox: the event row, its routed delivery messages, and the dispatchers' wake-up.
import type { Db } from '../../db/types.ts';

/** NOTIFY channel that wakes the webhook dispatchers (delivered at commit). */
export const WEBHOOK_CHANNEL = 'vap_webhooks';

/**
 * Writes the event and one message per endpoint it routes to, and returns the messages. Every webhook of the
 * account subscribed to the type gets it (an inactive one holds it); the call's own URL gets every event of
 * the call, unless an account webhook with the same URL already does (one delivery per destination). An
 * agent's `webhook_id` and the workspace default add no filter: they never take an event from another webhook.
 */
export async function insertEventAndMessages(
  db: Db,
  e: { id: string; createdAt: string; orgId: string; type: string; callId: string | null; agentId: string | null; url: string | null; body: string },
): Promise<{ id: string; order_key: string | null }[]> {
  // The body goes in as text cast to json: json keeps the exact bytes (and key order) that will be signed.
  return db<{ id: string; order_key: string | null }[]>`
    with ev as (
      insert into events (id, org_id, type, call_id, agent_id, payload, created_at)
      values (${e.id}, ${e.orgId}, ${e.type}, ${e.callId}, ${e.agentId}, ${e.body}::text::json, ${e.createdAt})
    ),
    subscribed as (
      select w.id as webhook_id, w.id::text as target, w.status = 'active' as active
      from webhooks w
      where w.org_id = ${e.orgId}
        and (${e.type}::text = any (w.events) or '*' = any (w.events))
        and ${e.type}::text <> 'webhook.test'
    ),
    routed as (
      select webhook_id, target, active from subscribed
      union all
      -- A destination of its own even when a webhook has the same URL: pausing that webhook must not hold the
      -- call's events, and each stream is signed with one secret (docs/decisions/spec-call-webhook-url.md).
      select null::uuid, 'url:' || ${e.url}::text, true
      where ${e.url}::text is not null
    ),
    keyed as (
      select r.*, case when ${e.callId}::uuid is null then null else r.target || '/' || ${e.callId}::text end as order_key
      from routed r
    )
    insert into webhook_messages (org_id, event_id, event_type, webhook_id, url, target, order_key, status, next_attempt_at)
    select ${e.orgId}, ${e.id}, ${e.type}, k.webhook_id,
           case when k.webhook_id is null then ${e.url}::text end,
           k.target, k.order_key,
           case when k.active then 'pending' else 'paused' end,
           -- Not due before an earlier message of the call that is waiting for a retry: keeps the dispatcher's
           -- scan of due messages free of messages that could not be sent anyway.
           greatest(now(), (select max(p.next_attempt_at) from webhook_messages p
                            where p.order_key = k.order_key and p.status in ('pending', 'paused')))
    from keyed k
    returning id, order_key`;
}

/**
 * A partial transcript is a snapshot of the conversation so far, so a newer one makes the older ones that
 * are still waiting (not in flight) pointless: they are dropped and never sent.
 */
export async function dropSupersededPartials(db: Db, fresh: { id: string; order_key: string | null }[]): Promise<void> {
  const keyed = fresh.filter((r) => r.order_key !== null);
  if (!keyed.length) return;
  await db`
    delete from webhook_messages m
    using (select unnest(${keyed.map((r) => r.order_key!)}::text[]) as order_key, unnest(${keyed.map((r) => r.id)}::bigint[]) as id) f
    where m.order_key = f.order_key and m.id < f.id
      and m.event_type = 'transcript.partial' and m.status in ('pending', 'paused')`;
}

export async function notifyWebhookChannel(db: Db): Promise<void> {
  await db`select pg_notify(${WEBHOOK_CHANNEL}, '')`;
}
