// The conversation side of the OpenAI stand-in's realtime endpoint (fake-openai.ts serves it on the same port as
// the chat and transcription APIs): a WebSocket at /v1/realtime?model=..., speaking the GA Realtime protocol as
// @livekit/agents-plugin-openai 1.9's RealtimeModel uses it (realtime-session.ts holds a connection's state).
//
// In: `session.update` (type `realtime`, 24 kHz `audio/pcm`, voice, instructions, tools, `turn_detection`:
// `server_vad`, `semantic_vad` or null), `input_audio_buffer.append` / `.commit` / `.clear`, `conversation.item.create`
// (messages and function outputs), `.delete`, `.truncate`, `response.create` and `response.cancel`.
// Out: `session.created` / `.updated`, `input_audio_buffer.speech_started` / `speech_stopped` / `committed`,
// `conversation.item.added`, input transcription deltas and `.completed`, and a response's whole life:
// `response.created`, `output_item.added`, `content_part.added`, `output_audio.delta` and
// `output_audio_transcript.delta`, function calls with their arguments, the `.done` events and `response.done` with
// usage (status `completed`, `cancelled` with `turn_detected` or `client_cancelled`, or `failed`), and `error` events
// shaped as the real ones.
//
// What the caller said: speech is heard by energy on the audio's clock (10 ms windows), as the transcription double
// and fake-deepgram.ts hear it; the words come from a scripted transcriber keyed by the turn, not recognition.
// The reply comes from a scripted responder that sees the conversation (the transcripts, the function outputs).
// Timing is the double's, not OpenAI's: server VAD ends a turn after the session's silence (500 ms by default;
// semantic VAD by eagerness), and the first audio follows the end of the turn after `firstAudioMs` (300-500 ms,
// drawn from a seeded generator), then streams faster than real time, as the real API does.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { acceptWebSocket } from './ws-server.ts';
import { RealtimeConnection, type RealtimeOptions, type RealtimeResponder, type RealtimeTranscriber } from './realtime-session.ts';

export { RealtimeConnection } from './realtime-session.ts';
export type { RealtimeOptions, RealtimeReply, RealtimeResponder, RealtimeTranscriber, RealtimeTurn, RealtimeResponseRecord } from './realtime-session.ts';

export interface RealtimeContext {
  options: RealtimeOptions;
  responder: () => RealtimeResponder;
  transcriber: () => RealtimeTranscriber;
  speaker: () => (text: string) => Int16Array | Promise<Int16Array>;
  connections: RealtimeConnection[];
}

/**
 * Takes an HTTP upgrade for a realtime conversation (/v1/realtime with no transcription intent), or refuses it as
 * the real API does (a JSON error body over HTTP). False when the request is not one.
 */
export function acceptRealtime(req: IncomingMessage, socket: Duplex, head: Buffer, ctx: RealtimeContext): boolean {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname !== '/v1/realtime' || url.searchParams.get('intent') === 'transcription') return false;
  const refuse = (status: number, reason: string, code: string, message: string) => {
    const body = JSON.stringify({ error: { type: 'invalid_request_error', code, message, param: null } });
    socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    return true;
  };
  const key = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (!key || (ctx.options.apiKeys && !ctx.options.apiKeys.includes(key))) return refuse(401, 'Unauthorized', 'invalid_api_key', 'Incorrect API key provided.');
  if (!url.searchParams.get('model')) return refuse(400, 'Bad Request', 'missing_model', "Missing required parameter: 'model'.");
  const ws = acceptWebSocket(req, socket, head);
  ctx.connections.push(new RealtimeConnection(ws, req, ctx.connections.length, ctx.options, ctx));
  return true;
}
