// Who a new call talks to: `agent_id`, or `squad_id` (its entry agent answers). Exactly one of the two.
import type { Db } from '../../db/types.ts';
import { notFound, ValidationFailure } from '../../http/errors.ts';
import { referenceError } from '../../http/references.ts';
import { getAgent, type AgentRow } from '../agents/queries.ts';
import type { CallRow } from '../calls/queries.ts';
import { getSquad, setCallSquadId, type SquadRow } from './queries.ts';

export interface CallTarget {
  /** The agent that answers: the given one, or the squad's entry agent. */
  agent: AgentRow;
  squad: SquadRow | null;
}

/**
 * Resolves `agent_id` xor `squad_id` of a request body. Neither or both is a 422. A missing one (or another
 * organisation's) is `missing` as the caller's route answers it: a 404 (web calls, as GET would) or a 422
 * `reference_not_found` at the field (outbound calls).
 */
export async function resolveCallTarget(
  db: Db,
  orgId: string,
  body: { agent_id?: string | undefined; squad_id?: string | undefined },
  missing: '404' | '422',
): Promise<CallTarget> {
  if ((body.agent_id === undefined) === (body.squad_id === undefined)) {
    const both = body.agent_id !== undefined;
    throw new ValidationFailure([
      {
        loc: ['body', both ? 'squad_id' : 'agent_id'],
        msg: both ? 'Give agent_id or squad_id, not both' : 'Give agent_id or squad_id',
        type: both ? 'value_error' : 'missing',
        input: both ? body.squad_id : null,
      },
    ]);
  }
  const fail = (field: 'agent_id' | 'squad_id', what: 'Agent' | 'Squad', id: string): never => {
    if (missing === '404') throw notFound(what);
    throw new ValidationFailure([referenceError(['body', field], what === 'Agent' ? 'agent' : 'squad', id)]);
  };
  if (body.agent_id !== undefined) {
    const agent = await getAgent(db, orgId, body.agent_id);
    return agent ? { agent, squad: null } : fail('agent_id', 'Agent', body.agent_id);
  }
  const squad = await getSquad(db, orgId, body.squad_id!);
  if (!squad) return fail('squad_id', 'Squad', body.squad_id!);
  // Members cannot be deleted while in a squad (agents/routes.ts), so the entry agent is live.
  const agent = await getAgent(db, orgId, squad.entry_agent_id);
  if (!agent) return fail('squad_id', 'Squad', body.squad_id!);
  return { agent, squad };
}

/** Marks a call as the squad's (right after its insert, in the same transaction). */
export async function setCallSquad<T extends CallRow>(db: Db, call: T, squad: SquadRow | null): Promise<T> {
  if (!squad) return call;
  await setCallSquadId(db, call.id, squad.id);
  return { ...call, squad_id: squad.id };
}
