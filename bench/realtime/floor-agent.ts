// The floor of bench:realtime: a bare agents-js realtime session, with none of vap's code. An agents-js job joins the
// room it is dispatched to, starts a voice.AgentSession whose model is the openai plugin's realtime.RealtimeModel
// (pointed at the benchmark's Realtime double, server VAD, the settings vap's worker gives the plugin:
// media-worker/src/providers/realtime.ts) with agents-js's own room I/O, and greets the caller. What the caller
// hears of it is what agents-js, the plugin and WebRTC cost over the double's own part.
// Settings from the environment: FLOOR_REALTIME_URL, FLOOR_REALTIME_MODEL, FLOOR_VOICE, FLOOR_SILENCE_MS, FLOOR_GREETING.
import { type JobContext, defineAgent, voice } from '@livekit/agents';
import * as openai from '@livekit/agents-plugin-openai';

export default defineAgent({
  entry: async (ctx: JobContext) => {
    const env = process.env;
    await ctx.connect();
    const model = new openai.realtime.RealtimeModel({
      baseURL: env.FLOOR_REALTIME_URL!,
      apiKey: 'sk-floor-0123456789',
      model: env.FLOOR_REALTIME_MODEL ?? 'gpt-realtime',
      voice: env.FLOOR_VOICE ?? 'marin',
      turnDetection: { type: 'server_vad', threshold: 0.5, prefix_padding_ms: 300, silence_duration_ms: Number(env.FLOOR_SILENCE_MS ?? 500), create_response: true, interrupt_response: true },
      inputAudioTranscription: { model: 'gpt-4o-mini-transcribe' },
    });
    const session = new voice.AgentSession({ llm: model });
    await session.start({ agent: new voice.Agent({ instructions: 'Answer in one short sentence.' }), room: ctx.room });
    session.generateReply({ instructions: `Say exactly the following to the caller, word for word, and nothing else: "${env.FLOOR_GREETING ?? 'Hello.'}"` });
  },
});
