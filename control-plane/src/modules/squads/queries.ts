import type { Db } from '../../db/types.ts';
import type { Squad } from '../../../../schemas/squads.ts';
import type { Static } from '../../../../schemas/common.ts';
import type { CallHandoff } from '../../../../schemas/calls.ts';
import { pageOf, totalColumn, type Counted } from '../../db/list-page.ts';

export type SquadRow = Squad;
export type SquadWrite = Omit<SquadRow, 'id' | 'created_at' | 'updated_at'>;

const COLUMNS = ['id', 'name', 'agent_ids', 'entry_agent_id', 'handoffs', 'max_handoffs', 'metadata', 'created_at', 'updated_at'];

export async function insertSquad(db: Db, orgId: string, s: SquadWrite): Promise<SquadRow> {
  const [out] = await db<SquadRow[]>`
    insert into squads (org_id, name, agent_ids, entry_agent_id, handoffs, max_handoffs, metadata)
    values (${orgId}, ${s.name}, ${s.agent_ids}::uuid[], ${s.entry_agent_id}, ${db.json(s.handoffs)}, ${s.max_handoffs}, ${db.json(s.metadata as never)})
    returning ${db(COLUMNS)}`;
  return out!;
}

export async function updateSquad(db: Db, orgId: string, id: string, s: SquadWrite): Promise<SquadRow> {
  const [out] = await db<SquadRow[]>`
    update squads
    set name = ${s.name}, agent_ids = ${s.agent_ids}::uuid[], entry_agent_id = ${s.entry_agent_id}, handoffs = ${db.json(s.handoffs)},
        max_handoffs = ${s.max_handoffs}, metadata = ${db.json(s.metadata as never)}, updated_at = now()
    where id = ${id} and org_id = ${orgId} and deleted_at is null
    returning ${db(COLUMNS)}`;
  return out!;
}

export async function getSquad(db: Db, orgId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<SquadRow | null> {
  const [row] = await db<SquadRow[]>`
    select ${db(COLUMNS)} from squads where id = ${id} and org_id = ${orgId} and deleted_at is null ${opts.forUpdate ? db`for update` : db``}`;
  return row ?? null;
}

/** A squad by id alone (the call's config: the call row already belongs to the organisation). */
export async function getSquadById(db: Db, id: string): Promise<(SquadRow & { org_id: string }) | null> {
  const [row] = await db<(SquadRow & { org_id: string })[]>`select ${db(COLUMNS)}, org_id from squads where id = ${id}`;
  return row ?? null;
}

export async function listSquads(db: Db, orgId: string, q: { limit: number; offset: number }) {
  const where = db`org_id = ${orgId} and deleted_at is null`;
  const from = db`squads where ${where}`;
  const rows = await db<Counted<SquadRow>[]>`select ${db(COLUMNS)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`;
  return pageOf(db, rows, q.offset, from);
}

export async function softDeleteSquad(db: Db, orgId: string, id: string): Promise<void> {
  await db`update squads set deleted_at = now(), updated_at = now() where id = ${id} and org_id = ${orgId} and deleted_at is null`;
}

/** Live squads an agent is a member of (an agent in one cannot be deleted). */
export async function squadsWithAgent(db: Db, orgId: string, agentId: string): Promise<{ id: string; name: string }[]> {
  return db<{ id: string; name: string }[]>`
    select id, name from squads where org_id = ${orgId} and deleted_at is null and ${agentId}::uuid = any(agent_ids) order by created_at`;
}

/** Phone numbers that send calls to a squad: as their squad, in their inbound routing, or as its fallback. */
export async function numbersRoutingToSquad(db: Db, orgId: string, squadId: string): Promise<{ id: string; phone_number: string }[]> {
  return db<{ id: string; phone_number: string }[]>`
    select id, phone_number from phone_numbers
    where org_id = ${orgId} and deleted_at is null
      and (squad_id = ${squadId}
           or inbound_routing->>'squad_id' = ${squadId}
           or inbound_routing->'fallback'->>'squad_id' = ${squadId})
    order by phone_number`;
}

/** A live squad's members; [] when there is no such squad (the start of the call then answers 404). */
export async function squadMembers(db: Db, orgId: string, id: string | undefined): Promise<string[]> {
  if (!id) return [];
  const [row] = await db<{ agent_ids: string[] }[]>`select agent_ids from squads where id = ${id} and org_id = ${orgId} and deleted_at is null`;
  return row?.agent_ids ?? [];
}

// ---- A squad's calls ---------------------------------------------------------------------------------------

/** Marks a call as the squad's (right after its insert, in the same transaction). */
export async function setCallSquadId(db: Db, callId: string, squadId: string): Promise<void> {
  await db`update calls set squad_id = ${squadId} where id = ${callId}`;
}

/** Whether an agent is a member of a squad (by id, for the internal API). */
export async function isMemberOf(db: Db, squadId: string, agentId: string): Promise<boolean> {
  const [row] = await db<{ ok: boolean }[]>`select ${agentId} = any(agent_ids::text[]) as ok from squads where id = ${squadId}`;
  return row?.ok ?? false;
}

export async function squadBounds(db: Db, squadId: string): Promise<{ agent_ids: string[]; max_handoffs: number } | null> {
  const [row] = await db<
    { agent_ids: string[]; max_handoffs: number }[]
  >`select agent_ids::text[] as agent_ids, max_handoffs from squads where id = ${squadId}`;
  return row ?? null;
}

export async function appendCallHandoff(db: Db, callId: string, entry: Static<typeof CallHandoff>): Promise<void> {
  await db`update calls set handoffs = handoffs || ${db.json([entry] as never)}, updated_at = now() where id = ${callId}`;
}

export async function setCallAgentLatency(db: Db, callId: string, latency: Record<string, unknown>): Promise<void> {
  await db`update calls set agent_latency = ${db.json(latency as never)} where id = ${callId}`;
}
