// Agent references of publishable keys and of the workspace (its default agent).
import type { Db } from '../../http/route.ts';

/** The ids among `ids` that are not agents of the organisation. */
export async function unknownAgentIds(db: Db, orgId: string, ids: string[]): Promise<string[]> {
  if (!ids.length) return [];
  // Until the agents table exists no id can be an agent.
  const [t] = await db<{ present: boolean }[]>`select to_regclass('agents') is not null as present`;
  if (!t!.present) return [...ids];
  const found = await db<{ id: string }[]>`select id from agents where org_id = ${orgId} and id = any(${ids}::uuid[]) and deleted_at is null`;
  const known = new Set(found.map((r) => r.id));
  return ids.filter((id) => !known.has(id));
}
