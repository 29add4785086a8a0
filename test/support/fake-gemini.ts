// A local stand-in for the Gemini API's generateContent (POST /v1beta/models/{model}:generateContent) speaking
// its wire protocol: `x-goog-api-key` (or `?key=`), `systemInstruction`, `contents[].parts[].text`,
// `generationConfig`; answers `candidates[0].content.parts[].text` and `usageMetadata`, errors as
// {error: {code, message, status}}. The Live API's BidiGenerateContent WebSocket (Gemini Live, the google plugin's
// RealtimeModel) is on the same port (fake-gemini-live.ts), so one GEMINI_BASE_URL serves both.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { acceptGeminiLive, type GeminiLiveConnection, type GeminiLiveOptions } from './fake-gemini-live.ts';
import type { RealtimeResponder, RealtimeTranscriber } from './realtime-session.ts';

export type { GeminiLiveConnection } from './fake-gemini-live.ts';
export type Speaker = (text: string) => Int16Array | Promise<Int16Array>;

export interface GeminiRequest {
  model: string;
  apiKey: string | null;
  body: {
    systemInstruction?: { parts: { text: string }[] };
    contents: { role?: string; parts: { text?: string }[] }[];
    generationConfig?: Record<string, unknown>;
  };
}

export interface FakeGemini {
  /** Base URL with the API version, e.g. http://127.0.0.1:1234/v1beta */
  url: string;
  requests: GeminiRequest[];
  setResponder(r: (req: GeminiRequest) => { text: string } | { error: { code: number; status: string; message: string } }): void;
  /** Live sessions, in arrival order. */
  live: GeminiLiveConnection[];
  /** What a Live session's model says in each turn (default: "Okay."). */
  setLiveResponder(r: RealtimeResponder): void;
  /** What a Live session hears in each turn of the caller's (default: "Hello."). */
  setLiveTranscriber(t: RealtimeTranscriber): void;
  /** The model's voice: 24 kHz PCM for a text (default: a quiet 440 Hz tone, 60 ms a word). */
  setSpeaker(s: Speaker): void;
  close(): Promise<void>;
}

export async function startFakeGemini(opts: { live?: GeminiLiveOptions; liveResponder?: RealtimeResponder; liveTranscriber?: RealtimeTranscriber; speaker?: Speaker } = {}): Promise<FakeGemini> {
  let liveResponder: RealtimeResponder = opts.liveResponder ?? (() => ({ text: 'Okay.' }));
  let liveTranscriber: RealtimeTranscriber = opts.liveTranscriber ?? (() => 'Hello.');
  let speaker: Speaker =
    opts.speaker ??
    ((text) => {
      const n = Math.max(1, text.split(/\s+/).length) * 0.06 * 24000;
      return Int16Array.from({ length: n }, (_, i) => Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / 24000)));
    });
  const live: GeminiLiveConnection[] = [];
  const requests: GeminiRequest[] = [];
  let respond: Parameters<FakeGemini['setResponder']>[0] = () => ({ text: 'Hello.' });
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://localhost');
    const m = /^\/v1beta\/models\/([^/:]+):generateContent$/.exec(url.pathname);
    if (req.method !== 'POST' || !m) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 404, message: 'Not found', status: 'NOT_FOUND' } }));
      return;
    }
    const apiKey = (req.headers['x-goog-api-key'] as string | undefined) ?? url.searchParams.get('key');
    if (!apiKey) {
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 403, message: 'Method doesn\'t allow unregistered callers', status: 'PERMISSION_DENIED' } }));
      return;
    }
    const request: GeminiRequest = { model: decodeURIComponent(m[1]!), apiKey, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
    requests.push(request);
    const reply = respond(request);
    if ('error' in reply) {
      res.writeHead(reply.error.code, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        candidates: [{ content: { role: 'model', parts: [{ text: reply.text }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 20, candidatesTokenCount: reply.text.split(/\s+/).length, totalTokenCount: 0 },
        modelVersion: request.model,
      }),
    );
  });
  server.on('upgrade', (req, socket, head) => {
    const ctx = { options: opts.live ?? {}, responder: () => liveResponder, transcriber: () => liveTranscriber, speaker: () => speaker, connections: live };
    if (!acceptGeminiLive(req, socket, head, ctx)) socket.end('HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{"error":{"code":404,"status":"NOT_FOUND"}}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1beta`,
    requests,
    setResponder(r) {
      respond = r;
    },
    live,
    setLiveResponder(r) {
      liveResponder = r;
    },
    setLiveTranscriber(t) {
      liveTranscriber = t;
    },
    setSpeaker(sp) {
      speaker = sp;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const c of live) c.terminate();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
