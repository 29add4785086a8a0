// A fixed sentence the agent says (a supervisor's say, the voicemail message, a warm transfer's brief): through the
// speaking agent's TTS, or, on a realtime (speech-to-speech) model, which has none, as a response the model is told
// to say word for word in its own voice. agents-js's say() needs a TTS and throws without one.
import type { voice } from '@livekit/agents';
import { sayExactly } from './greeting.ts';

export function sayFixed(session: voice.AgentSession, text: string, opts: { allowInterruptions: boolean; addToChatCtx?: boolean }): voice.SpeechHandle {
  if (session.currentAgent?.tts ?? session.tts) return session.say(text, opts);
  return session.generateReply({ instructions: sayExactly(text), allowInterruptions: opts.allowInterruptions });
}
