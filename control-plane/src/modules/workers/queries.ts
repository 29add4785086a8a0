import type { Db } from '../../db/types.ts';
import type { WorkerHeartbeat } from '../../../../schemas/workers.ts';

export async function recordHeartbeat(db: Db, id: string, hb: WorkerHeartbeat): Promise<void> {
  await db`
    insert into media_workers (id, agent_name, active_calls, load, draining)
    values (${id}, ${hb.agent_name}, ${hb.active_calls}, ${hb.load}, ${hb.draining})
    on conflict (id) do update set agent_name = excluded.agent_name, active_calls = excluded.active_calls,
      load = excluded.load, draining = excluded.draining, last_seen_at = now()`;
  // Workers that went away long ago are forgotten (ids are per registration).
  await db`delete from media_workers where last_seen_at < now() - interval '1 day'`;
}

/** Workers of this agent name seen within `freshSeconds` and not draining. */
export async function liveWorkers(db: Db, agentName: string, freshSeconds: number): Promise<number> {
  const [r] = await db<{ n: number }[]>`
    select count(*)::int as n from media_workers
    where agent_name = ${agentName} and not draining and last_seen_at > now() - make_interval(secs => ${freshSeconds})`;
  return r!.n;
}
