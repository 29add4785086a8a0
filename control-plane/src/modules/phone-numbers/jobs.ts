// phone-numbers.repair: every minute, and once when a control plane starts. Undoes purchases and finishes
// releases that a crash interrupted (rows not `wired` for longer than PHONE_WIRING_STALE_SECONDS), removes
// LiveKit objects named for numbers that no longer exist, and makes sure the catch-all inbound trunk exists.
// A number therefore never stays half-wired.
import type { QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import { unfinishedWiring, wiredIds } from './queries.ts';
import { deleteOrphans, ensureCatchAllTrunk, orphanedObjects, unwireNumber, upgradeAccountHeaders, upgradeRoomPrefixes } from './wiring.ts';

export const REPAIR_QUEUE = 'phone-numbers.repair';

export async function repairWiring(services: Services): Promise<{ undone: number; orphans: number }> {
  let undone = 0;
  for (const row of await unfinishedWiring(services.sql, services.config.PHONE_WIRING_STALE_SECONDS)) {
    try {
      await unwireNumber(services, row.id);
      undone++;
      services.log.warn({ phone_number_id: row.id, phone_number: row.phone_number, was: row.wiring_state }, 'interrupted purchase or release undone');
    } catch (err) {
      services.log.error({ err, phone_number_id: row.id }, 'repair of a phone number failed; retried next sweep');
    }
  }
  // Snapshot the live ids before listing LiveKit, so an object created after the snapshot is never an orphan
  // by mistake (its row was inserted before it).
  const live = await wiredIds(services.sql);
  const orphans = await orphanedObjects(services, live);
  await deleteOrphans(services, orphans);
  await ensureCatchAllTrunk(services);
  const upgraded = await upgradeRoomPrefixes(services, live);
  if (upgraded) services.log.info({ rules: upgraded }, "dispatch rules now name rooms by their number's id");
  const mapped = await upgradeAccountHeaders(services, live);
  if (mapped) services.log.info({ trunks: mapped }, "inbound trunks now pass the carrier's account header");
  return { undone, orphans: orphans.rules.length + orphans.trunks.length };
}

export function phoneNumberQueues(services: Services): QueueDef<never>[] {
  return [
    {
      name: REPAIR_QUEUE,
      schedule: '* * * * *',
      options: { policy: 'singleton' },
      handler: async () => {
        await repairWiring(services);
      },
    },
  ];
}

/** At start-up: the catch-all trunk now (so unknown numbers are refused from the first call), then a repair. */
export async function startPhoneNumbers(services: Services): Promise<void> {
  try {
    await ensureCatchAllTrunk(services);
  } catch (err) {
    // LiveKit may start after us; the minute sweep creates the trunk then.
    services.log.warn({ err: (err as Error).message }, 'catch-all SIP inbound trunk not created yet');
  }
  await services.boss.send(REPAIR_QUEUE, {}).catch(() => {});
}
