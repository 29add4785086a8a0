// The agent of a call: instructions and tools, knowledge retrieval before each LLM turn, and a hook that
// lets the call decide a turn must not get a reply (the callee's first words on an outbound call, or a
// voicemail greeting).
import { llm, voice } from '@livekit/agents';
import type { KnowledgeConfig } from '../../../schemas/internal.ts';
import type { InternalApiClient } from '../../../shared/internal-api.ts';
import type { Logger } from '../../../shared/logger.ts';

export interface VapAgentOptions {
  instructions: string;
  tools: llm.FunctionTool<any, any, any>[];
  knowledge: KnowledgeConfig;
  callId: string;
  api: InternalApiClient | null;
  logger: Logger;
  /** Called with each completed user turn; returning false skips the LLM reply for that turn. */
  beforeReply?: (text: string) => boolean | Promise<boolean>;
  topK?: number;
  knowledgeTimeoutMs?: number;
}

export const KNOWLEDGE_HEADER = 'Relevant knowledge base excerpts (use them to answer; say so if they do not cover the question):';

/** The stuffed knowledge base goes at the end of the system prompt, once. */
export function withStuffedKnowledge(prompt: string, knowledge: KnowledgeConfig): string {
  if (knowledge.mode !== 'stuff' || !knowledge.stuffed_context?.trim()) return prompt;
  return `${prompt}\n\n# Knowledge\n${KNOWLEDGE_HEADER}\n${knowledge.stuffed_context.trim()}`;
}

export class VapAgent extends voice.Agent {
  #opts: VapAgentOptions;
  /** Chunks injected by the last retrieval (tests and logs). */
  lastKnowledge: string[] = [];

  constructor(opts: VapAgentOptions) {
    super({ instructions: withStuffedKnowledge(opts.instructions, opts.knowledge), tools: opts.tools });
    this.#opts = opts;
  }

  override async onUserTurnCompleted(turnCtx: llm.ChatContext, newMessage: llm.ChatMessage): Promise<void> {
    const text = newMessage.textContent ?? '';
    if (this.#opts.beforeReply && !(await this.#opts.beforeReply(text))) {
      throw new voice.StopResponse();
    }
    const { knowledge, api } = this.#opts;
    if (knowledge.mode !== 'retrieve' || !knowledge.knowledge_base_ids.length || !api || !text.trim()) return;
    try {
      const res = await api.searchKnowledge(
        this.#opts.callId,
        { query: text, top_k: this.#opts.topK ?? 4 },
        { timeoutMs: this.#opts.knowledgeTimeoutMs ?? 1500 },
      );
      this.lastKnowledge = res.chunks.map((c) => c.content);
      if (!res.chunks.length) return;
      // Added to this turn's context only: the next turn retrieves afresh, so the history stays small.
      turnCtx.addMessage({ role: 'system', content: `${KNOWLEDGE_HEADER}\n${res.chunks.map((c, i) => `[${i + 1}] ${c.content}`).join('\n\n')}` });
    } catch (err) {
      // A slow or failing search must not hold up or break the reply.
      this.#opts.logger.warn({ err: (err as Error).message, call_id: this.#opts.callId }, 'knowledge search failed');
    }
  }
}
