// The realtime model's knowledge tool: the query the model sends (the caller's words, so anyone's) is bounded before
// it is searched, an empty one is refused, and a failed search is an error the model can say, never a crash.
import { describe, expect, it } from 'vitest';
import { llm } from '@livekit/agents';
import type { KnowledgeSearchResult } from '../../../schemas/internal.ts';
import { KNOWLEDGE_QUERY_MAX, knowledgeTool } from './knowledge-tool.ts';

const chunk = { content: 'We open at nine.', score: 1, source_id: 'src_1', title: 'Hours' };
const text = (c: KnowledgeSearchResult['chunks'][number]) => `(${c.title}) ${c.content}`;
const run = (tool: ReturnType<typeof knowledgeTool>, args: unknown) => (tool.execute as (a: unknown, o: unknown) => Promise<string>)(args, {});

describe('knowledgeTool', () => {
  it('searches at most KNOWLEDGE_QUERY_MAX characters of what the model sends, and returns the chunks with their source', async () => {
    const queries: string[] = [];
    const tool = knowledgeTool(async (q) => {
      queries.push(q);
      return { chunks: [chunk] };
    }, text);
    expect(await run(tool, { query: `  ${'x'.repeat(10_000)}  ` })).toBe('[1] (Hours) We open at nine.');
    expect(queries[0]).toHaveLength(KNOWLEDGE_QUERY_MAX);
  });

  it('refuses an empty or missing query without searching, and turns a failed search into an error the model can say', async () => {
    let searched = 0;
    const failing = knowledgeTool(async () => {
      searched++;
      return null;
    }, text);
    await expect(run(failing, { query: '   ' })).rejects.toBeInstanceOf(llm.ToolError);
    await expect(run(failing, {})).rejects.toBeInstanceOf(llm.ToolError);
    expect(searched).toBe(0);
    await expect(run(failing, { query: 'opening hours' })).rejects.toBeInstanceOf(llm.ToolError);
    expect(searched).toBe(1);
    const empty = knowledgeTool(async () => ({ chunks: [] }), text);
    expect(await run(empty, { query: 'parking' })).toMatch(/^Nothing in the knowledge base matches/);
  });
});
