// The Gemini Live side of the Gemini stand-in (fake-gemini.ts serves it on the same port as generateContent): the
// BidiGenerateContent WebSocket at /ws/google.ai.generativelanguage.{v1beta,v1alpha}.GenerativeService.
// BidiGenerateContent, as @google/genai's `live.connect` (and so @livekit/agents-plugin-google's RealtimeModel) uses
// it (gemini-live-session.ts holds a connection's state).
//
// In: the key as `?key=` (or x-goog-api-key); `setup` first (model `models/...`, generationConfig with the AUDIO
// modality and the prebuilt voice, systemInstruction, tools' functionDeclarations, realtimeInputConfig's
// automaticActivityDetection (silenceDurationMs, or disabled) and activityHandling, input/outputAudioTranscription);
// `realtimeInput` (16 kHz `audio/pcm` audio, activityStart / activityEnd when detection is off, text),
// `clientContent` (turns, turnComplete) and `toolResponse` (functionResponses by call id).
// Out, as JSON in binary frames like the API's: `setupComplete`; `serverContent` with `inputTranscription`,
// `modelTurn` parts of `audio/pcm;rate=24000` inlineData, `outputTranscription`, `generationComplete`, `interrupted`
// (the caller spoke over the model's turn, or over audio it is still playing) and `turnComplete` with
// `usageMetadata`; `toolCall` (functionCalls with ids; the turn waits for the responses). Errors close the socket with
// the API's codes and reasons: 1007 for a bad key or an invalid message, 1008 for a model not served over
// BidiGenerateContent, 1011 for a scripted internal error; a path that is not the service's is an HTTP 404.
//
// What the caller said: speech is heard by energy on the audio's clock (10 ms windows, pcm-windows.ts); the words come
// from a scripted transcriber keyed by the turn, the reply from a scripted responder: the OpenAI Realtime double's
// script types (realtime-session.ts). Timing is the double's, not Google's: a turn ends after the setup's silence
// (500 ms by default), and the first audio follows after `firstAudioMs` (300-500 ms, seeded draws), then streams
// faster than real time.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { acceptWebSocket } from './ws-server.ts';
import { GeminiLiveConnection, type GeminiLiveOptions, type GeminiLiveScript } from './gemini-live-session.ts';

export { GeminiLiveConnection, LIVE_CLOSE } from './gemini-live-session.ts';
export type { GeminiLiveOptions, LiveResponseRecord } from './gemini-live-session.ts';

export interface GeminiLiveContext extends GeminiLiveScript {
  options: GeminiLiveOptions;
  connections: GeminiLiveConnection[];
}

const SERVICE = /^\/ws\/google\.ai\.generativelanguage\.(v1beta|v1alpha)\.GenerativeService\.BidiGenerateContent$/;

/**
 * Takes an HTTP upgrade for a Live session, or answers a 404 for another path under /ws/. False when the request is
 * not for /ws/ at all.
 */
export function acceptGeminiLive(req: IncomingMessage, socket: Duplex, head: Buffer, ctx: GeminiLiveContext): boolean {
  // The SDK joins its base URL and the path with a slash of its own: the API takes `//ws/...` as `/ws/...`.
  const url = new URL((req.url ?? '/').replace(/^\/+/, '/'), 'http://x');
  if (!url.pathname.startsWith('/ws/')) return false;
  if (!SERVICE.test(url.pathname)) {
    const body = JSON.stringify({ error: { code: 404, message: 'Requested entity was not found.', status: 'NOT_FOUND' } });
    socket.end(`HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    return true;
  }
  const key = url.searchParams.get('key') ?? (req.headers['x-goog-api-key'] as string | undefined) ?? null;
  const ws = acceptWebSocket(req, socket, head);
  ctx.connections.push(new GeminiLiveConnection(ws, req, key || null, ctx.connections.length, ctx.options, ctx));
  return true;
}
