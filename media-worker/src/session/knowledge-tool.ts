// Knowledge retrieval for a realtime (speech-to-speech) agent. The pipeline searches before each reply
// (agent.ts, onUserTurnCompleted), but a realtime model answers on its own end of turn: agents-js calls no hook
// between the caller's words and the provider's reply, and has no transcript of them to search with. So the model
// gets a built-in tool instead, and searches when a question needs the organisation's facts, as OpenAI and Google
// advise for their realtime models (docs/guides/knowledge-bases.md, "Realtime agents").
import { llm } from '@livekit/agents';
import type { KnowledgeSearchResult } from '../../../schemas/internal.ts';

export const KNOWLEDGE_TOOL_NAME = 'search_knowledge_base';
/** The longest query the model may send: a question, not a document. */
export const KNOWLEDGE_QUERY_MAX = 500;

export const KNOWLEDGE_TOOL_DESCRIPTION =
  "Search the organisation's knowledge base. Call it before answering any question about the organisation, its " +
  'services, prices, hours, policies or other facts you were not given; answer from what it returns, and say so when ' +
  'it does not cover the question.';

/** What the model reads: the chunks with where they come from, or a sentence saying there were none. */
export function knowledgeToolOutput(res: KnowledgeSearchResult, chunkText: (c: KnowledgeSearchResult['chunks'][number]) => string): string {
  if (!res.chunks.length) return 'Nothing in the knowledge base matches this question. Say you do not have that information.';
  return res.chunks.map((c, i) => `[${i + 1}] ${chunkText(c)}`).join('\n\n');
}

/**
 * The tool. `search` is the agent's own (cached, bounded, metered); a failure is a ToolError the model can say,
 * never a crash of the call.
 */
export function knowledgeTool(
  search: (query: string) => Promise<KnowledgeSearchResult | null>,
  chunkText: (c: KnowledgeSearchResult['chunks'][number]) => string,
): llm.FunctionTool<any, any, any> {
  return llm.tool({
    name: KNOWLEDGE_TOOL_NAME,
    description: KNOWLEDGE_TOOL_DESCRIPTION,
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', maxLength: KNOWLEDGE_QUERY_MAX, description: "The caller's question, in a few words" } },
      required: ['query'],
    } as any,
    execute: async ({ query }: { query?: unknown }) => {
      const q = typeof query === 'string' ? query.trim().slice(0, KNOWLEDGE_QUERY_MAX) : '';
      if (!q) throw new llm.ToolError('The search needs a question.');
      const res = await search(q);
      if (!res) throw new llm.ToolError('The knowledge base could not be searched just now. Apologise and offer to help otherwise.');
      return knowledgeToolOutput(res, chunkText);
    },
  });
}
