// The tool calls the worker takes from one answer of the call's LLM: at most TOOL_CALLS_PER_ANSWER_MAX
// (shared/text-caps.ts), as agent tests do. agents-js runs every tool call an answer streams; a tenant's model
// server could stream thousands, each a tool run and a line of the report. Later ones are dropped as they arrive
// (the answer's bytes are bounded by modelFetch, 2 MiB). docs/security.md, "Bounded text".
import type { llm } from '@livekit/agents';
import { TOOL_CALLS_PER_ANSWER_MAX } from '../../../shared/text-caps.ts';

type Piece = llm.ChatChunk | string;

/** A transform for the LLM node's output that keeps the first `max` tool calls of the answer. */
export function capToolCalls<T extends Piece>(max = TOOL_CALLS_PER_ANSWER_MAX, onDropped?: (count: number) => void): TransformStream<T, T> {
  let taken = 0;
  let dropped = 0;
  return new TransformStream<T, T>({
    transform(piece, controller) {
      const calls = typeof piece === 'string' ? undefined : piece.delta?.toolCalls;
      if (!calls?.length) {
        controller.enqueue(piece);
        return;
      }
      const room = Math.max(0, max - taken);
      const kept = calls.slice(0, room);
      taken += kept.length;
      if (kept.length < calls.length) dropped += calls.length - kept.length;
      const chunk = piece as llm.ChatChunk;
      if (kept.length === calls.length) controller.enqueue(piece);
      else if (kept.length || chunk.delta!.content || chunk.usage) {
        controller.enqueue({ ...chunk, delta: { ...chunk.delta!, toolCalls: kept } } as T);
      }
    },
    flush() {
      if (dropped) onDropped?.(dropped);
    },
  });
}
