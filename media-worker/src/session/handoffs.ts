// Transfers and hand-offs: where the call goes when this agent's part in it is over. The tools' room actions
// (a SIP transfer, a warm transfer that joins the legs, DTMF, the do-not-call list) and, on a squad's call, the
// next member taking the call in the same session with its own prompt, tools, knowledge and models.
import type { llm } from '@livekit/agents';
import type { CallConfig, SquadMemberConfig } from '../../../schemas/internal.ts';
import { interpolate, mergeVariables } from '../../../shared/template.ts';
import { VapAgent, type VapAgentOptions } from './agent.ts';
import { sideTaskLlm, textLlm, type CallContext, type CallSessionOptions } from './call-context.ts';
import { nullSink } from './metrics-sink.ts';
import { Squad, withSummary, type Arrival } from './squad.ts';
import { buildTools, type CallActions } from './tools.ts';
import { TurnMetrics } from './turn-metrics.ts';

/** What the agent's tools do in the room: the session's room actions, each ending the agent's part where it should. */
export function callActions(call: CallContext, opts: CallSessionOptions): CallActions {
  return {
    hangUp: () => call.requestHangup(),
    transfer: async (destination) => {
      if (!opts.actions?.transfer) throw new Error('transfer is not available on this call');
      await opts.actions.transfer(destination);
      void call.end('transferred');
    },
    // Joined: the agent's part is over (the worker leaves the room without hanging up the legs).
    warmTransfer: async (destination) => {
      if (!opts.actions?.warmTransfer) throw new Error('warm transfer is not available on this call');
      const r = await opts.actions.warmTransfer(destination);
      if (r.ok) void call.end('transferred');
      return r;
    },
    sendDtmf: async (digits) => {
      if (!opts.actions?.sendDtmf) throw new Error('DTMF is not available on this call');
      await opts.actions.sendDtmf(digits);
    },
    addToDoNotCall: async (reason) => {
      if (!opts.api) throw new Error('no control plane to list the number with');
      await opts.api.addToDoNotCall(opts.config.call.id, reason ? { reason } : {});
    },
  };
}

/** What every agent of the call shares (the session's hooks); each agent adds its prompt, tools and knowledge. */
export type AgentBase = Omit<VapAgentOptions, 'instructions' | 'tools' | 'knowledge'>;

/** A call started on a squad: its members, the session agent of each, and each agent's own turns' latency. */
export class SquadCall {
  readonly squad: Squad;
  /** Each agent's own turns' latency, by agent id. */
  readonly agentMetrics = new Map<string, TurnMetrics>();
  #agentLlm = new Map<string, llm.LLM>();
  #call: CallContext;
  #opts: CallSessionOptions;
  #actions: CallActions;
  #base: () => AgentBase;

  /**
   * `base` is read at each hand-off (the call builds it after the squad, whose tools its first agent carries);
   * `onSwitch` makes the member's agent the call's.
   */
  constructor(call: CallContext, opts: CallSessionOptions, actions: CallActions, hooks: { base: () => AgentBase; onSwitch: (agent: VapAgent) => void }) {
    this.#call = call;
    this.#opts = opts;
    this.#actions = actions;
    this.#base = hooks.base;
    const { config } = opts;
    this.squad = new Squad(config, {
      current: () => call.agent,
      currentLlm: () => this.#agentLlm.get(this.squad.currentAgentId) ?? sideTaskLlm(opts.models),
      makeAgent: (member, arrival) => this.#memberAgent(member, arrival),
      onSwitch: (member, agent) => {
        hooks.onSwitch(agent as VapAgent);
        if (!this.agentMetrics.has(member.agent.id)) this.agentMetrics.set(member.agent.id, new TurnMetrics(nullSink, opts.labels, config.call.type));
      },
      report: (h) => opts.reporter?.handoff(h),
      logger: opts.logger,
    });
    this.agentMetrics.set(config.agent.id, new TurnMetrics(nullSink, opts.labels, config.call.type));
    const entryLlm = sideTaskLlm(opts.models);
    if (entryLlm) this.#agentLlm.set(config.agent.id, entryLlm);
  }

  /** The latency of the agent speaking now. */
  currentMetrics(): TurnMetrics | undefined {
    return this.agentMetrics.get(this.squad.currentAgentId);
  }

  /**
   * The session agent of another squad member: its prompt, tools (its own and its hand-offs), knowledge and
   * models, with the session's hooks (turn handling, voicemail, backchannels) as the entry agent has them.
   */
  #memberAgent(member: SquadMemberConfig, arrival: Arrival): VapAgent {
    const config = this.#opts.config;
    const entry = member.agent.id === config.agent.id;
    const models = entry ? {} : (this.#opts.memberModels?.(member) ?? {});
    // A realtime member writes no summary: the squad's text model does (currentLlm's fallback).
    const memberText = models.llm ? textLlm(models.llm) : null;
    if (memberText) this.#agentLlm.set(member.agent.id, memberText);
    const memberConfig: CallConfig = { ...config, tools: member.tools };
    return new VapAgent({
      ...this.#base(),
      id: member.agent.id,
      instructions: member.prompt,
      tools: [...buildTools(memberConfig, this.#actions), ...arrival.handoffTools],
      knowledge: member.knowledge,
      knowledgeAgentId: member.agent.id,
      realtime: !!member.llm.realtime,
      models,
      chatCtx: arrival.chatCtx,
      summary: arrival.summary,
      enter: (a) => this.#arrive(member, a),
    });
  }

  /**
   * The next agent takes the call: its first message is said at once (the caller hears the new voice as soon as
   * its TTS starts); a handed summary joins its context when ready. Without a first message it replies to the
   * conversation so far (after the summary, with `summary`).
   */
  async #arrive(member: SquadMemberConfig, agent: VapAgent): Promise<void> {
    const call = this.#call;
    if (call.endReason) return;
    const vars = mergeVariables(member.agent.dynamic_variables, call.config.call.variables);
    const greeting = member.agent.first_message ? interpolate(member.agent.first_message, vars).trim() : '';
    if (greeting) call.session.say(greeting);
    const pending = agent.handedSummary;
    if (pending) {
      const summary = await pending;
      const ctx = agent.chatCtx.copy();
      if (withSummary(ctx, summary)) await agent.updateChatCtx(ctx);
    }
    if (!greeting && !call.endReason) call.session.generateReply();
  }
}
