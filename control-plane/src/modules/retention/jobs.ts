// The retention job (pg-boss, hourly on one process of the fleet): for each organisation with `retain_days`,
// deletes the content of calls created longer ago than that (messages, analysis text, the recording in its
// storage, and the same content in the stored events) and keeps the call's metadata. Each batch is audited
// (`call.content_deleted`, actor `system`) with the calls it emptied. docs/decisions/021-privacy.md.
import type { QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import { writeAudit } from '../audit-events/queries.ts';
import { deleteRecording } from '../calls/storage/index.ts';
import { callsPastRetention, deleteCallContent, deleteCallExtras, orgsWithRetention, scrubCallEvents } from './queries.ts';

export const RETENTION_QUEUE = 'privacy.retention';
const BATCH = 200;
const DAY_MS = 86_400_000;

export interface RetentionResult {
  calls: number;
  recordings: number;
}

/** One organisation: batches until nothing past its time is left (or only recordings that cannot be deleted). */
async function purgeOrg(services: Services, org: { id: string; retain_days: number }, now: Date): Promise<RetentionResult> {
  const cutoff = new Date(now.getTime() - org.retain_days * DAY_MS);
  const total = { calls: 0, recordings: 0 };
  const tried = new Set<string>();
  for (;;) {
    const calls = (await callsPastRetention(services.sql, org.id, cutoff, BATCH + tried.size)).filter((c) => !tried.has(c.id)).slice(0, BATCH);
    if (!calls.length) return total;
    // Files first, outside any transaction: a crash between the two leaves a key whose file is gone, which the
    // next run deletes again without error.
    const removed = new Set<string>();
    for (const c of calls) {
      tried.add(c.id);
      if (!c.recording_key) continue;
      try {
        if (await deleteRecording(services, c.recording_key)) removed.add(c.id);
        else services.log.warn({ call_id: c.id }, 'retention: the recording is in a storage backend that is not configured; kept');
      } catch (err) {
        services.log.warn({ err, call_id: c.id }, 'retention: recording delete failed; retried on the next run');
      }
    }
    await services.sql.begin(async (tx) => {
      for (const c of calls) {
        await deleteCallContent(tx, c.id, removed.has(c.id));
        await scrubCallEvents(tx, c.id);
        await deleteCallExtras(tx, c.id);
      }
      await writeAudit(tx, {
        orgId: org.id,
        actorType: 'system',
        actorId: null,
        action: 'call.content_deleted',
        resourceType: 'org',
        resourceId: org.id,
        details: { retain_days: org.retain_days, created_before: cutoff.toISOString(), calls: calls.map((c) => c.id), recordings_deleted: removed.size },
      });
    });
    total.calls += calls.length;
    total.recordings += removed.size;
    if (calls.length < BATCH) return total;
  }
}

export async function runRetention(services: Services, now = new Date()): Promise<RetentionResult> {
  const total = { calls: 0, recordings: 0 };
  for (const org of await orgsWithRetention(services.sql)) {
    const r = await purgeOrg(services, org, now);
    total.calls += r.calls;
    total.recordings += r.recordings;
  }
  return total;
}

export function retentionQueues(services: Services): QueueDef<never>[] {
  return [
    {
      name: RETENTION_QUEUE,
      options: { policy: 'singleton' },
      schedule: '17 * * * *',
      handler: async () => {
        const r = await runRetention(services);
        if (r.calls) services.log.info(r, 'retention: call content deleted');
      },
    },
  ];
}
