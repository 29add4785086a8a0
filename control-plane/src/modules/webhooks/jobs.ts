// Housekeeping of webhook delivery, run by pg-boss once a minute on one process of the fleet:
//  - claims left `delivering` by a process that died are handed out again (at-least-once delivery);
//  - endpoints failing for longer than WEBHOOK_DISABLE_AFTER_HOURS are disabled (also checked at each failure);
//  - events, finished messages and delivery records older than WEBHOOK_RETENTION_DAYS are deleted.
import type { QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import { disableFailingWebhook } from './deliver.ts';
import { pauseInactiveMessages, purgeOld, releaseExpiredClaims } from './queries.ts';

export const WEBHOOK_MAINTENANCE_QUEUE = 'webhooks-maintenance';

export async function runWebhookMaintenance(services: Services): Promise<{ released: number; disabled: number; purged: number }> {
  const { sql, config } = services;
  const released = await releaseExpiredClaims(sql);
  await pauseInactiveMessages(sql);
  const disabled = await disableFailingWebhook(services, null, config.WEBHOOK_DISABLE_AFTER_HOURS * 3_600_000);
  const purged = await purgeOld(sql, config.WEBHOOK_RETENTION_DAYS);
  return { released, disabled, purged };
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
