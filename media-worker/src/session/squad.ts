// Squads in the worker: the generated `handoff_to_<name>` tools, and the switch to another agent of the squad
// inside the same session, room and audio tracks (docs/decisions/033-squads.md). A hand-off tool returns the next
// agent the agents-js way (llm.handoff): the session drains the current agent's activity and starts the next
// one's, with its own instructions, model, voice, tools and knowledge. No new dispatch, no new room.
import { llm, type voice } from '@livekit/agents';
import type { CallConfig, HandoffReport, SquadConfig, SquadHandoffConfig, SquadMemberConfig } from '../../../schemas/internal.ts';
import type { Logger } from '../../../shared/logger.ts';
import { completeWithin } from './completion.ts';

export const HANDOFF_TOOL_PREFIX = 'handoff_to_';
/** Tool names: what OpenAI-compatible APIs accept (^[a-zA-Z0-9_-]{1,64}$). */
const MAX_TOOL_NAME = 64;

/** The system prompt of the summary the next agent gets with `context: summary`. */
export const SUMMARY_PROMPT =
  'You summarise a phone conversation for a colleague who takes the call over. In at most five short sentences, ' +
  "say who the caller is, what they want, what has been said or done so far, and what is still open. Use the caller's own facts (names, numbers, dates). No preamble.";
/** How the summary (or the excerpt that stands in for it) appears in the next agent's context. */
export const SUMMARY_HEADER = 'Summary of the conversation so far, from the colleague who handed you the call:';
const SUMMARY_ITEM_ID = 'vap_handoff_summary';
/** The longest wait for the summary; past it the last lines of the conversation stand in for it. */
const SUMMARY_TIMEOUT_MS = 8000;
const EXCERPT_LINES = 6;

/**
 * `handoff_to_` and the agent's name, lowercased, with every run of other characters as one `_`; a name that
 * another tool of the agent already has gets `_2`, `_3`...
 */
export function handoffToolName(agentName: string, taken: Set<string> = new Set()): string {
  const base =
    agentName
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '') || 'agent';
  const name = (HANDOFF_TOOL_PREFIX + base).slice(0, MAX_TOOL_NAME);
  let candidate = name;
  for (let i = 2; taken.has(candidate); i++) {
    const suffix = `_${i}`;
    candidate = name.slice(0, MAX_TOOL_NAME - suffix.length) + suffix;
  }
  taken.add(candidate);
  return candidate;
}

/** Every agent of the call's squad by id: the entry agent from the call's own config (with its overrides), then the others. */
export function squadMembers(config: CallConfig): Map<string, SquadMemberConfig> {
  const out = new Map<string, SquadMemberConfig>();
  out.set(config.agent.id, { agent: config.agent, prompt: config.prompt, llm: config.llm, tools: config.tools, knowledge: config.knowledge });
  for (const m of config.squad?.members ?? []) if (!out.has(m.agent.id)) out.set(m.agent.id, m);
  return out;
}

/** The conversation as plain lines for the summary: the caller's and the agent's words, no tool calls. */
export function conversationLines(history: llm.ChatContext): string[] {
  const lines: string[] = [];
  for (const item of history.items) {
    if (item.type !== 'message' || (item.role !== 'user' && item.role !== 'assistant')) continue;
    const text = (item.textContent ?? '').trim();
    if (text) lines.push(`${item.role === 'user' ? 'Caller' : 'Agent'}: ${text}`);
  }
  return lines;
}

/**
 * A summary of the conversation by `model` (the handing agent's). On an error, an empty answer or after
 * `timeoutMs`, the last lines of the conversation stand in for it: the next agent always gets something.
 */
export async function summarize(model: llm.LLM | null, history: llm.ChatContext, opts: { timeoutMs?: number; logger?: Logger } = {}): Promise<string | null> {
  const lines = conversationLines(history);
  if (!lines.length || !model) return null;
  const excerpt = lines.slice(-EXCERPT_LINES).join('\n');
  const ctx = llm.ChatContext.empty();
  ctx.addMessage({ role: 'system', content: SUMMARY_PROMPT });
  ctx.addMessage({ role: 'user', content: lines.join('\n') });
  try {
    const text = (await completeWithin(model, ctx, opts.timeoutMs ?? SUMMARY_TIMEOUT_MS))?.trim() ?? null;
    if (text) return text;
    opts.logger?.warn({ reason: text === null ? 'timeout' : 'empty' }, 'hand-off summary unavailable: the last lines stand in for it');
  } catch (err) {
    opts.logger?.warn({ err: (err as Error).message }, 'hand-off summary failed: the last lines stand in for it');
  }
  return `(The last lines of the conversation)\n${excerpt}`;
}

/** The summary as the next agent's context item (a system message with a fixed id, so it is added once). */
export function summaryMessage(summary: string): llm.ChatMessage {
  return llm.ChatMessage.create({ role: 'system', content: `${SUMMARY_HEADER}\n${summary}`, id: SUMMARY_ITEM_ID });
}

