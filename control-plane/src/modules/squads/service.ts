// Squad validation beyond the schema: members are agents of the organisation, the entry agent and every
// hand-off stay inside the squad, and each (from, to) pair is allowed once. Cycles are allowed: a call bounds
// them with max_handoffs (docs/decisions/033-squads.md).
import type { Db } from '../../db/types.ts';
import { ValidationFailure } from '../../http/errors.ts';
import { checkReferences } from '../../http/references.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { SQUAD_DEFAULTS, type CreateSquad, type Squad } from '../../../../schemas/squads.ts';

export { SQUAD_DEFAULTS };

type SquadShape = Pick<Squad, 'agent_ids' | 'entry_agent_id'> & { handoffs: CreateSquad['handoffs'] };

/** Problems of a squad as a whole (the stored one merged with an update, or a new one). */
export function squadProblems(s: SquadShape): ValidationErrorItem[] {
  const problems: ValidationErrorItem[] = [];
  const members = new Set(s.agent_ids);
  if (!members.has(s.entry_agent_id)) {
    problems.push({ loc: ['body', 'entry_agent_id'], msg: 'The entry agent must be one of agent_ids', type: 'value_error', input: s.entry_agent_id });
  }
  const seen = new Set<string>();
  (s.handoffs ?? []).forEach((h, i) => {
    for (const end of ['from_agent_id', 'to_agent_id'] as const) {
      if (!members.has(h[end])) {
        problems.push({
          loc: ['body', 'handoffs', i, end],
          msg: 'A hand-off must be between members of the squad (agent_ids)',
          type: 'value_error',
          input: h[end],
        });
      }
    }
    if (h.from_agent_id === h.to_agent_id) {
      problems.push({ loc: ['body', 'handoffs', i, 'to_agent_id'], msg: 'An agent cannot hand a call to itself', type: 'value_error', input: h.to_agent_id });
    }
    const pair = `${h.from_agent_id}>${h.to_agent_id}`;
    if (seen.has(pair)) {
      problems.push({
        loc: ['body', 'handoffs', i],
        msg: 'This hand-off (from, to) is listed twice',
        type: 'value_error',
        input: { from_agent_id: h.from_agent_id, to_agent_id: h.to_agent_id },
      });
    }
    seen.add(pair);
  });
  return problems;
}

/** The stored hand-offs: the default context filled in. */
export const storedHandoffs = (handoffs: CreateSquad['handoffs']): Squad['handoffs'] =>
  (handoffs ?? []).map((h) => ({
    from_agent_id: h.from_agent_id,
    to_agent_id: h.to_agent_id,
    description: h.description,
    context: h.context ?? SQUAD_DEFAULTS.context,
  }));

/**
 * Throws a 422 with the squad's own problems, then with any member that is not a live agent of the organisation
 * (another organisation's agent is "not found" too, never revealed). The agents found stay locked until the
 * transaction ends, so a concurrent delete of one waits and then sees the squad.
 */
export async function checkSquad(db: Db, orgId: string, s: SquadShape): Promise<void> {
  const problems = squadProblems(s);
  if (problems.length) throw new ValidationFailure(problems);
  await checkReferences(db, orgId, [{ loc: ['body', 'agent_ids'], table: 'agents', what: 'agent', ids: s.agent_ids }]);
}
