// A fixed sentence the agent says (the first message, the consent question, a supervisor's say, the voicemail message,
// a warm transfer's brief): through the speaking agent's TTS, or, on a realtime (speech-to-speech) model, which has none,
// as a response the model is told to say word for word in its own voice. agents-js's say() needs a TTS and throws without one.
import type { voice } from '@livekit/agents';

/** The instructions that make a realtime model say a fixed sentence word for word. */
export function sayExactly(text: string): string {
  return `Say exactly the following to the caller, word for word, and nothing else: "${text}"`;
}

/** The TTS the speaking agent would use: its own, else the session's (none before the session runs). */
function speakingTts(session: voice.AgentSession): unknown {
  try {
    return session.currentAgent.tts ?? session.tts;
  } catch {
    // Not running yet: agents-js's currentAgent throws.
    return session.tts;
  }
}

export function sayFixed(session: voice.AgentSession, text: string, opts: { allowInterruptions: boolean; addToChatCtx?: boolean }): voice.SpeechHandle {
  if (speakingTts(session)) return session.say(text, opts);
  return session.generateReply({ instructions: sayExactly(text), allowInterruptions: opts.allowInterruptions });
}
