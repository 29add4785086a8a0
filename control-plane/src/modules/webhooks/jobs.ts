// Housekeeping of webhook delivery, run by pg-boss once a minute on one process of the fleet:
//  - claims left `delivering` by a process that died are handed out again (at-least-once delivery);
//  - endpoints failing for longer than WEBHOOK_DISABLE_AFTER_HOURS are disabled (also checked at each failure);
//  - events, finished messages and delivery records older than WEBHOOK_RETENTION_DAYS are deleted.
import type { QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import { WEBHOOK_CHANNEL } from '../events/emit.ts';
import { disableFailingWebhook } from './deliver.ts';

export const WEBHOOK_MAINTENANCE_QUEUE = 'webhooks-maintenance';

export async function runWebhookMaintenance(services: Services): Promise<{ released: number; disabled: number; purged: number }> {
  const { sql, config } = services;
  const released = await sql`
    update webhook_messages set status = 'pending', locked_until = null
    where status = 'delivering' and locked_until < now()
    returning id`;
  if (released.length) await sql`select pg_notify(${WEBHOOK_CHANNEL}, '')`;
  // A message routed while its webhook was being set inactive may have been written as pending.
  await sql`
    update webhook_messages m set status = 'paused'
    from webhooks w where w.id = m.webhook_id and w.status = 'inactive' and m.status = 'pending'`;
  const disabled = await disableFailingWebhook(services, null, config.WEBHOOK_DISABLE_AFTER_HOURS * 3_600_000);
  const cutoff = sql`now() - ${config.WEBHOOK_RETENTION_DAYS} * interval '1 day'`;
  await sql`delete from webhook_deliveries where created_at < ${cutoff}`;
  const purged = await sql`
    delete from events e
    where e.created_at < ${cutoff}
      and not exists (select 1 from webhook_messages m where m.event_id = e.id and m.status in ('pending', 'delivering'))
    returning id`;
  return { released: released.length, disabled, purged: purged.length };
}

export function webhookQueues(services: Services): QueueDef<never>[] {
  return [
    {
      name: WEBHOOK_MAINTENANCE_QUEUE,
      options: { policy: 'singleton' },
      handler: async () => {
        const r = await runWebhookMaintenance(services);
        if (r.released || r.disabled || r.purged) services.log.info(r, 'webhook maintenance');
      },
    },
  ];
}
