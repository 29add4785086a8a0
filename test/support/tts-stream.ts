// Reading a text-to-speech stream of @livekit/agents to its end, as the speech engine tests do.
import type { tts } from '@livekit/agents';

export type Audio = tts.SynthesizedAudio;

/** The audio frames of `stream`, and how many end markers (symbols) it gave. */
export async function collect(stream: AsyncIterable<Audio | symbol>): Promise<{ audio: Audio[]; ends: number }> {
  const audio: Audio[] = [];
  let ends = 0;
  for await (const item of stream) {
    if (typeof item === 'symbol') ends++;
    else audio.push(item);
  }
  return { audio, ends };
}
