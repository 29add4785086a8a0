// One completion of a call's model off the conversation's path (a hand-off summary, a transfer briefing, a
// phone-menu choice): bounded in time, and its stream closed whatever happens.
import type { llm } from '@livekit/agents';

/** The completion's text, or null when `timeoutMs` passed first; a failing model throws. */
export async function completeWithin(model: llm.LLM, chatCtx: llm.ChatContext, timeoutMs: number): Promise<string | null> {
  let stream: llm.LLMStream | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    stream = model.chat({ chatCtx });
    return await Promise.race([
      stream.collect().then((r) => r.text),
      new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), timeoutMs))),
    ]);
  } finally {
    clearTimeout(timer);
    stream?.close();
  }
}
