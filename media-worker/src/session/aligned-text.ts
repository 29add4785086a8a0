// The agent's transcript from a TTS that takes whole texts. agents-js's StreamAdapter sends each clause or
// sentence to the engine on its own and hands the transcript the same pieces, as timed strings without the
// space between them: the call record read "Sure,I can help." and "...on weekdays.On Saturdays...".
import { voice } from '@livekit/agents';

type Chunk = string | voice.TimedString;

/** A clause or sentence ended, and the next piece starts a word: the space that was between them. */
const needsSpace = (prev: string, next: string) => /[,;:.?!…—–]$/.test(prev) && /^[\p{L}\p{N}"'(]/u.test(next);

/** Restores the space between timed pieces of the agent's text (plain text deltas carry their own). */
export function spaceTimedPieces(): TransformStream<Chunk, Chunk> {
  let prev = '';
  return new TransformStream<Chunk, Chunk>({
    transform(chunk, controller) {
      if (!voice.isTimedString(chunk)) {
        prev = chunk;
        controller.enqueue(chunk);
        return;
      }
      const text = prev && needsSpace(prev, chunk.text) ? ` ${chunk.text}` : chunk.text;
      if (chunk.text) prev = chunk.text;
      controller.enqueue(text === chunk.text ? chunk : { ...chunk, text });
    },
  });
}
