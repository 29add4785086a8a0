// pg-boss on the platform's own database, in schema `pgboss`. Jobs can be enqueued inside a postgres.js
// transaction (see `inTx`), so a state change and the job that follows it commit together.
import { PgBoss, type Job, type SendOptions, type WorkOptions, type Queue } from 'pg-boss';
import type { Db } from '../db/types.ts';
import type { Logger } from '../../../shared/logger.ts';

export type { PgBoss, Job };

export interface QueueDef<T extends object = object> {
  name: string;
  options?: Omit<Queue, 'name'>;
  work?: WorkOptions;
  handler: (jobs: Job<T>[]) => Promise<unknown>;
  /** Cron expression: pg-boss creates one job per tick across all processes. */
  schedule?: string;
}

export async function startBoss(url: string, log: Logger, opts: { listenNotify?: boolean; superviseIntervalSeconds?: number } = {}): Promise<PgBoss> {
  // Supervision (expiry, dead heartbeats) runs in the monitor pass, which needs both timers: set them together.
  const interval = opts.superviseIntervalSeconds ?? 60;
  const boss = new PgBoss({
    connectionString: url,
    schema: 'pgboss',
    application_name: 'vap-jobs',
    useListenNotify: opts.listenNotify ?? true,
    max: 5,
    superviseIntervalSeconds: interval,
    monitorIntervalSeconds: interval,
  });
  boss.on('error', (err) => log.error({ err }, 'pg-boss error'));
  boss.on('warning', (w) => log.warn({ warning: w }, 'pg-boss warning'));
  await boss.start();
  return boss;
}

/** Creates the queue if needed (idempotent) and starts its worker. */
export async function registerQueue<T extends object>(boss: PgBoss, def: QueueDef<T>, opts: { work?: boolean } = {}): Promise<void> {
  const existing = await boss.getQueue(def.name);
  if (!existing) await boss.createQueue(def.name, { notify: true, ...def.options });
  if (def.schedule) await boss.schedule(def.name, def.schedule);
  if (opts.work ?? true) await boss.work<T>(def.name, def.work ?? {}, def.handler);
}

/** An adapter that lets pg-boss run its INSERT inside our transaction. */
export const inTx = (db: Db) => ({
  executeSql: async (text: string, values?: unknown[]) => {
    const rows = await db.unsafe(text, (values ?? []) as never[]);
    return { rows };
  },
});

export async function sendInTx(boss: PgBoss, db: Db, name: string, data: object, options: SendOptions = {}): Promise<string | null> {
  return boss.send(name, data, { ...options, db: inTx(db) } as SendOptions);
}
