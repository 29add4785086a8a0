// The first message's audio, synthesized ahead: from the moment the call's config is known, while the room
// connects and the session starts, instead of behind them. The greeting then plays as soon as the caller can
// hear it. The frames are what the agent's own TTS node would make (agent.ts: the TTS's stream, a sentence
// tokenizer for a TTS that cannot stream, 20 ms frames) and are held until the session takes them.
import { tokenize, tts as agentsTts } from '@livekit/agents';
import type { AudioFrame } from '@livekit/rtc-node';
import { smallFrames } from './output-frames.ts';

export interface GreetingAudio {
  /** The frames, for `session.say(text, { audio })`; taken once. */
  readonly audio: ReadableStream<AudioFrame>;
  /** Stops the synthesis if the greeting will not be played (the call ended first). */
  cancel(): void;
}

export function synthesizeAhead(tts: agentsTts.TTS, text: string): GreetingAudio {
  const wrapped = tts.capabilities.streaming ? tts : new agentsTts.StreamAdapter(tts, new tokenize.basic.SentenceTokenizer());
  const stream = wrapped.stream();
  // As agents-js's own TTS node feeds it: the text as an input stream that then ends.
  stream.updateInputStream(ReadableStream.from([text]));
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    stream.close();
    if (wrapped !== tts) void wrapped.close();
  };
  const frames = new ReadableStream<AudioFrame>(
    {
      // Pulls the whole greeting as fast as the TTS makes it: a few seconds of audio, held in memory.
      async start(controller) {
        try {
          for await (const chunk of stream) {
            if (chunk === agentsTts.SynthesizeStream.END_OF_STREAM) break;
            controller.enqueue(chunk.frame);
          }
          controller.close();
        } catch (err) {
          if (!closed) controller.error(err);
          // Cancelled (the call ended): the frames end here, so whoever reads them is not left waiting.
          else endQuietly(controller);
        } finally {
          close();
        }
      },
      cancel: close,
    },
    { highWaterMark: Number.MAX_SAFE_INTEGER },
  );
  return { audio: frames.pipeThrough(smallFrames()), cancel: close };
}

/** Ends a stream whose reader may already have cancelled it (closing it then throws, and nothing is waiting). */
function endQuietly(controller: ReadableStreamDefaultController<AudioFrame>): void {
  try {
    controller.close();
  } catch {
    // already closed or cancelled
  }
}
