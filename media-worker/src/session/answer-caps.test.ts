// A model's answer streaming 1,000 tool calls (a tenant's server): the LLM node passes the first
// TOOL_CALLS_PER_ANSWER_MAX and the words, drops the rest, and says how many it dropped.
import { llm } from '@livekit/agents';
import { describe, expect, it } from 'vitest';
import { TOOL_CALLS_PER_ANSWER_MAX } from '../../../shared/text-caps.ts';
import { capToolCalls } from './answer-caps.ts';

const call = (i: number) => llm.FunctionCall.create({ callId: `c${i}`, name: 'lookup', args: '{}' });
const chunk = (delta: Partial<llm.ChoiceDelta>): llm.ChatChunk => ({ id: 'x', delta: { role: 'assistant', ...delta } });

describe('tool calls of one answer', () => {
  it('takes the first of 1,000 streamed tool calls up to the cap, and the words', async () => {
    const pieces: (llm.ChatChunk | string)[] = [chunk({ content: 'One moment.' })];
    for (let i = 0; i < 1000; i++) pieces.push(chunk({ toolCalls: [call(i)] }));
    pieces.push(chunk({ content: 'Done.', toolCalls: [call(1000), call(1001)] }));
    let dropped = 0;
    const out: (llm.ChatChunk | string)[] = [];
    const stream = ReadableStream.from(pieces).pipeThrough(capToolCalls<llm.ChatChunk | string>(undefined, (n) => (dropped = n)));
    for await (const p of stream) out.push(p);
    const calls = out.flatMap((p) => (typeof p === 'string' ? [] : (p.delta?.toolCalls ?? [])));
    expect(calls.map((c) => c.callId)).toEqual(Array.from({ length: TOOL_CALLS_PER_ANSWER_MAX }, (_, i) => `c${i}`));
    expect(out.flatMap((p) => (typeof p === 'string' ? [p] : p.delta?.content ? [p.delta.content] : []))).toEqual(['One moment.', 'Done.']);
    expect(dropped).toBe(1002 - TOOL_CALLS_PER_ANSWER_MAX);
  });
});