/** Adds the summary to a chat context that does not have it yet. */
export function withSummary(ctx: llm.ChatContext, summary: string | null): boolean {
  if (!summary || ctx.items.some((i) => i.id === SUMMARY_ITEM_ID)) return false;
  ctx.insert(summaryMessage(summary));
  return true;
}

/** What the next agent starts with. */
export interface Arrival {
  /** The conversation so far (`full`), or an empty context (`summary`). */
  chatCtx: llm.ChatContext;
  /** `summary`: resolves with the summary, which the agent adds to its context before its first reply. */
  summary: Promise<string | null> | null;
  /** The member's handoff tools. */
  handoffTools: llm.FunctionTool<any, any, any>[];
}

export interface SquadHooks {
  /** The agent speaking now (its chat context is the conversation so far). */
  current(): voice.Agent;
  /** The LLM of the agent speaking now (it writes the summary). */
  /** Null with a realtime model: no summary is written. */
  currentLlm(): llm.LLM | null;
  /** Builds the session agent that speaks as `member`. */
  makeAgent(member: SquadMemberConfig, arrival: Arrival): voice.Agent;
  /** The switch is decided: the session is about to run `agent` as `member`. */
  onSwitch(member: SquadMemberConfig, agent: voice.Agent): void;
  report(h: Omit<HandoffReport, 'seq'>): void;
  logger: Logger;
}

/** A call's squad: its members, its hand-offs, and the count that bounds them (max_handoffs). */
export class Squad {
  readonly config: SquadConfig;
  readonly members: Map<string, SquadMemberConfig>;
  /** Hand-offs made in this call. */
  count = 0;
  currentAgentId: string;
  #hooks: SquadHooks;

  constructor(config: CallConfig, hooks: SquadHooks) {
    if (!config.squad) throw new Error('not a squad call');
    this.config = config.squad;
    this.members = squadMembers(config);
    this.currentAgentId = config.agent.id;
    this.#hooks = hooks;
  }

  /** The handoff tools of one member: one per hand-off it may make, named apart from its own tools. */
  toolsFor(agentId: string): llm.FunctionTool<any, any, any>[] {
    const member = this.members.get(agentId);
    if (!member) return [];
    const taken = new Set(member.tools.map((t) => t.name ?? t.type));
    const tools: llm.FunctionTool<any, any, any>[] = [];
    for (const h of this.config.handoffs) {
      const to = this.members.get(h.to_agent_id);
      if (h.from_agent_id !== agentId || !to) continue;
      tools.push(
        llm.tool({
          name: handoffToolName(to.agent.name, taken),
          description: h.description,
          parameters: {
            type: 'object',
            properties: { reason: { type: 'string', maxLength: 500, description: 'Why the call goes to this colleague, briefly' } },
          } as any,
          execute: async ({ reason }: any) => this.#handOff(h, to, typeof reason === 'string' ? reason.slice(0, 500) : null),
        }),
      );
    }
    return tools;
  }

  #handOff(h: SquadHandoffConfig, to: SquadMemberConfig, reason: string | null) {
    // Cycles are allowed; their number is bounded per call. The refusal is a sentence the agent can act on.
    if (this.count >= this.config.max_handoffs) {
      throw new llm.ToolError('No more transfers to colleagues are possible in this call: go on helping the caller yourself.');
    }
    // A stale tool of an agent that is no longer speaking (a late tool call) must not switch again.
    if (h.from_agent_id !== this.currentAgentId) throw new llm.ToolError('This transfer is not available now.');
    this.count++;
    const hooks = this.#hooks;
    // The words of the conversation, without the handing agent's instructions, tool calls or config items:
    // the next agent has its own instructions and tools.
    const history = hooks
      .current()
      .chatCtx.copy({ excludeInstructions: true, excludeFunctionCall: true, excludeHandoff: true, excludeConfigUpdate: true, excludeEmptyMessage: true });
    const summary = h.context === 'summary' ? summarize(hooks.currentLlm(), history, { logger: hooks.logger }) : null;
    const agent = hooks.makeAgent(to, { chatCtx: h.context === 'full' ? history : llm.ChatContext.empty(), summary, handoffTools: this.toolsFor(to.agent.id) });
    const from = this.currentAgentId;
    this.currentAgentId = to.agent.id;
    hooks.onSwitch(to, agent);
    hooks.logger.info({ from_agent_id: from, to_agent_id: to.agent.id, context: h.context, handoff: this.count }, 'squad hand-off');
    hooks.report({ from_agent_id: from, to_agent_id: to.agent.id, reason, context: h.context, at: new Date().toISOString() });
    // No tool output: the handing agent says nothing more, and the next one speaks first (its onEnter).
    return llm.handoff({ agent, returns: undefined });
  }
}
