import { voice } from '@livekit/agents';
import { describe, expect, it } from 'vitest';
import { spaceTimedPieces } from './aligned-text.ts';

type Chunk = string | voice.TimedString;

async function through(chunks: Chunk[]): Promise<Chunk[]> {
  const out: Chunk[] = [];
  const stream = new ReadableStream<Chunk>({
    start(c) {
      for (const x of chunks) c.enqueue(x);
      c.close();
    },
  }).pipeThrough(spaceTimedPieces());
  for await (const x of stream) out.push(x);
  return out;
}

const timed = (text: string, startTime: number) => voice.createTimedString({ text, startTime });
const text = (chunks: Chunk[]) => chunks.map((c) => (typeof c === 'string' ? c : c.text)).join('');

describe("the agent's aligned transcript", () => {
  it('puts back the space between the clauses and sentences a whole-text TTS was given', async () => {
    const out = await through([timed('Sure,', 0), timed('one moment.', 0.4), timed('We open at nine.', 1.2)]);
    expect(text(out)).toBe('Sure, one moment. We open at nine.');
    // Still timed strings, with their times.
    expect(out.every((c) => voice.isTimedString(c))).toBe(true);
    expect((out[1] as voice.TimedString).startTime).toBe(0.4);
  });

  it('adds nothing inside words, where a space already is, or to plain text deltas', async () => {
    expect(text(await through([timed('Hel', 0), timed('lo there ', 0.1), timed('friend.', 0.3)]))).toBe('Hello there friend.');
    expect(text(await through([timed('Sure, ', 0), timed('one moment.', 0.4)]))).toBe('Sure, one moment.');
    expect(text(await through(['Sure,', 'one', ' moment.']))).toBe('Sure,one moment.');
  });
});
