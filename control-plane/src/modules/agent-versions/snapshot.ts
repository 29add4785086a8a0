// What a version holds (docs/decisions/038-agent-versions.md): the agent's own fields and what they refer to, as
// resolved when the version was made: the LLM model's settings and prompt, its tools' definitions, its knowledge
// bases by reference. Secrets (a tool's headers and signing secret, the org's provider keys) are not versioned: a
// rotated credential reaches every version, and a rollback never brings back a revoked one.
import { isDeepStrictEqual } from 'node:util';
import type { Db } from '../../db/types.ts';
import { referencesOf } from './queries.ts';
import type { AgentWrite } from '../agents/queries.ts';
import { AGENT_DEFAULTS } from '../../../../schemas/agents.ts';
import type { VersionChange } from '../../../../schemas/agent-versions.ts';

export type { ModelSnapshot, Snapshot, ToolSnapshot } from './types.ts';
import type { Snapshot } from './types.ts';

/** Thrown when the agent's model is gone (it cannot be: a model in use cannot be deleted; a guard all the same). */
export class UnresolvedModel extends Error {}

/**
 * The snapshot of an agent's fields as they resolve now, in one query: the model of `llm_id` (of the org), its live
 * tools and its knowledge bases, in the model's order.
 */
export async function resolveSnapshot(db: Db, orgId: string, agent: AgentWrite): Promise<Snapshot> {
  const row = await referencesOf(db, orgId, agent.llm_id);
  if (!row) throw new UnresolvedModel(`LLM model ${agent.llm_id} not found`);
  // Through JSON, as the stored snapshot reads back (numbers, absent keys), so equality with it is exact.
  return JSON.parse(JSON.stringify({ agent, model: row.model, tools: row.tools, knowledge_bases: row.knowledge_bases })) as Snapshot;
}

/**
 * The agent fields of a snapshot with the defaults of fields it predates: a version made before a field existed
 * behaves as the field's default did.
 */
export function agentOfSnapshot(s: Snapshot): AgentWrite {
  return { ...(AGENT_DEFAULTS as unknown as AgentWrite), ...s.agent };
}

export const sameSnapshot = (a: Snapshot, b: Snapshot) => isDeepStrictEqual(normalise(a), normalise(b));

/** Tools by name and knowledge bases by id, so a diff names what changed rather than a list position. */
function normalise(s: Snapshot): Record<string, unknown> {
  return {
    agent: agentOfSnapshot(s),
    model: s.model,
    tools: Object.fromEntries(s.tools.map((t) => [t.name, t])),
    knowledge_bases: Object.fromEntries(s.knowledge_bases.map((k) => [k.id, k])),
  };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function walk(from: unknown, to: unknown, path: string[], out: VersionChange[]): void {
  if (isDeepStrictEqual(from, to)) return;
  // Objects are compared key by key (agent.turn_taking.min_delay_ms); lists and scalars whole.
  if (isPlainObject(from) && isPlainObject(to) && path.length < 4) {
    for (const k of new Set([...Object.keys(from), ...Object.keys(to)])) {
      const p = [...path, k];
      if (!(k in from)) out.push({ path: p.join('.'), op: 'add', to: to[k] });
      else if (!(k in to)) out.push({ path: p.join('.'), op: 'remove', from: from[k] });
      else walk(from[k], to[k], p, out);
    }
    return;
  }
  out.push({ path: path.join('.'), op: 'replace', from, to });
}

/** What differs from `from` to `to`, as dotted snapshot paths; a first version (no `from`) has no diff. */
export function diffSnapshots(from: Snapshot | null, to: Snapshot): VersionChange[] {
  if (!from) return [];
  const out: VersionChange[] = [];
  walk(normalise(from), normalise(to), [], out);
  return out;
}

/** "# Role" block and model prompt of a version, as effective_system_prompt is built. */
export { effectiveSystemPrompt } from '../../../../shared/prompt.ts';
