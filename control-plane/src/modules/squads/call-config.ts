// The squad part of a call's session config (GET /internal/v1/calls/{id}/config): every other member, resolved
// as the entry agent is (prompt with the call's variables, model, tools, knowledge), so a hand-off in the worker
// needs no round trip to the control plane.
import type { Services } from '../../services.ts';
import type { Db } from '../../db/types.ts';
import type { SquadConfig, SquadMemberConfig } from '../../../../schemas/internal.ts';
import type { AgentRow } from '../agents/queries.ts';
import { effectiveSystemPrompt } from '../../../../shared/prompt.ts';
import { interpolate, mergeVariables } from '../../../../shared/template.ts';
import { knowledgeConfigFor } from '../knowledge-bases/search.ts';
import type { CallRow } from '../calls/queries.ts';
import { getSquadById, isMemberOf } from './queries.ts';

/** What calls/service.ts resolves for every agent of a call (passed in: the calls module imports this one). */
export interface MemberParts {
  behaviour: (agent: AgentRow) => Omit<SquadMemberConfig['agent'], 'id' | 'name'>;
  /** A member's agent, model, tools and knowledge bases: its published version's (agent-versions). */
  member: (
    services: Services,
    db: Db,
    orgId: string,
    agentId: string,
  ) => Promise<{ agent: AgentRow; model: Omit<SquadMemberConfig['llm'], 'base_url'> & { base_url: string | null; system_prompt: string | null }; tools: SquadMemberConfig['tools']; knowledgeBaseIds: string[] } | null>;
}

export async function squadConfigFor(services: Services, db: Db, call: CallRow, parts: MemberParts): Promise<SquadConfig | undefined> {
  if (!call.squad_id) return undefined;
  // The squad as it is now: the call fetches its config once, at its start, and keeps it.
  const squad = await getSquadById(db, call.squad_id);
  if (!squad || squad.org_id !== call.org_id) return undefined;
  const members: SquadMemberConfig[] = [];
  for (const agentId of squad.agent_ids) {
    if (agentId === call.agent_id) continue;
    const found = await parts.member(services, db, call.org_id, agentId);
    // A member cannot be deleted while in the squad; one missing anyway simply gets no hand-off tool.
    if (!found) continue;
    const { agent, model } = found;
    const variables = mergeVariables(agent.dynamic_variables ?? {}, call.variables ?? {});
    members.push({
      agent: { id: agent.id, name: agent.name, ...parts.behaviour(agent) },
      prompt: interpolate(effectiveSystemPrompt(agent.job_description, model.system_prompt) ?? '', variables),
      llm: { provider: model.provider, model: model.model, base_url: model.base_url, temperature: model.temperature, max_tokens: model.max_tokens, realtime: model.realtime ?? null },
      tools: found.tools,
      knowledge: await knowledgeConfigFor(db, call.org_id, found.knowledgeBaseIds, services.config.KB_STUFF_MAX_TOKENS),
    });
  }
  const present = new Set([call.agent_id, ...members.map((m) => m.agent.id)]);
  return {
    id: squad.id,
    max_handoffs: squad.max_handoffs,
    members,
    handoffs: squad.handoffs.filter((h) => present.has(h.from_agent_id) && present.has(h.to_agent_id)),
  };
}

/** Whether an agent is a member of the call's squad (knowledge search for the agent speaking now). */
export async function isSquadMember(db: Db, call: Pick<CallRow, 'squad_id'>, agentId: string): Promise<boolean> {
  return call.squad_id ? isMemberOf(db, call.squad_id, agentId) : false;
}
