// Who a new call talks to: `agent_id`, or `squad_id` (its entry agent answers). Exactly one of the two.
import type { Db } from '../../db/types.ts';
import { ValidationFailure } from '../../http/errors.ts';
import { referenceError } from '../../http/references.ts';
import { getAgent, type AgentRow } from '../agents/queries.ts';
import type { CallRow } from '../calls/queries.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { getSquad, setCallSquadId, type SquadRow } from './queries.ts';

export interface CallTarget {
  /** The agent that answers: the given one, or the squad's entry agent. */
  agent: AgentRow;
  squad: SquadRow | null;
}

/** The ids naming a call's target: an agent, or a squad. */
export interface TargetIds {
  agent_id?: string | null | undefined;
  squad_id?: string | null | undefined;
}

/**
 * Problems of a target's ids at `at` (['body'], ['body', 'inbound_routing', 'fallback']...): both given, or, when
 * `required`, neither. A null id counts as not given.
 */
export function targetProblems(ids: TargetIds, at: (string | number)[], required: boolean): ValidationErrorItem[] {
  const agent = ids.agent_id != null;
  const squad = ids.squad_id != null;
  if (agent && squad) return [{ loc: [...at, 'squad_id'], msg: 'Give agent_id or squad_id, not both', type: 'value_error', input: ids.squad_id }];
  if (required && !agent && !squad) return [{ loc: [...at, 'agent_id'], msg: 'Give agent_id or squad_id', type: 'missing', input: null }];
  return [];
}

/**
 * The live target the ids name: the agent, or the squad with its entry agent. Null when it is missing, deleted
 * or another organisation's (or when no id is given).
 */
export async function findCallTarget(db: Db, orgId: string, ids: TargetIds): Promise<CallTarget | null> {
  if (ids.agent_id) {
    const agent = await getAgent(db, orgId, ids.agent_id);
    return agent ? { agent, squad: null } : null;
  }
  if (!ids.squad_id) return null;
  const squad = await getSquad(db, orgId, ids.squad_id);
  if (!squad) return null;
  // Members cannot be deleted while in a squad (agents/routes.ts), so the entry agent is live.
  const agent = await getAgent(db, orgId, squad.entry_agent_id);
  return agent ? { agent, squad } : null;
}

/**
 * Resolves `agent_id` xor `squad_id` of a request body. Neither or both is a 422. A missing one (or another
 * organisation's) is a 422 `reference_not_found` at the field, the same on web and outbound calls, as for every
 * id in a body (http/references.ts; docs/decisions/spec-missing-call-target.md).
 */
export async function resolveCallTarget(
  db: Db,
  orgId: string,
  body: { agent_id?: string | undefined; squad_id?: string | undefined },
): Promise<CallTarget> {
  const problems = targetProblems(body, ['body'], true);
  if (problems.length) throw new ValidationFailure(problems);
  const target = await findCallTarget(db, orgId, body);
  if (target) return target;
  const [field, what] = body.agent_id !== undefined ? (['agent_id', 'agent'] as const) : (['squad_id', 'squad'] as const);
  throw new ValidationFailure([referenceError(['body', field], what, body[field])]);
}

/** Marks a call as the squad's (right after its insert, in the same transaction). */
export async function setCallSquad<T extends CallRow>(db: Db, call: T, squad: SquadRow | null): Promise<T> {
  if (!squad) return call;
  await setCallSquadId(db, call.id, squad.id);
  return { ...call, squad_id: squad.id };
}
