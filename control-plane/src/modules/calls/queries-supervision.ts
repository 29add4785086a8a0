// SQL of a call's supervision (schemas/supervision.ts): the record of what people did, and the worker's outbox.
import type { Db } from '../../db/types.ts';
import type { SupervisionEntry, WorkerSupervisionItem } from '../../../../schemas/supervision.ts';

/** Appends an entry (its seq the next in the call) and, for the worker's actions, the outbox item. Locks the row. */
export async function appendSupervision(
  db: Db,
  callId: string,
  entry: Omit<SupervisionEntry, 'seq'>,
  forWorker: Omit<WorkerSupervisionItem, 'seq'> | null,
): Promise<SupervisionEntry> {
  const [row] = await db<{ seq: number }[]>`select jsonb_array_length(supervision) + 1 as seq from calls where id = ${callId} for update`;
  const full = { seq: row!.seq, ...entry };
  const item = forWorker ? [{ seq: full.seq, ...forWorker }] : [];
  await db`
    update calls set supervision = supervision || ${db.json([full] as never)},
                     supervision_outbox = supervision_outbox || ${db.json(item)}, updated_at = now()
    where id = ${callId}`;
  return full;
}

/** The worker's actions not taken yet, in order; taken at once (each is given once). */
export async function takeSupervisionOutbox(db: Db, callId: string): Promise<WorkerSupervisionItem[]> {
  const [row] = await db<{ items: WorkerSupervisionItem[] }[]>`
    with old as (select supervision_outbox as items from calls where id = ${callId} for update)
    update calls set supervision_outbox = '[]'::jsonb from old where id = ${callId} and jsonb_array_length(old.items) > 0
    returning old.items`;
  return (row?.items ?? []).sort((a, b) => a.seq - b.seq);
}

/** The in-progress call held in a LiveKit room, with its supervision[]. */
export async function supervisionInRoom(db: Db, room: string): Promise<{ id: string; supervision: SupervisionEntry[] } | undefined> {
  const [call] = await db<{ id: string; supervision: SupervisionEntry[] }[]>`
    select id, supervision from calls where room_name = ${room} and status = 'in_progress'`;
  return call;
}
