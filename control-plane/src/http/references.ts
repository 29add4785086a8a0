// Checks that ids in a request body name resources of the caller's organisation. A missing id, or one of
// another organisation, is a 422 at the field (`reference_not_found`): the request is malformed, not aimed at
// a missing resource, and the answer never reveals whether the id exists elsewhere.
import type { Db } from '../db/types.ts';
import { ValidationFailure } from './errors.ts';
import type { ValidationErrorItem } from '../../../schemas/errors.ts';

export interface Reference {
  /** Where the id (or list of ids) sits, e.g. ['body', 'tool_ids']. List items get their index appended. */
  loc: (string | number)[];
  table: 'llm_models' | 'tools' | 'agents' | 'webhooks' | 'knowledge_bases' | 'agent_test_scenarios' | 'agent_test_suites' | 'squads';
  /** Human name for the message: "LLM model", "tool"... */
  what: string;
  ids: string | string[];
}

// Tables whose rows are soft-deleted; a deleted row is as good as missing.
const SOFT_DELETED = new Set(['llm_models', 'tools', 'agents', 'agent_test_scenarios', 'agent_test_suites', 'squads']);

export function referenceError(loc: (string | number)[], what: string, input: unknown): ValidationErrorItem {
  return { loc, msg: `No ${what} with this id in your organisation`, type: 'reference_not_found', input };
}

/**
 * Throws a 422 listing every id that is not a live resource of the organisation. The rows found are locked
 * (`for share`) until the transaction ends, so a concurrent delete of a referenced row waits and then sees the
 * new reference.
 */
export async function checkReferences(db: Db, orgId: string, refs: Reference[]): Promise<void> {
  const problems: ValidationErrorItem[] = [];
  for (const ref of refs) {
    const ids = Array.isArray(ref.ids) ? ref.ids : [ref.ids];
    if (!ids.length) continue;
    const live = SOFT_DELETED.has(ref.table) ? db`and deleted_at is null` : db``;
    const found = new Set(
      (await db<{ id: string }[]>`select id from ${db(ref.table)} where org_id = ${orgId} and id = any(${ids}::uuid[]) ${live} for share`).map((r) => r.id),
    );
    ids.forEach((id, i) => {
      if (!found.has(id)) problems.push(referenceError(Array.isArray(ref.ids) ? [...ref.loc, i] : ref.loc, ref.what, id));
    });
  }
  if (problems.length) throw new ValidationFailure(problems);
}
